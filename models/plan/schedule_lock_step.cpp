// The lock-step construction of a pipeline schedule (schedule.hpp, "How the order is
// made deadlock-free"): each stage's compute order (schedule_orders.cpp) placed round by
// round with unit-time computes, each round's messages sent in its phases as exchanges.
// With `compact`, RepeatFinder (schedule_compact.cpp) lists the steady state once.
#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "models/plan/schedule_internal.hpp"

namespace ibt::models::schedule_internal {

LockStepState::LockStepState(ScheduleKind kind_, int p_, int v_, int m_)
    : kind(kind_), p(p_), v(v_), m(m_), virtual_stages(p_ * v_), order(p_), next(p_, 0) {
  for (int s = 0; s < p; ++s) order[s] = stage_compute_tasks(kind, p, v, m, s);
  act_arrival.assign(static_cast<size_t>(m) * virtual_stages, -1);
  grad_arrival.assign(static_cast<size_t>(m) * virtual_stages, -1);
  for (auto& o : order) remaining += o.size();
  busy_until.assign(p, 0);
  pending.resize(p);
  held.assign(p, 0);
}

long LockStepState::input_of(const ComputeTask& t, int s) const {
  const int vs = virtual_stage_of(kind, p, s, t.chunk);
  if (t.pass == Pass::weight || (t.pass == Pass::forward ? vs == 0 : vs == virtual_stages - 1)) return -1;
  return static_cast<long>(slot(t.microbatch, vs));
}

bool LockStepState::arrived_before(const ComputeTask& t, int s, int round) const {
  const long x = input_of(t, s);
  if (x < 0) return false;
  const int when = input_arrivals(t.pass)[x];
  return when >= 0 && when < round;
}

namespace {

// Builds one schedule: in round r each stage runs at most its next compute (or paired
// F&B) whose input arrived before r, then the round's messages go out phase by phase.
class LockStepBuilder {
 public:
  LockStepBuilder(ScheduleKind kind, int p, int v, int m, bool compact);
  PipelineSchedule build();

 private:
  // Each stage's next compute (or paired F&B) whose inputs arrived before `round`.
  // Whether any stage computed or was in the second round of a pair.
  bool place_computes(int round);
  // Appends stage s's next task, placed in `round`, and queues the message it produces.
  void place_next_task(int s, int round);
  // Each stage's first queued message of every lane that may go this round, into
  // outgoing_. Whether any message was waiting.
  bool choose_sends(int round);
  // The chosen messages as exchanges, one phase per lane, and their arrivals.
  void append_exchanges(int round);

  PipelineSchedule out_;
  LockStepState state_;
  RepeatFinder repeats_;
  // Outgoing message of each stage in the current round, per phase: activations of lane 0,
  // of lane 1, gradients of lane 0, of lane 1. A lane is a direction: round-robin
  // placements use lane 0 only (activations to the next rank, gradients to the previous
  // one); the V's chunk 1 (lane 1) runs the other way. So within a phase every stage
  // sends to the same neighbour side and receives at most one message.
  std::array<std::vector<std::optional<Transfer>>, 4> outgoing_;
  std::vector<PipeAction> phase_;  // [stage]: its exchange in the phase being listed
};

LockStepBuilder::LockStepBuilder(ScheduleKind kind, int p, int v, int m, bool compact)
    : state_(kind, p, v, m), repeats_(state_, compact), phase_(p) {
  out_.kind = kind;
  out_.stages = p;
  out_.chunks = v;
  out_.microbatches = m;
  out_.per_stage.resize(p);
  // At most 3*m*v computes (with W) and 4*m*v exchanges per stage (2*m*v messages sent and as
  // many received, at worst one per exchange): reserving avoids reallocation.
  if (!compact)  // a compact schedule lists a fraction of them
    for (auto& list : out_.per_stage) list.reserve(7 * static_cast<size_t>(m) * v);
  for (auto& o : outgoing_) o.assign(p, std::nullopt);
}

PipelineSchedule LockStepBuilder::build() {
  for (int round = 0; state_.remaining > 0; ++round) {
    repeats_.at_round_start(state_, out_, round);
    const bool computed = place_computes(round);
    const bool sending = choose_sends(round);
    if (!computed && !sending)
      throw RuntimeError("pipeline schedule construction stalled (internal error) in round " + std::to_string(round));
    append_exchanges(round);
    out_.rounds = round + 1;
  }
  if (!out_.repeats.empty()) return std::move(out_);  // no compute_order (build_compact_schedule)
  out_.compute_order.resize(state_.p);
  for (int s = 0; s < state_.p; ++s) out_.compute_order[s] = memory_order(out_.per_stage[s], out_.split_backward());
  return std::move(out_);
}

bool LockStepBuilder::place_computes(int round) {
  LockStepState& st = state_;
  bool progress = false;
  for (int s = 0; s < st.p; ++s) {
    if (st.busy_until[s] > round) {  // the second round of a pair
      progress = true;
      continue;
    }
    if (st.next[s] == st.order[s].size()) continue;
    // A paired F&B (dualpipev) starts when both inputs are there.
    const size_t count = st.order[s][st.next[s]].overlapped ? 2 : 1;
    bool all_ready = st.next[s] + count <= st.order[s].size();
    for (size_t k = 0; all_ready && k < count; ++k) all_ready = st.ready(st.order[s][st.next[s] + k], s, round);
    if (!all_ready) continue;
    st.busy_until[s] = round + static_cast<int>(count);
    for (size_t k = 0; k < count; ++k) place_next_task(s, round);
    progress = true;
  }
  return progress;
}

void LockStepBuilder::place_next_task(int s, int round) {
  LockStepState& st = state_;
  const ComputeTask t = st.order[s][st.next[s]];
  if (st.input_of(t, s) >= 0) --st.held[s];
  const int vs = out_.virtual_stage(s, t.chunk);
  PipeAction a = compute_action(t);
  a.round = round;
  out_.per_stage[s].push_back(a);
  ++st.next[s];
  --st.remaining;
  const bool sends = t.pass == Pass::forward ? vs < st.virtual_stages - 1 : t.pass == Pass::backward && vs > 0;
  if (!sends) return;
  const int dst = t.pass == Pass::forward ? vs + 1 : vs - 1;
  const StageChunk where = placement_of(st.kind, st.p, dst);
  const Payload payload = t.pass == Pass::forward ? Payload::activation : Payload::gradient;
  if (where.stage == s) {  // the V's tip: chunk 0 and chunk 1 of the last rank, no message
    st.arrivals(payload)[st.slot(t.microbatch, dst)] = st.busy_until[s] - 1;
    ++st.held[s];
    return;
  }
  const int lane = (payload == Payload::gradient ? 2 : 0) + (v_shaped(st.kind) && t.chunk == 1 ? 1 : 0);
  st.pending[s][lane].push_back(Transfer{payload, where.stage, t.microbatch, vs, dst, where.chunk});
}

bool LockStepBuilder::choose_sends(int round) {
  LockStepState& st = state_;
  for (auto& o : outgoing_) std::fill(o.begin(), o.end(), std::nullopt);
  bool progress = false;
  for (int s = 0; s < st.p; ++s)
    for (int lane = 0; lane < 4; ++lane) {
      auto& queue = st.pending[s][lane];
      if (queue.empty()) continue;
      progress = true;
      if (st.in_first_round_of_pair(s, round) || st.in_first_round_of_pair(queue.front().peer_stage, round)) continue;
      outgoing_[lane][s] = queue.front();
      queue.pop_front();
    }
  return progress;
}

void LockStepBuilder::append_exchanges(int round) {
  LockStepState& st = state_;
  for (const auto& sends : outgoing_) {
    std::fill(phase_.begin(), phase_.end(), PipeAction{});
    bool any = false;
    for (int s = 0; s < st.p; ++s) {
      if (!sends[s]) continue;
      any = true;
      Transfer send = *sends[s];
      const int dst_stage = send.peer_stage;
      Transfer recv = send;
      recv.peer_stage = s;
      phase_[s].send = send;
      phase_[dst_stage].recv = recv;
      ++st.held[dst_stage];
      st.arrivals(send.payload)[st.slot(send.microbatch, send.dst_virtual_stage)] = round;
    }
    if (!any) continue;
    for (int s = 0; s < st.p; ++s) {
      if (!phase_[s].send && !phase_[s].recv) continue;
      phase_[s].kind = ActionKind::exchange;
      phase_[s].round = round;
      out_.per_stage[s].push_back(phase_[s]);
    }
  }
}

}  // namespace

PipelineSchedule lock_step(ScheduleKind kind, int p, int v, int m, bool compact) {
  return LockStepBuilder(kind, p, v, m, compact).build();
}

}  // namespace ibt::models::schedule_internal
