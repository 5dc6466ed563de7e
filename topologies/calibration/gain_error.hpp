#pragma once
// The uncertainty of a PP verdict: how far projected PP gains were from measured ones.
// `ibt crossover` calls PP needed or not from gain = best MFU with PP / best without - 1;
// its error is the error of that gain, not of an MFU. It is measured on pairs of splits run
// on the same system: the 122 vTrain groups (one model, GPU count and global batch on DGX
// A100) measured both with and without PP (pp_pairs.hpp). Per kind of topology -- the
// catalog's figures ("catalog") or one fitted to measurements ("calibrated": it carries
// collective fits) -- the file topologies/validation/pp-gain-error.json holds the p80 of
// |projected gain - measured gain| over those groups, the validation topology it came from
// and the command that wrote it (scripts/validate_vtrain.sh BUILD --pp-pairs
// --write-gain-error). A verdict then says "gain +X% +/- Y points (80% of measured pairs)".
#include <string>

#include "topologies/calibration/pp_pairs.hpp"
#include "topologies/hardware/topology.hpp"

namespace ibt::topo {

struct GainError {
  bool known = false;     // the file is there and holds this kind
  std::string kind;       // "catalog" or "calibrated"
  double points = 0;      // p80 |gain error| as a fraction (0.166 = 16.6 points)
  double coverage = 0.8;  // the share of measured pairs within +-points
  int groups = 0;         // measured pairs it rests on
  std::string topology;   // the validation topology ("dgx-a100")
  std::string source;     // the measurements
  std::string command;    // what wrote it
};

// "calibrated" when the topology carries collective fits (ibt calibrate, the vTrain fit),
// else "catalog".
std::string gain_error_kind(const Topology& t);

// The gain error of t's kind, from pp-gain-error.json in the validation folder
// ($IBT_VALIDATION_DIR, an installed share/ibt, else the source tree: core/data_dirs.hpp).
// A missing file is known == false; a malformed one is a RuntimeError naming it.
GainError gain_error_of(const Topology& t);

// "gain +12.0% +/- 16.6 points (80% of measured pairs)" ("gain +12.0%" when not known).
std::string format_gain(double gain, const GainError& e);

// Sets `kind`'s entry of the file at `path` (creating it, keeping the other kind's) from
// the summary of the pairs projected on `topology` (`note`, when not empty, says what to
// keep in mind about it). UsageError when it cannot be written.
void write_gain_error(const std::string& path, const std::string& kind, const std::string& topology,
                      const PpPairSummary& s, double threshold, const std::string& command, const std::string& note);

}  // namespace ibt::topo
