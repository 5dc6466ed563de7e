#include "cli/old_short_options.hpp"

#include <cstring>
#include <set>

namespace ibt::suites {
namespace {

struct OldShort {
  const char* letter;     // "-o"
  const char* long_name;  // "--out"
  std::set<std::string> commands;
};

const std::vector<OldShort>& old_shorts() {
  static const std::vector<OldShort> list = {
      {"-o",
       "--out",
       {"p2p-matrix", "accept", "train", "sweep", "project", "crossover", "scaling", "calibrate", "checkpoint-bench",
        "report", "export"}},
      {"-r", "--run", {"show", "export"}},
      {"-t", "--table", {"show", "export"}},
  };
  return list;
}

// What the letter means where nccl-tests' meaning applies, for the note.
const char* nccl_tests_meaning(const std::string& letter) {
  if (letter == "-o") return "--reduce-op";
  if (letter == "-r") return "--root";
  return "--threads";
}

}  // namespace

std::vector<std::string> rewrite_old_short_options(const std::string& command, const std::vector<std::string>& args,
                                                   std::vector<std::string>& notes) {
  std::vector<std::string> out;
  bool after_dashes = false;
  for (const auto& word : args) {
    if (word == "--") after_dashes = true;
    const OldShort* hit = nullptr;
    if (!after_dashes && word.size() >= 2 && word[0] == '-' && word[1] != '-')
      for (const auto& o : old_shorts())
        if (o.commands.count(command) && word.compare(0, 2, o.letter) == 0) hit = &o;
    if (!hit) {
      out.push_back(word);
      continue;
    }
    out.push_back(word.size() == 2 ? std::string(hit->long_name) : std::string(hit->long_name) + "=" + word.substr(2));
    notes.push_back(std::string("# note: ") + hit->letter + " is now " + hit->long_name + " (" + hit->letter + " is " +
                    nccl_tests_meaning(hit->letter) +
                    " in ibt collectives, as in nccl-tests); the old meaning goes in a later release");
  }
  return out;
}

}  // namespace ibt::suites
