// simulate_pipeline (schedule.hpp): a schedule executed with given costs, each
// exchange a rendezvous of its partners. The schedule's self-check (it throws on a
// deadlock or an unmatched message) and the simplest timing model of a pipeline.
#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "models/plan/schedule.hpp"

namespace ibt::models {

PipelineTiming simulate_pipeline(const PipelineSchedule& s, double fc, double bc, double cc, double wc) {
  const size_t n = static_cast<size_t>(s.stages) * s.chunks;
  return simulate_pipeline(
      s, PipelineCosts{std::vector<double>(n, fc), std::vector<double>(n, bc), cc, std::vector<double>(n, wc)});
}

PipelineTiming simulate_pipeline(const PipelineSchedule& s, const PipelineCosts& costs) {
  const int p = s.stages;
  const size_t n = static_cast<size_t>(p) * s.chunks;
  if (costs.forward.size() != n || costs.backward.size() != n)
    throw UsageError("simulate_pipeline: need " + std::to_string(n) + " forward and backward costs (stages x chunks)");
  if (s.split_backward() && costs.weight.size() != n)
    throw UsageError("simulate_pipeline: schedule " + std::string(to_string(s.kind)) + " needs " + std::to_string(n) +
                     " weight-gradient (W) costs (stages x chunks)");
  const double cc = costs.exchange;
  // Where each message is sent and received: (payload, microbatch, src vs) -> (stage, index).
  using Key = std::tuple<int, int, int>;
  std::map<Key, std::pair<int, int>> sender, receiver;
  for (int st = 0; st < p; ++st)
    for (int i = 0; i < static_cast<int>(s.per_stage[st].size()); ++i) {
      const auto& a = s.per_stage[st][i];
      if (a.send) sender[{int(a.send->payload), a.send->microbatch, a.send->src_virtual_stage}] = {st, i};
      if (a.recv) receiver[{int(a.recv->payload), a.recv->microbatch, a.recv->src_virtual_stage}] = {st, i};
    }
  auto partner = [&](const Transfer& t, bool i_send) {
    const Key k{int(t.payload), t.microbatch, t.src_virtual_stage};
    auto& map = i_send ? receiver : sender;
    auto it = map.find(k);
    if (it == map.end())
      throw RuntimeError("pipeline schedule: message of microbatch " + std::to_string(t.microbatch) +
                         " from virtual stage " + std::to_string(t.src_virtual_stage) + " has no matching " +
                         (i_send ? "receive" : "send"));
    return it->second;
  };

  std::vector<size_t> cursor(p, 0);
  std::vector<double> clock(p, 0.0);
  std::vector<std::vector<double>> arrive(p);
  for (int st = 0; st < p; ++st) arrive[st].assign(s.per_stage[st].size() + 1, 0.0);
  PipelineTiming t;
  t.busy.assign(p, 0.0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int st = 0; st < p; ++st) {
      const auto& list = s.per_stage[st];
      while (cursor[st] < list.size()) {
        const size_t i = cursor[st];
        arrive[st][i] = clock[st];
        const auto& a = list[i];
        if (a.kind != ActionKind::exchange) {
          const size_t k = static_cast<size_t>(st) * s.chunks + a.chunk;
          const double c = a.kind == ActionKind::forward    ? costs.forward[k]
                           : a.kind == ActionKind::backward ? costs.backward[k]
                                                            : costs.weight[k];
          clock[st] += c;
          t.busy[st] += c;
        } else {
          double end = clock[st];
          bool blocked = false;
          for (bool is_send : {true, false}) {
            const auto& part = is_send ? a.send : a.recv;
            if (!part) continue;
            auto [ps, pi] = partner(*part, is_send);
            if (cursor[ps] < static_cast<size_t>(pi)) {
              blocked = true;
              break;
            }
            end = std::max(end, std::max(clock[st], arrive[ps][pi]) + cc);
          }
          if (blocked) break;
          clock[st] = end;
        }
        ++cursor[st];
        progress = true;
      }
    }
  }
  std::string stuck;
  for (int st = 0; st < p; ++st)
    if (cursor[st] < s.per_stage[st].size())
      stuck += (stuck.empty() ? "" : ", ") + std::to_string(st) + " at action " + std::to_string(cursor[st]);
  if (!stuck.empty()) throw RuntimeError("pipeline schedule deadlocks: stages " + stuck);
  t.makespan = *std::max_element(clock.begin(), clock.end());
  t.finish = clock;
  t.ideal = *std::max_element(t.busy.begin(), t.busy.end());
  t.bubble_fraction = t.ideal > 0 ? (t.makespan - t.ideal) / t.ideal : 0.0;
  return t;
}

}  // namespace ibt::models
