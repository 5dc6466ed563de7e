#pragma once
// The command line as provenance and the note an old option spelling prints: what a
// library below the command layer (the training run records its command line, and accepts
// an old spelling) needs from cli/cli.hpp without reaching up into it.
#include <string>

namespace ibt {

// The whole command line as typed, for provenance: "ibt collectives -b 8 -e 1M".
std::string joined_command_line(int argc, char** argv);

// Prints on stderr that --old_name is now --name (the old spelling still works for one release).
void note_old_spelling(const char* old_name, const char* name);

}  // namespace ibt
