#pragma once
// `ibt crossover --atlas`: the atlas of topologies/studies/atlas.hpp on the command line --
// one block per cell on stdout (within 120 columns; --wide: one Markdown row per cell),
// progress on stderr, a table "atlas" in a crossover run.
#include <string>
#include <vector>

namespace ibt::suites {

struct AtlasFlags {
  std::string file;                     // "" = topologies/validation/atlas.json
  std::vector<std::string> models;      // empty = all
  std::vector<std::string> topologies;  // empty = all
  double threshold = 0.05;
  int jobs = 1;
  std::string out;    // HDF5 file, "" = none
  bool wide = false;  // --wide: the Markdown table (every band and full split) and unwrapped notes
};

int run_atlas(const AtlasFlags& flags, int argc, char** argv);
// "a,b,c" -> {a, b, c} (empty words dropped), for --atlas-models / --atlas-topologies.
std::vector<std::string> atlas_list(const std::string& s);

}  // namespace ibt::suites
