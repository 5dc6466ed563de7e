#pragma once
// Private to topologies/sim (sim_fast_internal.hpp says why): SteadyState, the jump of
// simulate_fast() (sim_fast.cpp) over the repetitions of a compact schedule's steady
// state once the walk's state repeats, every time moved by the same amount.
#include <cstddef>
#include <vector>

#include "models/plan/schedule.hpp"
#include "topologies/sim/sim_fast.hpp"
#include "topologies/sim/stage_walk.hpp"
#include "topologies/sim/template_summary.hpp"

namespace ibt::topo::fast {

// Jumps over repetitions of a compact schedule's period (models::ScheduleRepeat) once
// the walk's state repeats. The state after a repetition: per stage its streams free
// (compute, comm, grad_comm), when its last output is ready, its p2p stream free and
// latest exchange finish, and the messages it holds for later repetitions
// (ScheduleIndex::held). Each of those times after a repetition is a max-plus function
// of the state before it (x'_k = max_l(x_l + A_kl), sums and maxima only), the same for
// every repetition: homogeneous (every input + t gives every output + t) and
// 1-Lipschitz in the max norm. So when the state after repetition j is the state after
// j - i with every time + delta, to within e, every further i repetitions add delta
// again to within e, and n more repetitions (a multiple of i) leave the state after j
// plus (n / i) delta, each time moved by its own increment, to within (n / i) e. The walk
// jumps only when that is at most kJumpTolerance of the time reached: far below the
// 1e-9 of the step time the fast walk is held to (tests/topologies/sim/sim_fast_test.cpp).
// Times no action of the period moves (a stream none of its templates uses, the p2p
// times of a stage without exchanges, an output that is never ready) are constants:
// not compared, not moved. The first stage's breakdown (StageDetail::first) books the
// same parts each repetition once its offsets repeat (they are the state's differences),
// so it grows by (n / i) times what the last i repetitions booked.
class SteadyState {
 public:
  static constexpr double kJumpTolerance = 1e-10;
  static constexpr int kMaxCycle = 3;  // repetitions the state may take to repeat
  static constexpr int kMaxGap = 32;   // repetitions between comparisons, at most

  SteadyState(const ScheduleIndex& ix, size_t repeat, const StepTemplates& templates,
              const std::vector<std::vector<PricedTemplate>>& priced, std::vector<StageWalk>& walks);

  // After repetition j has been walked: the repetitions to jump over (0: none), the walk
  // moved past them. The state is compared at repetitions further and further apart
  // while it does not repeat (gaps 1, 2, 4 ... kMaxGap), and kept only for the few before
  // each comparison: stages that drift apart for the whole schedule would otherwise pay
  // a state and a comparison for every repetition, as much as walking it.
  int after(int j);

 private:
  enum { kDataReady = kReceived, kP2pFree, kP2pDone, kTimes };  // after the three streams
  struct Seen {
    int j;
    std::vector<double> times;
    StageTime booked;
  };

  // The slot a held message of repetition `j - t` fills.
  int slot(const ScheduleIndex::Held& h, int j, int t) const { return h.slot + (j - t) * step_; }

  // Laid out stage by stage from offset_[stage]: its kTimes times, then its held
  // messages (ScheduleIndex::held order, each message's repetitions j, j - 1 ...).
  std::vector<double> state(int j) const;

  // Whether every moving time of `now` is `then`'s + the first stage's compute
  // increment, within kJumpTolerance x scale of the time reached.
  bool repeats(const std::vector<double>& now, const std::vector<double>& then, double scale) const;

  // The state n repetitions after j, from the repetitions j - i .. j.
  void jump(int j, int n, int i, const Seen& now, const Seen& then);

  const ScheduleIndex& ix_;
  const models::ScheduleRepeat& rep_;
  const std::vector<std::vector<ScheduleIndex::Held>>& held_;
  std::vector<StageWalk>& walks_;
  int from_ = 0, step_ = 0;
  int check_at_ = 0, gap_ = 1;  // the next comparison, and the gap to it
  std::vector<char> moving_;    // [stage * kTimes + time]
  std::vector<size_t> offset_;  // [stage]: where its times begin in a state; [stages]: the size
  std::vector<Seen> seen_;      // the states after the last few repetitions
};

}  // namespace ibt::topo::fast
