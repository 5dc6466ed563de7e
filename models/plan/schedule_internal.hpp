#pragma once
// Private to models/plan: the pieces of the pipeline schedule builder (schedule.hpp) that
// its files share. Nothing outside models/plan includes this header; the public names
// are in schedule.hpp.
//
// Which file holds what:
//  - schedule.cpp: the vocabulary (names, message tags, layer ranges), the memory check
//    on a schedule's size, and build_schedule();
//  - schedule_orders.cpp: each stage's compute order, schedule by schedule, and the
//    checks on (kind, pp, vpp, microbatches);
//  - schedule_lock_step.cpp: the lock-step construction that places those orders in
//    rounds with their exchanges (LockStepState below is its state);
//  - schedule_compact.cpp: a compact schedule's repeats (build_compact_schedule,
//    expand_schedule, runs) found during the lock-step construction;
//  - schedule_memory.cpp: in-flight activations (compute_order, held_peaks, peak_held,
//    build_compute_orders);
//  - schedule_simulate.cpp: simulate_pipeline, the reference timing and deadlock check.
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "models/plan/schedule.hpp"

namespace ibt::models::schedule_internal {

// Throws UsageError when (kind, p, v, m) make no schedule (schedule.hpp, build_schedule).
void check_parameters(ScheduleKind kind, int p, int v, int m);

// The order in which stage `stage` runs its forwards, backwards and W's (schedule.hpp).
std::vector<ComputeTask> stage_compute_tasks(ScheduleKind kind, int p, int v, int m, int stage);

// Refuses (UsageError) a schedule whose actions cannot fit in memory (schedule_bytes).
void require_schedule_bytes(int p, int v, int m);

// The compute order memory accounting walks (PipelineSchedule::compute_order) of one
// stage's actions: +(chunk + 1) where a forward takes a chunk's activations, -(chunk + 1)
// where they are released: at the backward, or at the W with a split backward.
std::vector<std::int16_t> memory_order(const std::vector<PipeAction>& actions, bool split_backward);

// The lock-step construction (schedule.hpp): the whole schedule, or with `compact` its
// steady state listed once (build_compact_schedule). Parameters already checked.
PipelineSchedule lock_step(ScheduleKind kind, int p, int v, int m, bool compact);

// The lock-step construction's state between rounds: where each stage is in its compute
// order, which messages have arrived where, and what waits to be sent. The builder
// (schedule_lock_step.cpp) advances it round by round; RepeatFinder
// (schedule_compact.cpp) compares it with itself some rounds back and skips ahead.
struct LockStepState {
  LockStepState(ScheduleKind kind, int p, int v, int m);

  ScheduleKind kind;
  int p, v, m;
  int virtual_stages;                           // p * v
  std::vector<std::vector<ComputeTask>> order;  // [stage]: its compute tasks in order
  std::vector<size_t> next;                     // [stage]: index of its next task in order
  size_t remaining = 0;                         // tasks not yet placed, all stages
  // Round in which activation / gradient (mb, destination virtual stage) arrived, at
  // slot(mb, vs); -1 = not yet. A message delivered in round r can be used from round r+1.
  std::vector<int> act_arrival, grad_arrival;
  // A paired F&B takes two rounds (two unit-time computes): its stage is busy through
  // round busy_until - 1, and appends nothing between its two rounds. So a message is
  // exchanged in the first round in which neither side is in the first round of a pair
  // (the exchange then runs, on both sides, when both are between computes: rendezvous
  // sends never wait for a pair to end), at most one per stage and lane a round, first
  // in, first out. Without pairs every message goes in the round it was produced.
  std::vector<int> busy_until;                               // [stage]
  std::vector<std::array<std::deque<Transfer>, 4>> pending;  // [stage][lane], lanes as in outgoing
  // held[s]: messages arrived at stage s that no compute has consumed yet.
  std::vector<int> held;

  size_t slot(int mb, int vs) const { return static_cast<size_t>(mb) * virtual_stages + vs; }
  // The arrival rounds of activations or gradients.
  std::vector<int>& arrivals(Payload payload) { return payload == Payload::activation ? act_arrival : grad_arrival; }
  // The arrival rounds of what a pass consumes: activations for a forward, else gradients.
  std::vector<int>& input_arrivals(Pass pass) { return pass == Pass::forward ? act_arrival : grad_arrival; }
  const std::vector<int>& input_arrivals(Pass pass) const { return pass == Pass::forward ? act_arrival : grad_arrival; }
  // The message a task consumes (its slot in act_arrival / grad_arrival), -1 for none:
  // a W (the order put it after its B, on this stage), the first virtual stage's
  // forwards and the last one's backwards.
  long input_of(const ComputeTask& t, int s) const;
  // Whether the task's input arrived before `round` (a message delivered in round r can
  // be used from round r + 1).
  bool arrived_before(const ComputeTask& t, int s, int round) const;
  bool ready(const ComputeTask& t, int s, int round) const { return input_of(t, s) < 0 || arrived_before(t, s, round); }
  bool in_first_round_of_pair(int s, int round) const { return busy_until[s] > round + 1; }
};

// A compact schedule's repeats (build_compact_schedule says how they are found), looked
// for at each round's start of the lock-step construction.
class RepeatFinder {
 public:
  // Inactive (finds nothing) unless `compact`, the placement is not V-shaped and stage 0
  // has a period at its middle.
  RepeatFinder(const LockStepState& state, bool compact);
  // At the start of `round`: when the state repeats the one c rounds back, lists the
  // repetition in out.repeats and moves `state` and `round` on past the periods that
  // repeat; then remembers the state at `round`'s start.
  void at_round_start(LockStepState& state, PipelineSchedule& out, int& round);

 private:
  // The state at a round's start, as repeats_from compares it.
  struct Boundary {
    std::vector<size_t> next, listed;
    std::vector<int> held;
  };
  // At the start of `round`, with the state at round - c in `then`: the number of periods
  // that repeat from here (0: none), and each stage's tasks per period and look-ahead.
  size_t repeats_from(const LockStepState& state, int round, const Boundary& then);
  // Lists the repetition and moves the state `periods` periods on.
  void skip_periods(LockStepState& state, PipelineSchedule& out, int& round, const Boundary& then, size_t periods);
  void record(const LockStepState& state, const PipelineSchedule& out, int round);

  int c_ = 0;  // rounds per period: one task a round in the steady state (0: inactive)
  std::vector<Boundary> ring_;
  int recorded_from_ = 0;  // the ring holds boundaries from here on (a repeat skips rounds)
  std::vector<size_t> per_period_, window_;
  int shift_ = 0;
};

}  // namespace ibt::models::schedule_internal
