#include "core/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/errors.hpp"
#include "core/output_path.hpp"

namespace ibt {

namespace {

// Room a whole file needs on its file system before the work: the largest such file (a
// JUnit report, a topology, an export of a large table) is a few MiB.
constexpr std::uint64_t kWholeFileFreeBytes = 16ull << 20;

std::string cause(int err) {
  switch (err) {
    case ENOSPC: return "disk full (ENOSPC)";
    case EDQUOT: return "disk quota exceeded (EDQUOT)";
    case EFBIG: return "file too large (EFBIG: a file-size limit, ulimit -f)";
    case EIO: return "I/O error (EIO)";
    default: return std::strerror(err);
  }
}

std::string temporary_beside(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return folder + "." + name + ".ibt-tmp-" + std::to_string(getpid());
}

// The canonical path and identity of PATH; false when it does not exist.
bool identify(const std::string& path, std::string& real, struct stat& st) {
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (!resolved) return false;
  real = resolved;
  std::free(resolved);
  return ::stat(real.c_str(), &st) == 0;
}

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// Whether the folder `dir` is `real` or one of the folders above it.
bool inside(const std::string& real, const struct stat& dir) {
  for (std::string at = real; !at.empty();) {
    struct stat st {};
    if (::stat(at.c_str(), &st) == 0 && same_file(st, dir)) return true;
    if (at == "/") break;
    const std::size_t slash = at.find_last_of('/');
    at = slash == 0 ? "/" : at.substr(0, slash);
  }
  return false;
}

}  // namespace

void refuse_output_over_inputs(const std::string& path, const std::string& flag, const std::vector<InputFile>& inputs,
                               bool folder) {
  std::string out_real;
  struct stat out {};
  if (path.empty() || !identify(path, out_real, out)) return;
  for (const InputFile& input : inputs) {
    std::string in_real;
    struct stat in {};
    if (input.path.empty() || !identify(input.path, in_real, in)) continue;
    if (same_file(out, in))
      throw UsageError(flag + " " + path + ": is " + input.what + " " + input.path +
                       ", one of this command's inputs; a command never writes over what it reads (--force or not): " +
                       "choose another " + flag);
    if (folder && S_ISDIR(out.st_mode) && inside(in_real, out))
      throw UsageError(flag + " " + path + ": holds " + input.what + " " + input.path +
                       ", one of this command's inputs, and the files written into it could replace it (--force or " +
                       "not): choose another " + flag + " folder");
  }
}

void refuse_existing_output(const std::string& path, const std::string& flag, bool force) {
  if (path.empty()) throw UsageError(flag + " is empty: give the file to write");
  struct stat st {};
  const bool exists = stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode))
    throw UsageError(flag + " " + path + ": is a folder; give a file name (a file inside it, or beside it)");
  if (exists && !S_ISREG(st.st_mode))
    throw UsageError(flag + " " + path + ": is not a regular file (a device, FIFO or socket is never written)");
  if (exists && !force)
    throw UsageError(flag + " " + path +
                     ": the file exists and is left as it is; choose another name, or add "
                     "--force to replace it");
  // The file is written as a temporary beside PATH (write_output_file): that must be
  // possible now, not found impossible after the work.
  const std::string why = why_not_creatable(path, flag, kWholeFileFreeBytes);
  if (!why.empty()) throw UsageError(flag + " " + path + ": " + why);
}

void write_output_file(const std::string& path, const std::string& text, const std::string& flag) {
  const std::string tmp = temporary_beside(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int err = errno;
    throw StorageError(flag + " " + path + ": cannot create " + tmp + ": " + cause(err));
  }
  int err = 0;
  for (std::size_t done = 0; done < text.size() && !err;) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno != EINTR) err = errno;
    if (n > 0) done += static_cast<std::size_t>(n);
  }
  if (!err && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && !err) err = errno;
  if (!err && std::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err) {
    ::unlink(tmp.c_str());
    throw StorageError(flag + " " + path + ": not written: " + cause(err) + "; a file already there is unchanged");
  }
}

}  // namespace ibt
