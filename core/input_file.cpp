#include "core/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/errors.hpp"

namespace ibt {

void require_input_file(const std::string& path, const std::string& what, std::uint64_t max_bytes) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return;  // missing: the caller says what it looked for
  if (S_ISDIR(st.st_mode)) throw UsageError(what + " '" + path + "' is a directory, not a file");
  if (!S_ISREG(st.st_mode))
    throw UsageError(what + " '" + path + "' is not a regular file (a device, FIFO or socket is never read as input)");
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    throw UsageError(what + " '" + path + "' is " + std::to_string(st.st_size) + " bytes, more than the " +
                     std::to_string(max_bytes) + " an input file may have");
}

std::string read_input_file(const std::string& path, const std::string& what, std::uint64_t max_bytes) {
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw UsageError(what + " '" + path + "' cannot be read: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0) throw UsageError(what + " '" + path + "' cannot be read: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw UsageError(what + " '" + path + "' is a directory, not a file");
  if (!S_ISREG(st.st_mode))
    throw UsageError(what + " '" + path + "' is not a regular file (a device, FIFO or socket is never read as input)");
  const auto too_large = [&](std::uint64_t bytes) {
    return UsageError(what + " '" + path + "' is " + std::to_string(bytes) + " bytes, more than the " +
                      std::to_string(max_bytes) + " it may have");
  };
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) throw too_large(static_cast<std::uint64_t>(st.st_size));
  std::string text;
  text.reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t got = read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw UsageError(what + " '" + path + "' cannot be read: " + std::strerror(errno));
    if (got == 0) break;
    text.append(buffer, static_cast<size_t>(got));
    if (text.size() > max_bytes) throw too_large(text.size());
  }
  return text;
}

}  // namespace ibt
