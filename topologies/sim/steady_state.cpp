// The steady-state jump of the fast walk (SteadyState, steady_state.hpp): which times a
// repeat's period moves, the walk's state after a repetition, whether it repeats shifted,
// and the jump over the repetitions left.
#include "topologies/sim/steady_state.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace ibt::topo::fast {

using models::ActionKind;
using namespace maxplus;

SteadyState::SteadyState(const ScheduleIndex& ix, size_t repeat, const StepTemplates& templates,
                         const std::vector<std::vector<PricedTemplate>>& priced, std::vector<StageWalk>& walks)
    : ix_(ix), rep_(ix.schedule.repeats[repeat]), held_(ix.held[repeat]), walks_(walks) {
  from_ = ix.latest_input[repeat];
  check_at_ = from_ + 1;
  step_ = rep_.microbatch_shift * ix.schedule.chunks;
  const int P = ix.stages();
  moving_.assign(static_cast<size_t>(P) * kTimes, 0);
  offset_.assign(1, 0);
  for (int s = 0; s < P; ++s) {
    size_t held = 0;
    for (const ScheduleIndex::Held& h : held_[s]) held += h.later;
    offset_.push_back(offset_.back() + kTimes + held);
    char* moves = &moving_[static_cast<size_t>(s) * kTimes];
    for (int i = rep_.begin[s]; i < rep_.end[s]; ++i) {
      if (ix.steps[s][i].kind == ActionKind::exchange) {
        moves[kP2pFree] = moves[kP2pDone] = 1;
        continue;
      }
      moves[kDataReady] = 1;
      const Table& t = priced[s][templates.template_of(s, i)].table;
      for (int k : {kCompute, kComm, kGradComm}) {
        bool used = t[k] != unit(k);
        for (int r = 0; r < kInputs && !used; ++r) used = r != k && t[r][k] != kNever;
        moves[k] = moves[k] || used;
      }
    }
  }
}

int SteadyState::after(int j) {
  if (j < from_ || j < check_at_ - kMaxCycle) return 0;
  Seen now{j, state(j), walks_[0].booked};
  if (j < check_at_) {
    seen_.push_back(std::move(now));
    return 0;
  }
  for (const Seen& then : seen_) {
    const int i = j - then.j;
    if (then.j < from_ || i > kMaxCycle) continue;
    const int n = (rep_.times - 1 - j) / i * i;
    if (n <= 0) continue;
    if (repeats(now.times, then.times, static_cast<double>(i) / n)) {
      jump(j, n, i, now, then);
      seen_.clear();
      gap_ = 1;
      check_at_ = j + n + 1;
      return n;
    }
  }
  gap_ = std::min(2 * gap_, kMaxGap);
  check_at_ = j + gap_;
  seen_.push_back(std::move(now));
  while (!seen_.empty() && seen_.front().j < check_at_ - kMaxCycle) seen_.erase(seen_.begin());
  return 0;
}

std::vector<double> SteadyState::state(int j) const {
  std::vector<double> out;
  out.reserve(offset_.back());
  for (int s = 0; s < ix_.stages(); ++s) {
    const StageWalk& w = walks_[s];
    out.insert(out.end(), {w.free[kCompute], w.free[kComm], w.free[kGradComm], w.data_ready, w.p2p_free, w.p2p_done});
    for (const ScheduleIndex::Held& h : held_[s])
      for (int t = 0; t < h.later; ++t) out.push_back(w.received[slot(h, j, t)]);
  }
  return out;
}

bool SteadyState::repeats(const std::vector<double>& now, const std::vector<double>& then, double scale) const {
  const double delta = now[kCompute] - then[kCompute];
  if (!(delta > 0)) return false;
  const double tol = kJumpTolerance * scale * std::max(1.0, std::abs(now[kCompute]));
  for (int s = 0; s < ix_.stages(); ++s) {
    const size_t at = offset_[s];
    for (size_t k = at; k < offset_[s + 1]; ++k) {
      const bool moving = k >= at + kTimes || moving_[static_cast<size_t>(s) * kTimes + (k - at)];
      if (!moving || (now[k] == kNever && then[k] == kNever)) {
        if (now[k] != then[k]) return false;
        continue;
      }
      if (now[k] == kNever || then[k] == kNever || std::abs((now[k] - then[k]) - delta) > tol) return false;
    }
  }
  return true;
}

void SteadyState::jump(int j, int n, int i, const Seen& now, const Seen& then) {
  const double f = static_cast<double>(n / i);
  auto ahead = [&](size_t k) {
    return now.times[k] == kNever ? kNever : now.times[k] + f * (now.times[k] - then.times[k]);
  };
  for (int s = 0; s < ix_.stages(); ++s) {
    StageWalk& w = walks_[s];
    size_t k = offset_[s];
    const char* moves = &moving_[static_cast<size_t>(s) * kTimes];
    for (int c : {kCompute, kComm, kGradComm})
      if (moves[c]) w.free[c] = ahead(k + c);
    if (moves[kDataReady]) w.data_ready = ahead(k + kDataReady);
    if (moves[kP2pFree]) w.p2p_free = ahead(k + kP2pFree);
    if (moves[kP2pDone]) w.p2p_done = ahead(k + kP2pDone);
    k += kTimes;
    for (const ScheduleIndex::Held& h : held_[s])
      for (int t = 0; t < h.later; ++t, ++k) {
        const int from = slot(h, j, t), to = slot(h, j + n, t);
        const double moved = ahead(k);
        w.received[to] = moved;
        if (!w.detailed) continue;
        // The exchange op a later action's breakdown reads: a copy, moved.
        const int op = w.received_op[from];
        const double by = moved - w.finish[op];
        w.received_op[to] = static_cast<int>(w.ops.size());
        w.ops.push_back(w.ops[op]);
        w.ready.push_back(w.ready[op] + by);
        w.finish.push_back(moved);
        w.dur.push_back(w.dur[op]);
        w.transfer.push_back(w.transfer[op]);
      }
  }
  if (walks_[0].memo) {
    StageTime& b = walks_[0].booked;
    b.compute_us += f * (now.booked.compute_us - then.booked.compute_us);
    for (int e = 0; e < kNumExposures; ++e)
      b.exposed_us[e] += f * (now.booked.exposed_us[e] - then.booked.exposed_us[e]);
    for (int o = 0; o < kNumOpKinds; ++o) b.op_us[o] += f * (now.booked.op_us[o] - then.booked.op_us[o]);
  }
}

}  // namespace ibt::topo::fast
