#include "topologies/studies/verdict_reason.hpp"

#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

namespace ibt::topo {

namespace {

Projection::StageBreakdown bottleneck_breakdown(const Projection& p) {
  if (p.bottleneck_stage < static_cast<int>(p.stages.size())) return p.stages[p.bottleneck_stage];
  Projection::StageBreakdown first;
  first.compute_s = p.compute_s;
  first.exposed_s = p.exposed_s;
  return first;
}

const char* exposure_words(Exposure e) {
  switch (e) {
    case Exposure::tp: return "exposed TP communication";
    case Exposure::dp: return "exposed DP gradient reduction";
    case Exposure::expert_dp: return "exposed expert-DP gradient reduction";
    case Exposure::pp: return "exposed PP send/receive";
    case Exposure::ep: return "exposed EP all-to-all";
    case Exposure::cp: return "exposed CP communication";
    case Exposure::bubble: return "pipeline bubble";
    case Exposure::count: break;
  }
  return "?";
}

std::string percent(double x, const char* format) {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, 100 * x);
  return buf;
}

}  // namespace

DecidingTerm deciding_term(const CrossoverCell& c) {
  DecidingTerm d;
  const Projection& a = c.best_no_pp;
  const Projection& b = c.best_with_pp;
  if (!a.feasible || !b.feasible) return d;
  // Stage 0 of a pipeline is often mostly waiting (an MoE pipeline's first stage idles
  // behind its expert stages), which would name "bubble" for any cause: the bottleneck's.
  const Projection::StageBreakdown sa = bottleneck_breakdown(a);
  const Projection::StageBreakdown sb = bottleneck_breakdown(b);
  struct Part {
    std::string term, words;
    double no_pp, with_pp;
  };
  std::vector<Part> parts = {{"compute", "compute", sa.compute_s, sb.compute_s}};
  for (int k = 0; k < kNumExposures; ++k) {
    const auto e = static_cast<Exposure>(k);
    parts.push_back({e == Exposure::bubble ? "bubble" : std::string("exposed ") + to_string(e), exposure_words(e),
                     sa.exposed_s[k], sb.exposed_s[k]});
  }
  d.pp_wins = b.step_s < a.step_s;
  double best_saving = -1e300;  // the part the winner saves most on (loser's seconds - winner's)
  for (const Part& p : parts) {
    const double saving = d.pp_wins ? p.no_pp - p.with_pp : p.with_pp - p.no_pp;
    if (saving > best_saving) {
      best_saving = saving;
      d.term = p.term;
      d.words = p.words;
      d.no_pp_s = p.no_pp;
      d.with_pp_s = p.with_pp;
    }
  }
  d.known = true;
  return d;
}

void detail_bests(const models::ModelConfig& model, const Topology& fabric, const ProjectionOptions& options,
                  CrossoverCell& cell) {
  for (Projection* best : {&cell.best_no_pp, &cell.best_with_pp}) {
    if (!best->feasible) continue;
    Projection again = project_every_stage(model, fabric, best->split, options);
    best->stages = std::move(again.stages);
    best->bottleneck_stage = again.bottleneck_stage;
  }
}

std::string verdict_sentence(const CrossoverCell& c, const GainError& gain_error) {
  const std::string verdict = verdict_text(c.verdict);
  if (c.decided_by != PpDecidedBy::gain) return verdict + ": " + c.decided_why;
  // u in points of gain where measured PP pairs gave it (gain_error.hpp), else the MFU band.
  char measured[96];
  std::snprintf(measured, sizeof measured, "uncertainty +-%.1f points (%.0f%% of measured pairs)",
                100 * gain_error.points, 100 * gain_error.coverage);
  const std::string u = gain_error.known    ? std::string(measured)
                        : c.uncertainty > 0 ? "uncertainty " + percent(c.uncertainty, "+-%.1f%%")
                                            : "no validation band";
  std::string s = verdict + " (gain " + percent(c.gain, "%+.1f%%") + ", " + u + ")";
  const DecidingTerm d = deciding_term(c);
  if (!d.known) return s;
  const double step_a = c.best_no_pp.step_s, step_b = c.best_with_pp.step_s;
  char buf[256];
  std::snprintf(buf, sizeof buf, ": decided by %s, %.3g s (%.1f%% of the step) without PP vs %.3g s (%.1f%%) with PP",
                d.words.c_str(), d.no_pp_s, step_a > 0 ? 100 * d.no_pp_s / step_a : 0.0, d.with_pp_s,
                step_b > 0 ? 100 * d.with_pp_s / step_b : 0.0);
  s += buf;
  // Not walked stage by stage (detail_bests): a pipeline's breakdown is its first stage's.
  if (static_cast<int>(c.best_with_pp.stages.size()) < c.best_with_pp.split.pp) s += " (its first stage)";
  return s;
}

std::string domain_fit_note(int devices, int domain_size) {
  if (domain_size <= 0 || devices == domain_size || devices % domain_size == 0) return "";
  if (devices < domain_size)
    return std::to_string(devices) + " devices in one domain of " + std::to_string(domain_size);
  const int full = devices / domain_size, rest = devices % domain_size;
  const int nth = full + 1;
  const char* suffix = (nth % 100 >= 11 && nth % 100 <= 13) ? "th"
                       : nth % 10 == 1                      ? "st"
                       : nth % 10 == 2                      ? "nd"
                       : nth % 10 == 3                      ? "rd"
                                                            : "th";
  // "an" where the ordinal is said with a vowel first: eight..., eleven, eighteen (also as
  // the leading group of thousands: 11,000th, 18,000th).
  int lead = nth;
  while (lead >= 1000) lead /= 1000;
  const std::string digits = std::to_string(nth);
  const bool an = digits.front() == '8' || lead == 11 || lead == 18;
  return std::to_string(devices) + " devices fill " + std::to_string(full) + (full == 1 ? " domain" : " domains") +
         " of " + std::to_string(domain_size) + " and " + std::to_string(rest) + " devices of " + (an ? "an " : "a ") +
         digits + suffix;
}

}  // namespace ibt::topo
