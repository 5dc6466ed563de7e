#pragma once
// The one rule that answers "is pipeline parallelism needed?" for a crossover cell.
// `ibt crossover` (its grid, its --topology line and its verdict line), the atlas, the
// HDF5 `verdict` column and the HTML report all take their answer from pp_verdict();
// nothing else decides. The report reads the stored words, never recomputes them.
//
// The rule. gain = best MFU with PP / best MFU without PP - 1 (of the rank_by figure);
// u = the gain's uncertainty on that system, as a fraction: for `ibt crossover` the error
// of PP gains measured on pairs of splits run on the same system (gain_error.hpp: the p80
// |projected - measured gain| of the vTrain pairs, per kind of topology, catalog or
// calibrated); for the atlas, and where that file is missing, the scope's median
// out-of-family |MFU error| (uncertainty.hpp); 0 where neither is known; t = --threshold.
// The threshold keeps its meaning (PP must win by more than t, 5% by default, to be
// needed); u widens the band around it that the projection cannot resolve:
//   "PP needed"          gain > t + u, or only splits with PP fit in memory;
//   "PP not needed"      gain < t - u, or only splits without PP fit in memory;
//   "within uncertainty" otherwise: the two bests are closer to the threshold than the
//                        projection's error can tell apart.
// A cell where no split fits at all has nothing to compare: "nothing fits", which is not
// a verdict (it neither needs nor rules out PP).
#include <string>

namespace ibt::topo {

enum class PpVerdict { needed, not_needed, within_uncertainty, nothing_fits };

// What the rule compares.
struct PpComparison {
  double gain = 0;         // relative; ignored unless both sides fit
  double uncertainty = 0;  // u >= 0
  bool no_pp_fits = false, with_pp_fits = false;
};

PpVerdict pp_verdict(const PpComparison& c, double threshold);

// The words printed and stored: "PP needed", "PP not needed", "within uncertainty",
// "nothing fits".
const char* verdict_text(PpVerdict v);
// The inverse of verdict_text; any other text is a RuntimeError naming it.
PpVerdict parse_verdict(const std::string& text);

}  // namespace ibt::topo
