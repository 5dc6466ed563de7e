#include "core/output_path.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace ibt {
namespace {

std::string folder_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string user_text() {
  const uid_t uid = geteuid();
  const struct passwd* pw = getpwuid(uid);
  return std::string("user ") + (pw ? pw->pw_name : "?") + " (uid " + std::to_string(uid) + ")";
}

// Creates and removes a file in `folder`; the errno of the creation, 0 when it worked.
// The name is unique per process and call, so ranks of one job on one shared folder (and
// a file the user has there) never meet it.
int probe_create(const std::string& folder) {
  static std::atomic<unsigned> calls{0};
  char host[64] = {};
  gethostname(host, sizeof host - 1);
  const std::string probe =
      folder + "/.ibt-probe-" + host + "-" + std::to_string(getpid()) + "-" + std::to_string(calls.fetch_add(1));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  ::close(fd);
  ::unlink(probe.c_str());
  return 0;
}

}  // namespace

std::string why_not_creatable(const std::string& path, const std::string& flag, std::uint64_t min_free_bytes) {
  const std::string folder = folder_of(path);
  const std::string quoted = "folder '" + folder + "'";
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) return quoted + " does not exist: create it (mkdir -p " + folder + ") or choose another " + flag;
    if (err == ENOTDIR) return "a part of " + quoted + " is a file, not a folder: choose another " + flag;
    if (err == EACCES)
      return "permission denied: " + user_text() + " cannot reach " + quoted + " (a folder above it is closed)" +
             ": choose another " + flag;
    return quoted + ": " + std::strerror(err) + ": choose another " + flag;
  }
  if (!S_ISDIR(st.st_mode)) return "'" + folder + "' is not a folder: choose another " + flag;
  switch (const int err = probe_create(folder)) {
    case 0: break;
    case EACCES:
    case EPERM:
      return "permission denied: " + user_text() + " cannot create files in " + quoted +
             ": choose a folder you can write to (or have its owner open it: ls -ld " + folder + ")";
    case EROFS: return quoted + " is on a read-only file system: choose another " + flag + " on a writable one";
    case ENOSPC: return "disk full (ENOSPC): " + quoted + " takes no new file: free space or choose another " + flag;
    case EDQUOT: return "disk quota exceeded (EDQUOT) in " + quoted + ": free space or choose another " + flag;
    case ENOENT: return quoted + " takes no new files (a virtual file system such as /proc): choose another " + flag;
    default: return "cannot create a file in " + quoted + " (" + std::strerror(err) + "): choose another " + flag;
  }
  struct statvfs fs {};
  if (min_free_bytes == 0 || ::statvfs(folder.c_str(), &fs) != 0) return "";
  const std::uint64_t free_bytes = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
  if (free_bytes >= min_free_bytes) return "";
  return "disk full: the file system of " + quoted + " has " + std::to_string(free_bytes) + " bytes free, " + flag +
         " needs at least " + std::to_string(min_free_bytes) + ": free space or choose another " + flag;
}

}  // namespace ibt
