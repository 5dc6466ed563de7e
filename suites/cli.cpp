#include "suites/cli.hpp"

#include "collectives/errors.hpp"

namespace ibt::suites {

std::string joined_command_line(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    // argv[0] is "ibt <suite>" as main() set it: not a single word to quote.
    const bool quote = i > 0 && (arg.find_first_of(" \t\"'") != std::string::npos || arg.empty());
    out += (i ? " " : "") + (quote ? "'" + arg + "'" : arg);
  }
  return out;
}

void require_positive(long value, const char* option) {
  if (value <= 0) throw UsageError(std::string(option) + " must be positive (got " + std::to_string(value) + ")");
}

}  // namespace ibt::suites
