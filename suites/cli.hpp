#pragma once
// Small helpers shared by the suites' command lines.
#include <string>
#include <vector>

namespace ibt::suites {

// The whole command line as typed, for provenance: "ibt collectives -b 8 -e 1M".
std::string joined_command_line(int argc, char** argv);

// Throws UsageError for an option given more than once or a value out of range, with
// the option's name in the message.
void require_positive(long value, const char* option);

}  // namespace ibt::suites
