#pragma once
// One meaning per short option across commands. `ibt collectives` takes nccl-tests' short
// flags with nccl-tests' meanings (-o reduce op, -r root, -t threads, -g GPUs), so no other
// command gives those letters another meaning. Before, most commands took -o for --out and
// show/export -r for --run and -t for --table; those old meanings are kept for one release:
// the word is rewritten to the long option before parsing, with a note on stderr.
#include <string>
#include <vector>

namespace ibt::suites {

// `args` without the program and command words. Returns them with every old short option
// ("-o F", "-oF") of `command` spelled long ("--out F", "--out=F"); words after "--" are
// left alone. `notes` gets one line per rewritten option.
std::vector<std::string> rewrite_old_short_options(const std::string& command, const std::vector<std::string>& args,
                                                   std::vector<std::string>& notes);

}  // namespace ibt::suites
