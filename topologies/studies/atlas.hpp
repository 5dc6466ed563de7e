#pragma once
// `ibt crossover --atlas`: is pipeline parallelism still needed, model by system?
//
// The atlas is a list of cells (topologies/validation/atlas.json): a catalog model on a
// catalog system at a scale and global batch, each taken from a published run where one
// exists, else a stated choice, and the published practice for that pair ("pp", "no-pp"
// or "none"), each with its source. Every cell is ONE call of crossover() (crossover.hpp)
// on the system's own fabric (its domain size and scale-out bandwidth): the best split
// with PP and the best without (FSDP/HSDP/CP/TP/EP count as no PP), the gain, the
// verdict with its uncertainty. The atlas adds two things a single crossover does not:
//   agreement: the verdict against practice --
//     "agrees"     PP needed & practice pp, or PP not needed & practice no-pp;
//     "disagrees"  PP needed & practice no-pp, or PP not needed & practice pp;
//     "undecided"  the verdict is "within uncertainty" (it cannot contradict anything);
//     "no practice" practice none;
//     "nothing fits" no split with or without PP fits in memory (so says the verdict);
//   deciding term: the part of the step that separates the two bests. Both bests run the
//     same global batch on the same devices, so their step times differ by the sum of
//     their parts' differences (compute, exposed TP/DP/expert-DP/PP/EP/CP, bubble; the
//     first stage's breakdown, which adds up to the step time); the term is the part
//     that moved most in the winner's favour. When no PP = 1 split fits, it is memory.
#include <functional>
#include <string>
#include <vector>

#include "topologies/studies/crossover.hpp"

namespace ibt::topo {

struct AtlasEntry {
  std::string model, topology, framework;
  int devices = 0;
  long long global_batch = 0;  // sequences
  std::string scale;           // "published" or "chosen"
  std::string scale_source;    // key into AtlasSpec::sources
  std::string practice;        // "pp", "no-pp" or "none"
  std::string practice_source;
  std::string note;
};

struct AtlasSpec {
  std::string origin;                                        // file it was read from
  std::vector<std::pair<std::string, std::string>> sources;  // id -> reference
  std::vector<AtlasEntry> cells;
  const std::string* source(const std::string& id) const;
};

// atlas.json in the validation folder: $IBT_VALIDATION_DIR, else an installed share/ibt, else the
// source tree's topologies/validation (core/data_dirs.hpp).
std::string default_atlas_path();
// Parses and checks a spec; every error is a UsageError naming the file and the cell
// (unknown keys, missing fields, a source not listed, scale/practice outside their words,
// devices or batch < 1). Models and topologies are checked when a cell is run.
AtlasSpec parse_atlas(const std::string& json_text, const std::string& origin);
AtlasSpec load_atlas(const std::string& path);
// The cells whose model is in `models` and topology in `topologies` (empty = all), in
// the file's order; a name in a filter that no cell has is a UsageError.
std::vector<AtlasEntry> select_cells(const AtlasSpec& spec, const std::vector<std::string>& models,
                                     const std::vector<std::string>& topologies);

struct AtlasCell {
  AtlasEntry entry;
  CrossoverCell cell;         // the crossover at the system's own fabric
  std::string agreement;      // agrees / disagrees / undecided / no practice
  std::string deciding_term;  // e.g. "exposed dp", "bubble", "memory"
  std::string why;            // one sentence with the term's seconds on each side
};

// The rules above, on a computed crossover cell (pure, for tests and reports).
std::string atlas_agreement(PpVerdict verdict, const std::string& practice);
std::string atlas_agreement(const std::string& verdict, const std::string& practice);  // verdict_text's words
void explain(AtlasCell& c);

// Runs one cell: loads its model and topology, applies its framework profile, and
// calls crossover() once with the topology's domain size and scale-out Gb/s (a system
// without a scale-out network must hold the job in one domain).
AtlasCell run_atlas_cell(const AtlasEntry& e, double threshold, const CrossoverRun& run = {});

}  // namespace ibt::topo
