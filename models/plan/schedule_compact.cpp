// Compact pipeline schedules (schedule.hpp, build_compact_schedule): the steady state
// listed once with how often it repeats. RepeatFinder spots the repetition while the
// lock-step construction (schedule_lock_step.cpp) runs and skips the rounds it covers;
// expand_schedule lists them again, and runs() says how often a listed action runs.
#include <algorithm>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

#include "models/plan/schedule_internal.hpp"

namespace ibt::models {

namespace schedule_internal {

namespace {

// Whether b is task a with its microbatch + shift.
bool shifted(const ComputeTask& a, const ComputeTask& b, int shift) {
  return a.pass == b.pass && a.chunk == b.chunk && a.overlapped == b.overlapped && b.microbatch == a.microbatch + shift;
}

// The period of a compute order from task `at`: the fewest tasks d after which it goes
// on with every microbatch + shift, over a third of what follows (a period checked
// over a short stretch can be a pattern inside the true one: interleaved alternates
// F and B of consecutive microbatches within a chunk's group); 0 when none is found.
struct OrderPeriod {
  int tasks = 0;
  int shift = 0;
};
OrderPeriod order_period(const std::vector<ComputeTask>& order, size_t at) {
  const size_t stretch = (order.size() - at) / 3;
  for (size_t d = 1; d <= stretch; ++d) {
    const int shift = order[at + d].microbatch - order[at].microbatch;
    if (shift <= 0) continue;
    bool same = true;
    for (size_t i = 0; i < stretch && same; ++i) same = shifted(order[at + i], order[at + d + i], shift);
    if (same) return {static_cast<int>(d), shift};
  }
  return {};
}

}  // namespace

RepeatFinder::RepeatFinder(const LockStepState& state, bool compact) {
  const std::vector<ComputeTask>& first = state.order[0];
  OrderPeriod period;
  if (compact && !v_shaped(state.kind) && !first.empty()) {
    period = order_period(first, first.size() / 2);
    if (period.tasks == 0) period = order_period(first, first.size() / 4);
  }
  c_ = period.tasks;
  ring_.resize(c_ > 0 ? c_ + 1 : 0);
  per_period_.resize(state.p);
  window_.resize(state.p);
}

void RepeatFinder::at_round_start(LockStepState& state, PipelineSchedule& out, int& round) {
  if (c_ == 0) return;
  const Boundary* then =
      round - c_ >= recorded_from_ ? &ring_[static_cast<size_t>(round - c_) % ring_.size()] : nullptr;
  const size_t periods = then ? repeats_from(state, round, *then) : 0;
  if (periods > 0) skip_periods(state, out, round, *then, periods);
  record(state, out, round);
}

size_t RepeatFinder::repeats_from(const LockStepState& state, int round, const Boundary& then) {
  const int p = state.p;
  const auto& order = state.order;
  const auto& next = state.next;
  for (int s = 0; s < p; ++s)
    if (next[s] == order[s].size() || next[s] == then.next[s] || state.held[s] != then.held[s]) return 0;
  for (int s = 0; s < p; ++s)
    for (const auto& queue : state.pending[s])
      if (!queue.empty()) return 0;
  shift_ = order[0][next[0]].microbatch - order[0][then.next[0]].microbatch;
  if (shift_ <= 0) return 0;
  for (int s = 0; s < p; ++s) {
    per_period_[s] = next[s] - then.next[s];
    // The held messages: the inputs of the same coming tasks, then and now.
    int found_now = 0, found_then = 0;
    size_t i = 0;
    for (; found_now < state.held[s] || found_then < then.held[s]; ++i) {
      if (next[s] + i >= order[s].size()) return 0;
      const ComputeTask& t_then = order[s][then.next[s] + i];
      const ComputeTask& t_now = order[s][next[s] + i];
      if (!shifted(t_then, t_now, shift_)) return 0;
      const bool now_held = state.arrived_before(t_now, s, round);
      const bool then_held = state.arrived_before(t_then, s, round - c_);
      if (now_held != then_held) return 0;
      found_now += now_held;
      found_then += then_held;
    }
    window_[s] = i;
  }
  // How far each order repeats with period per_period_[s]: the repeated periods'
  // tasks and the look-ahead after them must be shifts of the ones seen. One more
  // period is left listed after them, so that no listed period holds a chunk's last
  // forward, backward or W (which the sim prices apart: the overlapped reductions,
  // the tail's waits) and the repeats never end the schedule.
  size_t periods = std::numeric_limits<size_t>::max();
  for (int s = 0; s < p; ++s) {
    const size_t a = then.next[s], d = per_period_[s];
    size_t run = 0;
    while (a + d + run < order[s].size() && shifted(order[s][a + run], order[s][a + d + run], shift_)) ++run;
    periods = std::min(periods, run >= window_[s] + d ? (run - window_[s] - d) / d : 0);
  }
  return periods;
}

void RepeatFinder::skip_periods(LockStepState& state, PipelineSchedule& out, int& round, const Boundary& then,
                                size_t periods) {
  const int p = state.p;
  ScheduleRepeat r;
  r.first_round = round - c_;
  r.rounds = c_;
  r.times = static_cast<int>(periods) + 1;
  r.microbatch_shift = shift_;
  for (int s = 0; s < p; ++s) {
    r.begin.push_back(static_cast<int>(then.listed[s]));
    r.end.push_back(static_cast<int>(out.per_stage[s].size()));
  }
  out.repeats.push_back(std::move(r));
  // The state `periods` periods on: the same positions and held messages, shifted.
  const int mb_shift = static_cast<int>(periods) * shift_, round_shift = static_cast<int>(periods) * c_;
  for (int s = 0; s < p; ++s) {
    for (size_t i = 0; i < window_[s]; ++i) {
      const ComputeTask& t = state.order[s][state.next[s] + i];
      if (!state.arrived_before(t, s, round)) continue;
      std::vector<int>& arrival = state.input_arrivals(t.pass);
      const int vs = out.virtual_stage(s, t.chunk);
      arrival[state.slot(t.microbatch + mb_shift, vs)] = arrival[state.slot(t.microbatch, vs)] + round_shift;
    }
    state.next[s] += periods * per_period_[s];
    state.remaining -= periods * per_period_[s];
  }
  round += round_shift;
  recorded_from_ = round;
}

void RepeatFinder::record(const LockStepState& state, const PipelineSchedule& out, int round) {
  Boundary& b = ring_[static_cast<size_t>(round) % ring_.size()];
  b.next = state.next;
  b.listed.resize(state.p);
  for (int s = 0; s < state.p; ++s) b.listed[s] = out.per_stage[s].size();
  b.held = state.held;
}

}  // namespace schedule_internal

PipelineSchedule build_compact_schedule(const ParallelSplit& split) {
  schedule_internal::check_parameters(split.schedule, split.pp, split.vpp, split.microbatches);
  return schedule_internal::lock_step(split.schedule, split.pp, split.vpp, split.microbatches, true);
}

int runs(const PipelineSchedule& s, int stage, int action) {
  for (const ScheduleRepeat& r : s.repeats)
    if (action >= r.begin[stage] && action < r.end[stage]) return r.times;
  return 1;
}

PipelineSchedule expand_schedule(const PipelineSchedule& compact) {
  PipelineSchedule out = compact;
  if (compact.repeats.empty()) return out;
  out.repeats.clear();
  out.compute_order.assign(compact.stages, {});
  for (int s = 0; s < compact.stages; ++s) {
    const std::vector<PipeAction>& listed = compact.per_stage[s];
    std::vector<PipeAction>& list = out.per_stage[s];
    list.clear();
    size_t at = 0;
    for (const ScheduleRepeat& r : compact.repeats) {
      list.insert(list.end(), listed.begin() + static_cast<long>(at), listed.begin() + r.begin[s]);
      for (int j = 0; j < r.times; ++j)
        for (int i = r.begin[s]; i < r.end[s]; ++i) {
          PipeAction a = listed[i];
          const int shift = j * r.microbatch_shift;
          if (a.kind != ActionKind::exchange) a.microbatch += shift;
          if (a.send) a.send->microbatch += shift;
          if (a.recv) a.recv->microbatch += shift;
          a.round += j * r.rounds;
          list.push_back(a);
        }
      at = static_cast<size_t>(r.end[s]);
    }
    list.insert(list.end(), listed.begin() + static_cast<long>(at), listed.end());
    out.compute_order[s] = schedule_internal::memory_order(list, out.split_backward());
  }
  return out;
}

}  // namespace ibt::models
