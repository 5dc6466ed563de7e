#include "reports/store/store_undo.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/errors.hpp"

namespace ibt::store {

std::string undo_path(const std::string& path) {
  const std::filesystem::path p(path);
  return (p.parent_path() / ("." + p.filename().string() + ".ibt-undo")).string();
}

void require_free_space(const std::string& path, std::uint64_t existing_bytes) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  struct statvfs fs {};
  if (statvfs(dir.c_str(), &fs) != 0) return;  // cannot tell: the writes will say
  const std::uint64_t free_bytes = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
  const std::uint64_t needed = existing_bytes + kFreeSpaceMargin;
  if (free_bytes < needed)
    throw UsageError(
        path + ": disk full: its file system has " + std::to_string(free_bytes) +
        " bytes free; an append needs at least " + std::to_string(needed) + " (" +
        (existing_bytes ? "an undo copy of the file's " + std::to_string(existing_bytes) + " bytes plus " : "") + "a " +
        std::to_string(kFreeSpaceMargin >> 20) + " MiB margin for the run); free space or choose another --out");
}

bool copy_file(const std::string& src, const std::string& dst, std::string* error) {
  const int in = open(src.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    if (error) *error = src + ": " + std::strerror(errno);
    return false;
  }
  const int out = open(dst.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    if (error) *error = dst + ": " + std::strerror(errno);
    close(in);
    return false;
  }
  bool ok = ioctl(out, FICLONE, in) == 0;  // reflink: shares the blocks
  if (!ok) {
    ok = true;
    char buffer[1 << 16];
    for (;;) {
      const ssize_t got = read(in, buffer, sizeof buffer);
      if (got == 0) break;
      if (got < 0) {
        if (errno == EINTR) continue;
        ok = false;
        break;
      }
      for (ssize_t done = 0; done < got;) {
        const ssize_t put = write(out, buffer + done, static_cast<std::size_t>(got - done));
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) {
          ok = false;
          break;
        }
        done += put;
      }
      if (!ok) break;
    }
  }
  const int saved = errno;
  if (close(out) != 0) ok = false;
  close(in);
  if (!ok) {
    if (error) *error = dst + ": " + describe_write_errno("", saved ? saved : errno);
    unlink(dst.c_str());
  }
  return ok;
}

void take_undo_copy(const std::string& path) {
  std::string error;
  if (!copy_file(path, undo_path(path), &error))
    throw UsageError(path + ": cannot make the undo copy that protects its earlier runs during the append (" + error +
                     "); nothing was written");
}

bool restore_undo_copy(const std::string& path) { return std::rename(undo_path(path).c_str(), path.c_str()) == 0; }

void discard_undo_copy(const std::string& path) { unlink(undo_path(path).c_str()); }

std::string describe_write_errno(const std::string& hdf5_detail, int fallback_errno) {
  int code = fallback_errno;
  const auto at = hdf5_detail.find("errno = ");
  if (at != std::string::npos) code = std::atoi(hdf5_detail.c_str() + at + 8);
  switch (code) {
    case ENOSPC: return "disk full (ENOSPC: no space left on device)";
    case EDQUOT: return "disk full for this user (EDQUOT: disk quota exceeded)";
    case EFBIG: return "file too large (EFBIG: a file-size limit was reached, e.g. ulimit -f)";
    case EIO: return "I/O error (EIO)";
    case EROFS: return "read-only file system (EROFS)";
    case 0: return "";
    default: return std::string("errno ") + std::to_string(code) + " (" + std::strerror(code) + ")";
  }
}

}  // namespace ibt::store
