#include "topologies/studies/verdict.hpp"

#include "core/errors.hpp"

namespace ibt::topo {

PpVerdict pp_verdict(const PpComparison& c, double threshold) {
  if (!c.no_pp_fits && !c.with_pp_fits) return PpVerdict::nothing_fits;
  // One side alone fits: memory decides, whatever the band.
  if (!c.no_pp_fits) return PpVerdict::needed;
  if (!c.with_pp_fits) return PpVerdict::not_needed;
  if (c.gain > threshold + c.uncertainty) return PpVerdict::needed;
  if (c.gain < threshold - c.uncertainty) return PpVerdict::not_needed;
  return PpVerdict::within_uncertainty;
}

const char* verdict_text(PpVerdict v) {
  switch (v) {
    case PpVerdict::needed: return "PP needed";
    case PpVerdict::not_needed: return "PP not needed";
    case PpVerdict::within_uncertainty: return "within uncertainty";
    case PpVerdict::nothing_fits: return "nothing fits";
  }
  return "?";
}

PpVerdict parse_verdict(const std::string& text) {
  for (PpVerdict v : {PpVerdict::needed, PpVerdict::not_needed, PpVerdict::within_uncertainty, PpVerdict::nothing_fits})
    if (text == verdict_text(v)) return v;
  throw RuntimeError("unknown PP verdict '" + text + "'");
}

}  // namespace ibt::topo
