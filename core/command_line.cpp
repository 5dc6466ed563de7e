#include "core/command_line.hpp"

#include <cstdio>

namespace ibt {

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

void note_old_spelling(const char* old_name, const char* name) {
  std::fprintf(stderr, "# note: --%s is now --%s; the old spelling goes in a later release\n", old_name, name);
}

}  // namespace ibt
