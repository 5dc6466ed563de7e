// In-flight activations of a pipeline schedule (schedule.hpp): each stage's compute
// order as memory accounting walks it (PipelineSchedule::compute_order), the points
// where its holding can peak (held_peaks), the peaks themselves (peak_held,
// max_chunks_in_flight, max_layers_in_flight), and build_compute_orders, which makes
// these without placing a single exchange.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <stdexcept>
#include <vector>

#include "models/plan/schedule_internal.hpp"

namespace ibt::models {

namespace schedule_internal {

std::vector<std::int16_t> memory_order(const std::vector<PipeAction>& actions, bool split_backward) {
  const ActionKind releases = split_backward ? ActionKind::weight : ActionKind::backward;
  std::vector<std::int16_t> order;
  for (const auto& a : actions) {
    if (a.kind == ActionKind::forward)
      order.push_back(static_cast<std::int16_t>(a.chunk + 1));
    else if (a.kind == releases)
      order.push_back(static_cast<std::int16_t>(-(a.chunk + 1)));
  }
  return order;
}

}  // namespace schedule_internal

using schedule_internal::memory_order;

namespace {
// A schedule's header, checked, with no stage filled.
PipelineSchedule schedule_header(const ParallelSplit& split) {
  schedule_internal::check_parameters(split.schedule, split.pp, split.vpp, split.microbatches);
  PipelineSchedule out;
  out.kind = split.schedule;
  out.stages = split.pp;
  out.chunks = split.vpp;
  out.microbatches = split.microbatches;
  return out;
}

// PipelineSchedule::held_peaks of one stage's compute_order.
std::vector<std::vector<int>> held_peaks(const std::vector<std::int16_t>& order, int chunks) {
  // The distinct points, in order: a steady state repeats a few points hundreds of
  // times (one with 1F1B, a cycle of them interleaved, up to p x v long), so the set
  // stays a handful while the walk meets thousands.
  std::set<std::vector<int>> distinct;
  std::vector<int> held(chunks, 0);
  for (size_t i = 0; i < order.size(); ++i) {
    const std::int16_t a = order[i];
    if (a < 0) {
      --held[-a - 1];
      continue;
    }
    ++held[a - 1];
    if (i + 1 < order.size() && order[i + 1] > 0) continue;  // the next forward holds more
    distinct.insert(held);
  }
  // Keep the points no other point covers in every chunk.
  const std::vector<std::vector<int>> points(distinct.begin(), distinct.end());
  auto covers = [](const std::vector<int>& a, const std::vector<int>& b) {
    for (size_t c = 0; c < a.size(); ++c)
      if (a[c] < b[c]) return false;
    return true;
  };
  std::vector<std::vector<int>> peaks;
  for (size_t i = 0; i < points.size(); ++i) {
    bool covered = false;
    for (size_t j = 0; j < points.size() && !covered; ++j) covered = j != i && covers(points[j], points[i]);
    if (!covered) peaks.push_back(points[i]);
  }
  return peaks;
}
}  // namespace

PipelineSchedule build_compute_orders(const ParallelSplit& split,
                                      const std::function<void(int, const std::vector<ComputeTask>&)>& each_stage) {
  PipelineSchedule out = schedule_header(split);
  const int p = split.pp, v = split.vpp, m = split.microbatches;
  // build_schedule places each stage's computes in this order (only the rounds, and
  // the exchanges between them, depend on the other stages); activations are released
  // as memory_order() releases them (at the W with a split backward).
  const Pass releases = out.split_backward() ? Pass::weight : Pass::backward;
  out.compute_order.resize(p);
  out.held_peaks.resize(p);
  for (int s = 0; s < p; ++s) {
    const std::vector<ComputeTask> tasks = schedule_internal::stage_compute_tasks(split.schedule, p, v, m, s);
    std::vector<std::int16_t>& order = out.compute_order[s];
    order.reserve(tasks.size());
    for (const ComputeTask& t : tasks) {
      if (t.pass == Pass::forward)
        order.push_back(static_cast<std::int16_t>(t.chunk + 1));
      else if (t.pass == releases)
        order.push_back(static_cast<std::int16_t>(-(t.chunk + 1)));
    }
    out.held_peaks[s] = held_peaks(order, v);
    if (each_stage) each_stage(s, tasks);
  }
  return out;
}

const std::vector<std::int16_t>& compute_order(const PipelineSchedule& s, int stage,
                                               std::vector<std::int16_t>& scratch) {
  if (s.compute_order.size() == static_cast<size_t>(s.stages)) return s.compute_order.at(stage);
  if (!s.repeats.empty())
    throw std::logic_error("compute_order: a compact schedule lists its steady state once (expand_schedule)");
  scratch = memory_order(s.per_stage.at(stage), s.split_backward());  // a schedule not from build_schedule()
  return scratch;
}

std::vector<std::int16_t> compute_order(const PipelineSchedule& s, int stage) {
  std::vector<std::int16_t> scratch;
  return compute_order(s, stage, scratch);
}

template <class T>
T peak_held(const PipelineSchedule& s, int stage, const std::vector<T>& weight, bool peaks_exact) {
  T held = 0, peak = 0;
  if (!s.held_peaks.empty() && peaks_exact) {
    for (const std::vector<int>& point : s.held_peaks.at(stage)) {
      held = 0;
      for (int c = 0; c < s.chunks; ++c) held += point[c] * weight[c];
      peak = std::max(peak, held);
    }
    return peak;
  }
  std::vector<std::int16_t> scratch;
  for (const std::int16_t a : compute_order(s, stage, scratch)) {
    if (a > 0)
      peak = std::max(peak, held += weight[a - 1]);
    else
      held -= weight[-a - 1];
  }
  return peak;
}
template int peak_held<int>(const PipelineSchedule&, int, const std::vector<int>&, bool);
template double peak_held<double>(const PipelineSchedule&, int, const std::vector<double>&, bool);

int max_layers_in_flight(const PipelineSchedule& s, const ModelConfig& model, int stage) {
  std::vector<int> layers(s.chunks);
  for (int c = 0; c < s.chunks; ++c)
    layers[c] = stage_layers(model, s.virtual_stages(), s.virtual_stage(stage, c)).count;
  return peak_held(s, stage, layers);
}

int max_chunks_in_flight(const PipelineSchedule& s, int stage) {
  return peak_held(s, stage, std::vector<int>(s.chunks, 1));
}

}  // namespace ibt::models
