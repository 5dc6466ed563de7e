#include "core/input_file.hpp"

#include <sys/stat.h>

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

}  // namespace ibt
