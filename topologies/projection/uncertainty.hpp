#pragma once
// The uncertainty of a projected MFU, from how far ibt's projections of published runs
// were off OUT OF SAMPLE: scripts/validate_published.sh (scripts/lofo_fit.py states the
// rule) writes topologies/validation/bands.json from the leave-one-family-out (LOFO)
// errors, projected / published - 1, of the published runs -- each family's rows
// projected at the GEMM efficiency fitted without that family -- never from in-sample
// residuals.
//
// Per scope the file holds the split-conformal interval [low, high] of those errors at a
// stated coverage (80%; Lei et al., "Distribution-free predictive inference for
// regression", JASA 2018): the topology's own rows when there are enough of them (at
// least min_rows rows of min_families families), else its device generation's rows,
// else the whole set's (the wide default band). A projection of MFU m has the band
//     [m / (1 + high), m / (1 + low)]
// (a true value that the projection over-estimates by `high` lies at m / (1 + high)),
// and says which scope gave it: a topology with no published run of its own -- or none
// in its generation -- says so. The script also reports the coverage that rule achieved
// on held-out families (each family's rows against a band built without it).
#include <string>

namespace ibt::topo {

struct MfuBand {
  bool known = false;        // a band is given (bands.json found; every topology then has one)
  bool validated = false;    // the topology's own published runs gave it
  std::string scope;         // "dgx-h100", "generation Hopper" or "all published runs"
  std::string scope_kind;    // "topology", "generation" or "all"
  std::string family;        // the validation families the scope pools ("a+b")
  int rows = 0;              // published runs in the scope
  int own_rows = 0;          // published runs on the topology itself
  double coverage = 0;       // the band's stated coverage (0.8)
  double low = 0, high = 0;  // MFU bounds (fractions)
  double relative = 0;       // the scope's median |LOFO error|: how far apart two MFUs must be to differ
};

// The band of `mfu` projected on topology `topology_name` (a crossover fabric's name
// "base@d8-400G" counts as its base; a topology bands.json does not list -- a calibrated
// or user file -- gets the whole set's band). Reads bands.json once from the validation
// folder ($IBT_VALIDATION_DIR, else an installed share/ibt, else the source tree's
// topologies/validation: core/data_dirs.hpp); a
// missing file means no band, a malformed one is a RuntimeError naming it.
MfuBand mfu_band(const std::string& topology_name, double mfu);

// "36.0% (80% band 31.0-41.0: out-of-family error of 11 published runs on dgx-h100)", or
// which wider scope gave it and why, or "36.0% (no validation bands)".
std::string format_mfu_with_band(double mfu, const MfuBand& band, const std::string& topology_name);

}  // namespace ibt::topo
