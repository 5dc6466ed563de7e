#pragma once
// Private to topologies/sim (sim_fast_internal.hpp says why): one pipeline stage's state
// in the fast walk (StageWalk) and the steps that advance it, shared by simulate_fast()
// (sim_fast.cpp) and the steady-state jump (steady_state.hpp): an action applied by its
// max-plus summary (apply) or walked op by op with simulate()'s arithmetic (walk_ops),
// the first stage's breakdowns remembered per template and offsets (BreakdownMemo), and
// every template of every stage priced and summarised (price_stages). The per-action
// steps are defined here, inline: the walk calls them 10^5 times per priced split.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

#include "models/plan/step_program.hpp"
#include "topologies/sim/sim_executor.hpp"
#include "topologies/sim/sim_fast.hpp"
#include "topologies/sim/template_summary.hpp"

namespace ibt::topo::fast {

using maxplus::kComm;
using maxplus::kCompute;
using maxplus::kGradComm;
using maxplus::kInputs;
using maxplus::kNever;
using maxplus::kReceived;
using maxplus::PricedTemplate;
using maxplus::stream_input;
using maxplus::Times;
using models::Op;
using models::Stream;

// One stage's walk state. Detailed stages also keep every op with its times (the
// arrays simulate() keeps) for stage_breakdown().
struct StageWalk {
  bool detailed = false;
  size_t next = 0;                    // next action
  Times free{0.0, 0.0, 0.0, kNever};  // streams free; [kReceived] unused
  double data_ready = kNever;         // when the last action's output can be sent (kNever: no wait)
  // Per action: when an exchange posted each half, and whether it has. One record, so
  // a peer matching it reads one cache line.
  struct Posted {
    double send = 0, recv = 0;
    bool done = false;
  };
  std::vector<Posted> posted;
  double p2p_free = 0;           // when the next exchange can be posted
  double p2p_done = 0;           // the latest exchange finish
  std::vector<double> received;  // [payload][mb * v + chunk]: arrival of a received message
  // Detailed only.
  std::vector<double> ex_ready;  // per action: an exchange's issue time (its receive's post, else its send's)
  std::vector<int> received_op;  // the exchange op that received a message
  std::vector<int> action_op;    // the op of an exchange action
  std::vector<Op> ops;
  std::vector<double> ready, finish, dur, transfer;
  int producer = -1, last_compute = -1, last_grad = -1;
  // Detailed with memoised breakdowns (BreakdownMemo): the breakdown booked so far.
  bool memo = false;
  size_t final_action = 0;  // the last forward/backward: always walked op by op
  StageTime booked;

  // Ready for a walk of `actions` actions and `slots` message slots. The vectors keep
  // their capacity from the thread's previous walk (walks_of_this_thread()): a search
  // walks 10^2-10^3 splits of up to 10^5 actions, and fresh arrays cost page faults
  // and zero-filling on every one.
  void reset(bool detail, bool memoised, size_t actions, size_t slots, size_t final);
};

// A stage blocked at action i is taken up again after every other stage has had its
// turn, by which time its next actions' records have left the cache: with a hundred
// stages the hardware cannot follow that many streams. Ask for them now.
inline void prefetch_ahead(const std::vector<ScheduleIndex::Step>& steps, const std::vector<StageWalk::Posted>& posted,
                           const StepTemplates& templates, int stage, size_t i) {
  constexpr size_t kAhead = 8;  // actions: a few of the stage's next forwards/backwards and exchanges
  const size_t last = std::min(steps.size(), i + kAhead) - 1;
  for (size_t k = i + 1; k <= last; k += 2) {
    __builtin_prefetch(&steps[k]);
    __builtin_prefetch(&posted[k]);
  }
  if (last > i) {
    __builtin_prefetch(&steps[last]);
    __builtin_prefetch(&posted[last]);
    __builtin_prefetch(&templates.template_of_row(stage)[last]);
  }
}

// The stage walks of this thread, reused from one simulate_fast() to the next.
std::vector<StageWalk>& walks_of_this_thread(int stages);

// The breakdown of the first stage, action by action. An action's exposed waits
// depend only on where its inputs lie relative to its start (the compute stream
// free): the comm and grad_comm streams free, the received input's arrival and that
// exchange's transfer. In the steady state of a schedule those offsets repeat action
// after action, so each (template, offsets) is walked op by op and broken down once
// and reused when the offsets agree within kTolerance of the current time. Exposures
// are 1-Lipschitz in the offsets (differences of max-plus functions), so a reuse errs
// by at most 2 x kTolerance x time x (compute ops of the action); the result is held to
// 1e-9 of the step time by tests/topologies/sim/sim_fast_test.cpp.
class BreakdownMemo {
 public:
  static constexpr double kTolerance = 1e-12;
  static constexpr size_t kEntriesPerTemplate = 8;
  struct Key {
    std::array<double, 4> offsets{};
    bool received = false;
  };
  explicit BreakdownMemo(size_t templates) : entries_(templates) {}

  const std::array<double, kNumExposures>* find(int id, const Key& key, double now) const {
    const double eps = kTolerance * std::max(1.0, now);
    for (const Entry& e : entries_[id]) {
      if (e.key.received != key.received) continue;
      bool same = true;
      for (size_t k = 0; k < key.offsets.size() && same; ++k)
        same = e.key.offsets[k] == key.offsets[k] || std::abs(e.key.offsets[k] - key.offsets[k]) <= eps;
      if (same) return &e.exposed;
    }
    return nullptr;
  }
  void add(int id, const Key& key, const std::array<double, kNumExposures>& exposed) {
    auto& list = entries_[id];
    if (list.size() == kEntriesPerTemplate) list.erase(list.begin());
    list.push_back({key, exposed});
  }

 private:
  struct Entry {
    Key key;
    std::array<double, kNumExposures> exposed{};
  };
  std::vector<std::vector<Entry>> entries_;
};

inline void add_into(StageTime& total, const StageTime& part) {
  total.compute_us += part.compute_us;
  for (int e = 0; e < kNumExposures; ++e) total.exposed_us[e] += part.exposed_us[e];
  for (int k = 0; k < kNumOpKinds; ++k) total.op_us[k] += part.op_us[k];
}

// Walks one action template instance op by op (simulate()'s arithmetic).
inline void walk_ops(StageWalk& w, const std::vector<Op>& ops, const std::vector<double>& dur, int producer,
                     int received_op) {
  const int base = static_cast<int>(w.ops.size());
  for (size_t k = 0; k < ops.size(); ++k) {
    Op op = ops[k];
    for (int& x : op.waits) {
      if (x >= 0)
        x += base;
      else if (x == models::kWaitReceived)
        x = received_op;
      else if (x == models::kWaitLastCompute)
        x = w.last_compute;
      else if (x == models::kWaitLastGrad)
        x = w.last_grad;
    }
    double waited = 0;
    for (int x : op.waits)
      if (x >= 0) waited = std::max(waited, w.finish[x]);
    const int s = stream_input(op.stream);
    const double ready = std::max(w.free[s], waited);
    const double finish = ready + dur[k];
    w.free[s] = finish;
    if (op.stream == Stream::compute) w.last_compute = static_cast<int>(w.ops.size());
    if (op.stream == Stream::grad_comm) w.last_grad = static_cast<int>(w.ops.size());
    w.ops.push_back(op);
    w.ready.push_back(ready);
    w.finish.push_back(finish);
    w.dur.push_back(dur[k]);
    w.transfer.push_back(0.0);
  }
  if (producer >= 0) {
    w.producer = base + producer;
    w.data_ready = w.finish[w.producer];
  } else {
    w.producer = -1;
    w.data_ready = kNever;
  }
}

// Applies a template's summary: the times of its outputs from the state's inputs.
inline void apply(StageWalk& w, const PricedTemplate& t, double received) {
  const Times in{w.free[kCompute], w.free[kComm], w.free[kGradComm], received};
  Times out;
  for (int k = 0; k < kInputs; ++k) {
    double v = kNever;
    for (int j = 0; j < kInputs; ++j) v = std::max(v, in[j] + t.table[k][j]);
    out[k] = v;
  }
  // A stream with no op in the template keeps its time (table entry 0 on itself).
  w.free[kCompute] = out[kCompute];
  w.free[kComm] = out[kComm];
  w.free[kGradComm] = out[kGradComm];
  w.data_ready = out[kReceived];
}

// Every template of every stage priced (each distinct op once per stage) and summarised.
struct PricedStages {
  std::vector<std::vector<PricedTemplate>> actions;  // [stage][template id]
  std::vector<PricedTemplate> tails;                 // [stage]
};

PricedStages price_stages(const StepTemplates& templates, OpPricer& pricer);

}  // namespace ibt::topo::fast
