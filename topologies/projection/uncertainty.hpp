#pragma once
// The uncertainty of a projected MFU, from how far projections of published runs on
// the same topology were off (scripts/validate_published.sh writes
// topologies/validation/bands.json: per topology, the 10th/90th percentile and median of
// projected / published - 1 over every published run on it, whichever family (hardware
// generation x framework era) the run belongs to, and the families pooled).
//
// A projection of MFU m on such a topology has the band
//     [m / (1 + hi), m / (1 + lo)],  lo = min(q10, -median|error|), hi = max(q90, +median|error|)
// (a true value that the projection over-estimates by `hi` lies at m / (1 + hi)); the
// widening to the median |error| keeps a topology of few, similar rows from claiming a
// band narrower than its typical miss. Topologies no published run covers have no band,
// and say so.
#include <string>

namespace ibt::topo {

struct MfuBand {
  bool known = false;
  std::string family;        // the validation families it pools ("a+b")
  int rows = 0;              // published runs on the topology
  double low = 0, high = 0;  // MFU bounds (fractions)
  double relative = 0;       // the topology's median |error|: how far apart two MFUs must be to differ
};

// The band of `mfu` projected on topology `topology_name` (a crossover fabric's name
// "base@d8-400G" counts as its base). Reads bands.json from IBT_VALIDATION_DIR (the
// environment variable, else the source tree's topologies/validation) once; a missing
// file means no band, a malformed one is a RuntimeError naming it.
MfuBand mfu_band(const std::string& topology_name, double mfu);

// "36.0% (31.0-41.0; 12 published runs on dgx-h100)" or "36.0% (no validation band for tpu-v4)".
std::string format_mfu_with_band(double mfu, const MfuBand& band, const std::string& topology_name);

}  // namespace ibt::topo
