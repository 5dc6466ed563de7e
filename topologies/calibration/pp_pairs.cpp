#include "topologies/calibration/pp_pairs.hpp"

#include <cmath>
#include <map>
#include <tuple>

#include "core/errors.hpp"
#include "core/stats.hpp"

namespace ibt::topo {

namespace {

using GroupKey = std::tuple<int, int, int, int, int, int>;

GroupKey key_of(const VtrainRow& r) { return {r.hidden, r.heads, r.layers, r.seq, r.gpus, r.global_batch}; }

}  // namespace

std::string group_label(const VtrainRow& k) {
  return "gpus " + std::to_string(k.gpus) + " gb " + std::to_string(k.global_batch) + " h " + std::to_string(k.hidden) +
         " a " + std::to_string(k.heads) + " l " + std::to_string(k.layers) + " s " + std::to_string(k.seq);
}

std::vector<std::vector<VtrainRow>> pp_groups(const std::vector<VtrainRow>& rows, int limit) {
  std::map<GroupKey, size_t> index;
  std::vector<std::vector<VtrainRow>> all;
  for (const auto& r : rows) {
    auto [it, added] = index.emplace(key_of(r), all.size());
    if (added) all.emplace_back();
    all[it->second].push_back(r);
  }
  std::vector<std::vector<VtrainRow>> out;
  for (auto& g : all) {
    bool no_pp = false, with_pp = false;
    for (const auto& r : g) (r.pp > 1 ? with_pp : no_pp) = true;
    if (no_pp && with_pp) out.push_back(std::move(g));
    if (limit > 0 && static_cast<int>(out.size()) == limit) break;
  }
  return out;
}

std::vector<PpPair> compare_pp_pairs(const std::vector<std::vector<VtrainRow>>& groups, const Topology& t,
                                     double threshold) {
  std::vector<PpPair> out;
  for (const auto& g : groups) {
    PpPair p;
    p.key = g.front();
    p.splits = project_vtrain(g, t);
    // Bests per kind [pp > 1], measured and projected, over the splits that projected.
    double measured[2] = {INFINITY, INFINITY}, projected[2] = {INFINITY, INFINITY};
    const VtrainResult *fastest_measured = nullptr, *fastest_projected = nullptr;
    for (const auto& s : p.splits) {
      if (!s.error.empty()) {
        ++p.skipped;
        continue;
      }
      const int k = s.row.pp > 1;
      measured[k] = std::min(measured[k], s.row.measured_ms);
      projected[k] = std::min(projected[k], s.projected_ms);
      if (!fastest_measured || s.row.measured_ms < fastest_measured->row.measured_ms) fastest_measured = &s;
      if (!fastest_projected || s.projected_ms < fastest_projected->projected_ms) fastest_projected = &s;
    }
    if (!std::isfinite(measured[0]) || !std::isfinite(measured[1]))
      throw UsageError("group " + group_label(p.key) +
                       ": no split of one kind (with or without PP) could be projected");
    p.measured_gain = measured[0] / measured[1] - 1;
    p.projected_gain = projected[0] / projected[1] - 1;
    p.measured_needed = p.measured_gain > threshold;
    p.projected_needed = p.projected_gain > threshold;
    p.top1 = fastest_projected == fastest_measured;
    p.regret = fastest_projected->row.measured_ms / fastest_measured->row.measured_ms - 1;
    out.push_back(std::move(p));
  }
  return out;
}

PpPairSummary summarize(const std::vector<PpPair>& pairs) {
  PpPairSummary s;
  std::vector<double> regret, err, abs_err;
  for (const auto& p : pairs) {
    ++s.groups;
    s.agree += p.measured_needed == p.projected_needed;
    ++s.confusion[p.measured_needed][p.projected_needed];
    s.top1 += p.top1;
    regret.push_back(100 * p.regret);
    err.push_back(100 * (p.projected_gain - p.measured_gain));
    abs_err.push_back(std::abs(err.back()));
  }
  if (pairs.empty()) return s;
  s.regret_median = median(regret);
  s.regret_p90 = quantile(regret, 0.9);
  s.err_median = median(err);
  s.err_p10 = quantile(err, 0.1);
  s.err_p90 = quantile(err, 0.9);
  s.abs_err_p80 = quantile(abs_err, 0.8);
  return s;
}

}  // namespace ibt::topo
