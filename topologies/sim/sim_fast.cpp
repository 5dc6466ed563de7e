#include "topologies/sim/sim_fast.hpp"

#include <stdexcept>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>

#include "core/errors.hpp"
#include "topologies/sim/chunk_parts.hpp"
#include "topologies/sim/stage_prices.hpp"
#include "topologies/sim/template_summary.hpp"

namespace ibt::topo {

using models::ActionKind;
using models::ActionTemplate;
using models::Group;
using models::Op;
using models::OpKind;
using models::Stream;
using models::Transfer;

using namespace maxplus;

namespace {

// Where a received message waits for its consumer: [payload][microbatch * v + chunk].
size_t slot(const Transfer& t, int chunks, int microbatches) {
  return (t.payload == models::Payload::activation ? 0 : static_cast<size_t>(microbatches) * chunks) +
         static_cast<size_t>(t.microbatch) * chunks + t.dst_chunk;
}

ActionKind kind_of(const models::PipeAction& a) { return a.kind; }
ActionKind kind_of(const models::ComputeTask& t) { return models::action_kind(t.pass); }

// The fields of ScheduleIndex that read the stage's compute actions only (all but
// partner), for stage s from its actions (with the exchanges between them, PipeActions,
// or without, ComputeTasks: they compare and count compute actions by their order on
// the stage, which is the same), stages in order.
template <typename Action>
void index_computes(ScheduleIndex& ix, int s, const std::vector<Action>& actions) {
  // A compact schedule's repeated actions count as often as they run.
  auto runs = [&](int i) { return models::runs(ix.schedule, s, i); };
  const int P = ix.schedule.stages;
  const int V = ix.schedule.chunks;
  if (s == 0) {
    ix.last_backward.assign(P, std::vector<int>(V, -1));
    ix.last_grads.assign(P, std::vector<int>(V, -1));
    ix.chunk_order.assign(P, {});
  }
  const ActionKind completes = ix.schedule.split_backward() ? ActionKind::weight : ActionKind::backward;
  for (int i = 0; i < static_cast<int>(actions.size()); ++i) {
    const auto& a = actions[i];
    if (kind_of(a) == ActionKind::backward) ix.last_backward[s][a.chunk] = i;
    if (kind_of(a) == completes) ix.last_grads[s][a.chunk] = i;
  }
  const int L = ix.last_backward[s][0];
  int first = -1;
  for (int i = 0; i < static_cast<int>(actions.size()) && first < 0; ++i)
    if (kind_of(actions[i]) != ActionKind::exchange) first = i;
  ix.first_action.push_back(first);
  ix.between.emplace_back(2 * V, 0);
  ix.after.emplace_back(2 * V, 0);
  ix.between_weight.emplace_back(V, 0);
  ix.after_weight.emplace_back(V, 0);
  for (int i = first + 1; i < static_cast<int>(actions.size()); ++i) {
    const auto& a = actions[i];
    if (kind_of(a) == ActionKind::exchange) continue;
    if (kind_of(a) == ActionKind::weight) {
      if (ix.last_grads[s][a.chunk] != i) (i < L ? ix.between_weight : ix.after_weight)[s][a.chunk] += runs(i);
      continue;
    }
    const bool backward = kind_of(a) == ActionKind::backward;
    if (backward && ix.last_backward[s][a.chunk] == i) continue;
    const int slot = a.chunk * 2 + (backward ? 1 : 0);
    if (i < L)
      ix.between[s][slot] += runs(i);
    else
      ix.after[s][slot] += runs(i);
  }
  std::vector<int>& order = ix.chunk_order[s];
  for (int c = 0; c < V; ++c) order.push_back(c);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return ix.last_grads[s][a] < ix.last_grads[s][b]; });
}

// ScheduleIndex::steps and final_action, from the schedule and partner.
void index_steps(ScheduleIndex& ix) {
  const auto& per_stage = ix.schedule.per_stage;
  const int P = static_cast<int>(per_stage.size());
  const int V = ix.schedule.chunks, M = ix.schedule.microbatches;
  ix.steps.resize(P);
  ix.final_action.assign(P, 0);
  for (int s = 0; s < P; ++s) {
    const auto& actions = per_stage[s];
    ix.steps[s].resize(actions.size());
    for (int i = 0; i < static_cast<int>(actions.size()); ++i) {
      const models::PipeAction& a = actions[i];
      ScheduleIndex::Step& step = ix.steps[s][i];
      step.kind = a.kind;
      if (a.kind == ActionKind::exchange) {
        step.send = a.send.has_value();
        step.recv = a.recv.has_value();
        if (a.send) step.send_peer = a.send->peer_stage;
        if (a.recv) step.recv_peer = a.recv->peer_stage;
        step.send_partner = ix.partner[s][i][0];
        step.recv_partner = ix.partner[s][i][1];
        if (a.recv) step.slot = static_cast<int>(slot(*a.recv, V, M));
        continue;
      }
      ix.final_action[s] = i;
      // The exchange that received its input: none for a W, the first virtual stage's
      // forwards and the last one's backwards.
      const int vs = ix.schedule.virtual_stage(s, a.chunk);
      const bool forward = a.kind == ActionKind::forward;
      if (a.kind == ActionKind::weight || (forward ? vs == 0 : vs == ix.schedule.virtual_stages() - 1)) continue;
      Transfer t;
      t.payload = forward ? models::Payload::activation : models::Payload::gradient;
      t.microbatch = a.microbatch;
      t.dst_chunk = a.chunk;
      step.slot = static_cast<int>(slot(t, V, M));
    }
  }
}

// ScheduleIndex::held of each repeat: a period's receives matched with the inputs of
// the same period (the slot a later repetition's input reads is a receive's slot +
// later x shift x v), or not jumpable when one is left unmatched.
void index_repeats(ScheduleIndex& ix) {
  const int V = ix.schedule.chunks;
  const long messages = static_cast<long>(ix.schedule.microbatches) * V;  // slots per payload
  for (const models::ScheduleRepeat& r : ix.schedule.repeats) {
    std::vector<std::vector<ScheduleIndex::Held>> stages(ix.stages());
    bool matched = true;
    int latest = 0;
    const long step = static_cast<long>(r.microbatch_shift) * V;
    for (int s = 0; s < ix.stages() && matched; ++s) {
      std::vector<long> receives, inputs;
      for (int i = r.begin[s]; i < r.end[s]; ++i) {
        const ScheduleIndex::Step& a = ix.steps[s][i];
        if (a.slot < 0) continue;
        (a.kind == ActionKind::exchange ? receives : inputs).push_back(a.slot);
      }
      std::sort(inputs.begin(), inputs.end());
      std::vector<char> used(inputs.size(), 0);
      for (const long x : receives) {
        int later = -1;
        for (int e = 0; e < r.times && later < 0; ++e) {
          const long y = x - e * step;
          if (y < 0 || (y < messages) != (x < messages)) break;  // another payload
          const auto it = std::lower_bound(inputs.begin(), inputs.end(), y);
          if (it != inputs.end() && *it == y && !used[it - inputs.begin()]) {
            used[it - inputs.begin()] = 1;
            later = e;
          }
        }
        if (later < 0)
          matched = false;
        else if (later > 0)
          stages[s].push_back({static_cast<int>(x), later});
        latest = std::max(latest, later);
      }
      for (const char u : used) matched = matched && u;
    }
    ix.held.push_back(matched ? std::move(stages) : std::vector<std::vector<ScheduleIndex::Held>>{});
    ix.jumpable.push_back(matched);
    ix.latest_input.push_back(latest);
  }
}
}  // namespace

std::shared_ptr<const ScheduleIndex> index_schedule(models::PipelineSchedule schedule) {
  auto ix = std::make_shared<ScheduleIndex>();
  ix->schedule = std::move(schedule);
  const auto& per_stage = ix->schedule.per_stage;
  const int P = ix->stages();
  // Where each message is sent and received, by simulate()'s message identity (payload,
  // microbatch, source virtual stage): dense arrays, every message of a step one slot.
  struct At {
    int stage = -1, action = -1;
  };
  const size_t M = static_cast<size_t>(ix->schedule.microbatches), VS = ix->schedule.virtual_stages();
  auto message = [&](const Transfer& t) {
    return (static_cast<size_t>(t.payload) * M + static_cast<size_t>(t.microbatch)) * VS + t.src_virtual_stage;
  };
  std::vector<At> sent_at(2 * M * VS), received_at(2 * M * VS);
  for (int s = 0; s < P; ++s)
    for (int i = 0; i < static_cast<int>(per_stage[s].size()); ++i) {
      const auto& a = per_stage[s][i];
      if (a.send) sent_at[message(*a.send)] = {s, i};
      if (a.recv) received_at[message(*a.recv)] = {s, i};
    }
  ix->partner.resize(P);
  for (int s = 0; s < P; ++s) {
    ix->partner[s].assign(per_stage[s].size(), {-1, -1});
    for (int i = 0; i < static_cast<int>(per_stage[s].size()); ++i) {
      const auto& a = per_stage[s][i];
      // The peer's half of the same message, which must be on the stage the transfer names.
      auto match = [&](const Transfer& t, const std::vector<At>& at) {
        const At& other = at[message(t)];
        if (other.stage != t.peer_stage)
          throw RuntimeError("sim: stage " + std::to_string(t.peer_stage) +
                             " has no exchange matching a message sent to it");
        return other.action;
      };
      if (a.send) ix->partner[s][i][0] = match(*a.send, received_at);
      if (a.recv) ix->partner[s][i][1] = match(*a.recv, sent_at);
    }
  }
  for (int s = 0; s < P; ++s) index_computes(*ix, s, per_stage[s]);
  index_steps(*ix);
  index_repeats(*ix);
  return ix;
}

namespace {
std::shared_ptr<const ScheduleIndex> make_index(const models::ParallelSplit& split) {
  return index_schedule(models::build_compact_schedule(split));
}

std::shared_ptr<const ScheduleIndex> make_bound_index(const models::ParallelSplit& split) {
  auto ix = std::make_shared<ScheduleIndex>();
  ix->kept.resize(split.pp);
  // Each stage's compute tasks indexed as they are made, and the few it names kept.
  auto index_stage = [&](int s, const std::vector<models::ComputeTask>& tasks) {
    index_computes(*ix, s, tasks);
    std::vector<int> named{ix->first_action[s]};
    named.insert(named.end(), ix->last_backward[s].begin(), ix->last_backward[s].end());
    named.insert(named.end(), ix->last_grads[s].begin(), ix->last_grads[s].end());
    std::sort(named.begin(), named.end());
    named.erase(std::unique(named.begin(), named.end()), named.end());
    for (int i : named)
      if (i >= 0) ix->kept[s].emplace_back(i, models::compute_action(tasks[i]));
  };
  // index_computes reads the schedule's header (stages, chunks, kind): set before the tasks.
  ix->schedule.kind = split.schedule;
  ix->schedule.stages = split.pp;
  ix->schedule.chunks = split.vpp;
  ix->schedule.microbatches = split.microbatches;
  ix->schedule = models::build_compute_orders(split, index_stage);
  return ix;
}

// Templates per chunk: forward, backward, backward with the overlapped gradient ops,
// and with a split backward (zb-h1) W, W with the overlapped gradient ops (the
// backward is then B and never reduces).
constexpr int kVariants = 5;
int template_id(int chunk, int variant) { return chunk * kVariants + variant; }
bool reduces_gradients(int id) { return id % kVariants == 2 || id % kVariants == 4; }
models::Pass pass_of(int id) {
  const int variant = id % kVariants;
  return variant == 0 ? models::Pass::forward : variant <= 2 ? models::Pass::backward : models::Pass::weight;
}
// The template of a forward, backward or W action.
int template_for(const ScheduleIndex& ix, int stage, int action, bool overlap_grad_reduce) {
  const auto& a = ix.action(stage, action);
  const bool reduce = overlap_grad_reduce && ix.last_grads[stage][a.chunk] == action;
  if (a.kind == ActionKind::forward) return template_id(a.chunk, 0);
  if (a.kind == ActionKind::weight) return template_id(a.chunk, reduce ? 4 : 3);
  return template_id(a.chunk, reduce ? 2 : 1);
}

}  // namespace

namespace {
// One T per distinct schedule (kind, p, v, m), built by make(split) and kept in `cache`
// (thread-safe): for the life of the process, or, with a byte budget, until the entries
// kept since exceed it (the oldest go first; one in use lives on with its users).
template <typename T>
struct ScheduleCache {
  using Key = std::tuple<int, int, int, int>;
  ScheduleCache() = default;
  ScheduleCache(double budget, std::function<double(const T&)> bytes)
      : budget_bytes(budget), bytes_of(std::move(bytes)) {}
  std::mutex mutex;
  std::map<Key, std::shared_ptr<const T>> entries;
  double budget_bytes = 0;  // 0: no budget
  std::function<double(const T&)> bytes_of;
  std::deque<std::pair<Key, double>> kept;  // with a budget: entries by age, and their bytes
  double kept_bytes = 0;
};
template <typename T, typename Make>
std::shared_ptr<const T> per_schedule(ScheduleCache<T>& cache, const models::ParallelSplit& split, Make&& make) {
  const typename ScheduleCache<T>::Key key{static_cast<int>(split.schedule), split.pp, split.vpp, split.microbatches};
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    const auto it = cache.entries.find(key);
    if (it != cache.entries.end()) return it->second;
  }
  std::shared_ptr<const T> built = make(split);  // outside the lock: another thread may build it too
  std::lock_guard<std::mutex> lock(cache.mutex);
  const auto [it, added] = cache.entries.emplace(key, std::move(built));
  if (added && cache.budget_bytes > 0) {
    const double bytes = cache.bytes_of(*it->second);
    cache.kept.emplace_back(key, bytes);
    cache.kept_bytes += bytes;
    while (cache.kept_bytes > cache.budget_bytes && cache.kept.size() > 1) {
      cache.entries.erase(cache.kept.front().first);
      cache.kept_bytes -= cache.kept.front().second;
      cache.kept.pop_front();
    }
  }
  return it->second;
}
}  // namespace

namespace {
// A full index holds every listed action of the step (a compact lock-step schedule with
// its exchanges, and the walk's records): a steady state once, so thousands of actions
// where a deep pipeline runs 10^6-10^7, but every action of a schedule whose steady
// state was not found. Kept within a budget all the same, so that a search over such
// splits reuses its memory instead of growing by each one.
ScheduleCache<ScheduleIndex>& full_indexes() {
  static ScheduleCache<ScheduleIndex> cache(1024.0 * 1024 * 1024, schedule_index_bytes);
  return cache;
}
}  // namespace

double schedule_index_bytes(const ScheduleIndex& ix) {
  double actions = 0;
  for (const auto& stage : ix.schedule.per_stage) actions += static_cast<double>(stage.size());
  return actions * (sizeof(models::PipeAction) + sizeof(ScheduleIndex::Step) + sizeof(std::array<int, 2>));
}

void set_schedule_index_budget(double bytes) {
  ScheduleCache<ScheduleIndex>& cache = full_indexes();
  std::lock_guard<std::mutex> lock(cache.mutex);
  cache.budget_bytes = bytes;
}

std::shared_ptr<const ScheduleIndex> schedule_index(const models::ParallelSplit& split) {
  return per_schedule(full_indexes(), split, make_index);
}

std::shared_ptr<const ScheduleIndex> schedule_bound_index(const models::ParallelSplit& split) {
  static ScheduleCache<ScheduleIndex> cache;
  return per_schedule(cache, split, make_bound_index);
}

std::shared_ptr<const models::PipelineSchedule> schedule_compute_orders(const models::ParallelSplit& split) {
  std::shared_ptr<const ScheduleIndex> index = schedule_bound_index(split);
  const models::PipelineSchedule* schedule = &index->schedule;
  return {std::move(index), schedule};  // shares the index's ownership
}

const models::PipeAction& ScheduleIndex::action(int s, int i) const {
  if (!schedule.per_stage.empty()) return schedule.per_stage[s][i];
  const auto& list = kept[s];
  const auto it = std::lower_bound(list.begin(), list.end(), i, [](const auto& e, int k) { return e.first < k; });
  if (it == list.end() || it->first != i)
    throw std::logic_error("sim_fast: the bound index keeps no action " + std::to_string(i) + " of stage " +
                           std::to_string(s));
  return it->second;
}

StepTemplates::StepTemplates(const models::ModelConfig& model, const models::ParallelSplit& split,
                             const models::StepProgramOptions& options)
    : split_(split), index_(schedule_index(split)) {
  models::validate(split, model, split.world_size());
  if (split.schedule == models::ScheduleKind::dualpipev)
    throw UsageError(
        "the fast walk cannot price dualpipev (its paired forward-backward actions interleave "
        "their ops; sim_fast.hpp fast_walk_prices): price it with simulate() on the step programs");
  exchange_bytes_ = models::pipeline_message_bytes(model, split, options);
  const int P = split.pp, V = split.vpp;
  templates_.resize(P);
  action_template_.resize(P);
  tails_.resize(P);
  for (int s = 0; s < P; ++s) {
    templates_[s].resize(static_cast<size_t>(V) * kVariants);
    for (int c = 0; c < V; ++c) {
      templates_[s][template_id(c, 0)] =
          models::build_action_template(model, split, s, c, models::Pass::forward, false, options);
      templates_[s][template_id(c, 1)] =
          models::build_action_template(model, split, s, c, models::Pass::backward, false, options);
      const bool split_backward = index_->schedule.split_backward();
      if (options.overlap_grad_reduce && !split_backward)
        templates_[s][template_id(c, 2)] =
            models::build_action_template(model, split, s, c, models::Pass::backward, true, options);
      if (split_backward) {
        templates_[s][template_id(c, 3)] =
            models::build_action_template(model, split, s, c, models::Pass::weight, false, options);
        if (options.overlap_grad_reduce)
          templates_[s][template_id(c, 4)] =
              models::build_action_template(model, split, s, c, models::Pass::weight, true, options);
      }
    }
    const auto& actions = index_->schedule.per_stage[s];
    action_template_[s].assign(actions.size(), -1);
    for (int i = 0; i < static_cast<int>(actions.size()); ++i)
      if (actions[i].kind != ActionKind::exchange)
        action_template_[s][i] = template_for(*index_, s, i, options.overlap_grad_reduce);
    tails_[s] = models::build_tail_template(model, split, s, index_->chunk_order[s], options);
  }
}

double StepTemplates::op_walk_bytes(bool all_stages) const {
  double ops = 0;
  const int stages = all_stages ? split_.pp : 1;
  for (int s = 0; s < stages; ++s) {
    for (size_t i = 0; i < action_template_[s].size(); ++i) {
      const int id = action_template_[s][i];  // walked each time it runs
      ops += models::runs(index_->schedule, s, static_cast<int>(i)) *
             (id < 0 ? 1.0 : static_cast<double>(templates_[s][id].ops.size()));
    }
    ops += static_cast<double>(tails_[s].size());
  }
  return 2.0 * ops * (sizeof(models::Op) + 4 * sizeof(double));
}

namespace {

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
  void reset(bool detail, bool memoised, size_t actions, size_t slots, size_t final) {
    detailed = detail;
    memo = memoised;
    next = 0;
    free = {0.0, 0.0, 0.0, kNever};
    data_ready = kNever;
    posted.assign(actions, Posted{});
    p2p_free = p2p_done = 0;
    received.assign(slots, kNever);
    ex_ready.clear();
    received_op.clear();
    action_op.clear();
    if (detailed) {
      ex_ready.assign(actions, 0.0);
      received_op.assign(slots, -1);
      action_op.assign(actions, -1);
    }
    ops.clear();
    ready.clear();
    finish.clear();
    dur.clear();
    transfer.clear();
    producer = last_compute = last_grad = -1;
    final_action = final;
    booked = StageTime{};
  }
};

// A stage blocked at action i is taken up again after every other stage has had its
// turn, by which time its next actions' records have left the cache: with a hundred
// stages the hardware cannot follow that many streams. Ask for them now.
void prefetch_ahead(const std::vector<ScheduleIndex::Step>& steps, const std::vector<StageWalk::Posted>& posted,
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
std::vector<StageWalk>& walks_of_this_thread(int stages) {
  thread_local std::vector<StageWalk> walks;
  if (walks.size() < static_cast<size_t>(stages)) walks.resize(stages);
  return walks;
}

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

void add_into(StageTime& total, const StageTime& part) {
  total.compute_us += part.compute_us;
  for (int e = 0; e < kNumExposures; ++e) total.exposed_us[e] += part.exposed_us[e];
  for (int k = 0; k < kNumOpKinds; ++k) total.op_us[k] += part.op_us[k];
}

// Walks one action template instance op by op (simulate()'s arithmetic).
void walk_ops(StageWalk& w, const std::vector<Op>& ops, const std::vector<double>& dur, int producer, int received_op) {
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
void apply(StageWalk& w, const PricedTemplate& t, double received) {
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

PricedStages price_stages(const StepTemplates& templates, OpPricer& pricer) {
  const int P = templates.split().pp;
  PricedStages out;
  out.actions.resize(P);
  out.tails.resize(P);
  for (int s = 0; s < P; ++s) {
    StagePrices prices(pricer, s);
    for (int id = 0; id < templates.templates_per_stage(s); ++id) {
      const ActionTemplate& t = templates.action_template(s, id);
      out.actions[s].push_back(summarise(t.ops, prices(t.ops), t.producer));
    }
    out.tails[s] = summarise(templates.tail(s), prices(templates.tail(s)), -1);
  }
  return out;
}

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

  // After repetition j has been walked: the repetitions to jump over (0: none), the walk
  // moved past them. The state is compared at repetitions further and further apart
  // while it does not repeat (gaps 1, 2, 4 ... kMaxGap), and kept only for the few before
  // each comparison: stages that drift apart for the whole schedule would otherwise pay
  // a state and a comparison for every repetition, as much as walking it.
  int after(int j) {
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
  std::vector<double> state(int j) const {
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

  // Whether every moving time of `now` is `then`'s + the first stage's compute
  // increment, within kJumpTolerance x scale of the time reached.
  bool repeats(const std::vector<double>& now, const std::vector<double>& then, double scale) const {
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

  // The state n repetitions after j, from the repetitions j - i .. j.
  void jump(int j, int n, int i, const Seen& now, const Seen& then) {
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

}  // namespace

SimResult simulate_fast(const StepTemplates& templates, OpPricer& pricer, StageDetail detail) {
  const ScheduleIndex& ix = templates.index();
  const auto& per_stage = ix.schedule.per_stage;
  const int P = static_cast<int>(per_stage.size());
  const int V = ix.schedule.chunks, M = ix.schedule.microbatches;

  PricedStages priced_stages = price_stages(templates, pricer);
  const std::vector<std::vector<PricedTemplate>>& priced = priced_stages.actions;
  const std::vector<PricedTemplate>& tails = priced_stages.tails;
  // Exchange halves cost the same for every message between two stages.
  models::StepProgram stub;
  Op exchange;
  exchange.kind = OpKind::pp_exchange;
  exchange.group = Group::pp;
  exchange.stream = Stream::p2p;
  exchange.bytes = templates.exchange_bytes();
  std::vector<double> half_cost(static_cast<size_t>(P) * P, -1.0);
  auto half_us = [&](int stage, int peer) {
    double& c = half_cost[static_cast<size_t>(stage) * P + peer];
    if (c < 0) {
      stub.stage = stage;
      c = pricer.exchange_half_us(stub, exchange, peer);
    }
    return c;
  };

  std::vector<StageWalk>& walks = walks_of_this_thread(P);
  for (int s = 0; s < P; ++s)
    walks[s].reset(detail == StageDetail::all || s == 0, detail == StageDetail::first && s == 0, per_stage[s].size(),
                   2 * static_cast<size_t>(M) * V, ix.final_action[s]);

  // The memoised first stage: a forward/backward walked op by op and broken down, or
  // its summary applied and a remembered breakdown booked. The chunks' last backwards
  // with overlapped reductions and the stage's final action are always walked: the
  // tail's waits reach into them.
  BreakdownMemo memo(P == 0 ? 0 : static_cast<size_t>(templates.templates_per_stage(0)));
  std::vector<StageTime> template_totals;  // compute_us and op_us of each template
  if (P > 0 && walks[0].memo)
    for (int id = 0; id < templates.templates_per_stage(0); ++id) {
      StageTime t;
      const auto& ops = templates.action_template(0, id).ops;
      for (size_t k = 0; k < ops.size(); ++k) {
        t.op_us[static_cast<int>(ops[k].kind)] += priced[0][id].dur[k];
        if (ops[k].stream == Stream::compute) t.compute_us += priced[0][id].dur[k];
      }
      template_totals.push_back(t);
    }
  auto book_action = [&](StageWalk& w, int s, int action, int id, long long in) {
    const double now = w.free[kCompute];
    BreakdownMemo::Key key;
    key.received = in >= 0;
    key.offsets = {w.free[kComm] - now, w.free[kGradComm] - now, 0.0, 0.0};
    if (key.received) {
      const int op = w.received_op[in];
      key.offsets[2] = w.finish[op] - now;
      key.offsets[3] = w.transfer[op];
    }
    // Inputs that move no op of the action are left out of the key (the grad_comm
    // stream's time, say, when the action has no gradient reduction).
    const Times& below = priced[s][id].irrelevant_below;
    if (key.offsets[0] <= below[kComm]) key.offsets[0] = kNever;
    if (key.offsets[1] <= below[kGradComm]) key.offsets[1] = kNever;
    if (key.received && key.offsets[2] <= below[kReceived]) key.offsets[2] = key.offsets[3] = kNever;
    const bool always = static_cast<size_t>(action) == w.final_action || reduces_gradients(id);
    const auto* known = always ? nullptr : memo.find(id, key, now);
    if (known) {
      apply(w, priced[s][id], key.received ? w.received[in] : kNever);
      w.producer = -1;  // not in the op list: a later exchange's wait is not booked through it
      StageTime part = template_totals[id];
      part.exposed_us = *known;
      add_into(w.booked, part);
      return;
    }
    BreakdownRange range;
    range.first = w.ops.size();
    range.compute_free = now;
    range.step_end = false;
    const ActionTemplate& t = templates.action_template(s, id);
    walk_ops(w, t.ops, priced[s][id].dur, priced[s][id].producer, key.received ? w.received_op[in] : -1);
    const StageTime part = stage_breakdown(s, w.ops, w.ready, w.finish, w.dur, w.transfer, range);
    add_into(w.booked, part);
    if (!always) memo.add(id, key, part.exposed_us);
  };

  // Walks every stage from its next action to limit[s], the slots of received messages
  // moved by `shift` (a repetition of a compact schedule's period). The actions before
  // a round boundary complete among themselves (an exchange pairs within its round, an
  // action's input arrived in an earlier one), so every stage reaches its limit.
  auto walk_to = [&](const std::vector<size_t>& limit, int shift) {
    size_t remaining = 0;
    for (int s = 0; s < P; ++s) remaining += limit[s] - walks[s].next;
    while (remaining > 0) {
      bool progress = false;
      for (int s = 0; s < P; ++s) {
        StageWalk& w = walks[s];
        const std::vector<ScheduleIndex::Step>& steps = ix.steps[s];
        while (w.next < limit[s]) {
          const size_t i = w.next;
          const ScheduleIndex::Step& a = steps[i];
          const int slot = a.slot < 0 ? -1 : a.slot + shift;
          if (a.kind != ActionKind::exchange) {
            const int id = templates.template_of(s, static_cast<int>(i));
            const long long in = slot;
            if (w.memo) {
              book_action(w, s, static_cast<int>(i), id, in);
            } else if (w.detailed) {
              const ActionTemplate& t = templates.action_template(s, id);
              walk_ops(w, t.ops, priced[s][id].dur, priced[s][id].producer, in >= 0 ? w.received_op[in] : -1);
            } else {
              apply(w, priced[s][id], in >= 0 ? w.received[in] : kNever);
            }
          } else {
            StageWalk::Posted& mine = w.posted[i];
            if (!mine.done) {
              // simulate(): the receive posted when the p2p stream reaches it, the send
              // when its data is produced too.
              mine.recv = w.p2p_free;
              mine.send = std::max(w.p2p_free, a.send ? std::max(0.0, w.data_ready) : 0.0);
              mine.done = true;
              progress = true;
              if (w.detailed) {
                w.ex_ready[i] = a.recv ? mine.recv : mine.send;
                Op op;
                op.kind = OpKind::pp_exchange;
                op.group = Group::pp;
                op.stream = Stream::p2p;
                op.bytes = templates.exchange_bytes();
                op.action = static_cast<int>(i);
                if (a.send && w.producer >= 0) op.waits[0] = w.producer;
                w.action_op[i] = static_cast<int>(w.ops.size());
                w.ops.push_back(op);
                w.ready.push_back(w.ex_ready[i]);
                w.finish.push_back(0.0);
                w.dur.push_back(0.0);
                w.transfer.push_back(0.0);
              }
            }
            // Our send meets the peer's receive, our receive the peer's send; the
            // slower half's transfer is the exchange's.
            double send_done = 0.0, recv_done = 0.0, transfer = 0.0;
            bool blocked = false;
            // One half: done when both sides have posted, the transfer after the later.
            auto meet = [&](int peer, int partner, double posted_here, bool peer_sends, double& done) {
              const StageWalk::Posted& theirs = walks[peer].posted[partner];
              const double c = half_us(s, peer);
              transfer = std::max(transfer, c);
              if (theirs.done)
                done = std::max(posted_here, peer_sends ? theirs.send : theirs.recv) + c;
              else
                blocked = true;
            };
            if (a.send) meet(a.send_peer, a.send_partner, mine.send, false, send_done);
            if (a.recv) meet(a.recv_peer, a.recv_partner, mine.recv, true, recv_done);
            if (blocked) {
              prefetch_ahead(steps, w.posted, templates, s, i);
              break;
            }
            const double done = a.recv ? recv_done : send_done;
            w.p2p_free = std::max(mine.send, mine.recv);
            w.p2p_done = std::max(w.p2p_done, done);
            if (a.recv) w.received[slot] = done;
            if (w.detailed) {
              const int op = w.action_op[i];
              w.finish[op] = done;
              w.dur[op] = done - w.ex_ready[i];
              w.transfer[op] = transfer;
              if (a.recv) w.received_op[slot] = op;
              if (w.memo) w.booked.op_us[static_cast<int>(OpKind::pp_exchange)] += w.dur[op];
            }
          }
          ++w.next;
          --remaining;
          progress = true;
        }
      }
      if (!progress) {
        std::string stuck;
        for (int s = 0; s < P; ++s)
          if (walks[s].next < limit[s])
            stuck += (stuck.empty() ? "" : ", ") + std::to_string(s) + " at action " + std::to_string(walks[s].next);
        throw RuntimeError("sim: the pipeline exchanges cannot complete (stuck stages: " + stuck + ")");
      }
    }
  };

  // The listed actions in the order they run: those before each repeat, its period as
  // often as it runs (each repetition's messages in slots shift x v further), and those
  // after the last. With StageDetail::first a repeat's repetitions may be jumped over
  // (SteadyState: once the walk's state repeats, shifted).
  const auto& repeats = ix.schedule.repeats;
  long jumped = 0;
  std::vector<size_t> limit(P);
  for (size_t r = 0;; ++r) {
    for (int s = 0; s < P; ++s) limit[s] = r < repeats.size() ? repeats[r].begin[s] : per_stage[s].size();
    walk_to(limit, 0);
    if (r == repeats.size()) break;
    const models::ScheduleRepeat& rep = repeats[r];
    for (int s = 0; s < P; ++s) limit[s] = rep.end[s];
    std::optional<SteadyState> steady;
    if (detail == StageDetail::first && ix.jumpable[r]) steady.emplace(ix, r, templates, priced, walks);
    for (int j = 0; j < rep.times; ++j) {
      for (int s = 0; s < P; ++s) {
        StageWalk& w = walks[s];
        w.next = rep.begin[s];
        for (int i = rep.begin[s]; i < rep.end[s]; ++i) w.posted[i].done = false;
      }
      walk_to(limit, j * rep.microbatch_shift * V);
      if (!steady) continue;
      const int skip = steady->after(j);
      j += skip;
      jumped += skip;
    }
    for (int s = 0; s < P; ++s) walks[s].next = rep.end[s];
  }

  SimResult result;
  result.jumped_repetitions = jumped;
  for (int s = 0; s < P; ++s) {
    StageWalk& w = walks[s];
    StageTime st;
    if (w.memo) {
      BreakdownRange range;
      range.first = w.ops.size();
      range.compute_free = w.free[kCompute];
      walk_ops(w, templates.tail(s), tails[s].dur, -1, -1);
      const StageTime tail = stage_breakdown(s, w.ops, w.ready, w.finish, w.dur, w.transfer, range);
      st = w.booked;
      add_into(st, tail);
      st.stage = s;
      st.finish_us = tail.finish_us;
    } else if (w.detailed) {
      walk_ops(w, templates.tail(s), tails[s].dur, -1, -1);
      st = stage_breakdown(s, w.ops, w.ready, w.finish, w.dur, w.transfer);
    } else {
      apply(w, tails[s], kNever);
      st.stage = s;
      st.finish_us = std::max({0.0, w.free[kCompute], w.free[kComm], w.free[kGradComm], w.p2p_done});
    }
    result.step_us = std::max(result.step_us, st.finish_us);
    result.stages.push_back(st);
  }
  for (auto& st : result.stages) st.exposed_us[static_cast<int>(Exposure::bubble)] += result.step_us - st.finish_us;
  return result;
}

namespace {

// A template the bounds build once per split and price on every pricer; with several
// pricers (a crossover row's fabrics) its ops' classes, so that each prices only the
// distinct ones.
struct BoundTemplate {
  ActionTemplate t;
  std::optional<OpClasses> classes;
};

// step_lower_bound() on one pricer; summary(s, id, prices) gives template id of stage s
// summarised, tail(s) the stage's tail.
// shared(s, id, summarise) returns the summary of template id of stage s from the
// search's BoundTemplates, calling summarise() for one not known there.
template <typename SummaryOf, typename TailOf, typename Shared>
double lower_bound_on(const ScheduleIndex& ix, SummaryOf&& summary, TailOf&& tail_of, double exchange_bytes,
                      bool overlap_grad_reduce, bool with_tail, Shared&& shared, OpPricer& pricer) {
  const int P = ix.stages();
  const int V = ix.schedule.chunks;
  std::vector<std::optional<StagePrices>> prices(P);
  std::vector<std::map<int, Table>> priced(P);
  auto priced_template = [&](int s, int id) -> const Table& {
    auto it = priced[s].find(id);
    if (it != priced[s].end()) return it->second;
    return priced[s]
        .emplace(id, shared(s, id,
                            [&] {
                              if (!prices[s]) prices[s].emplace(pricer, s);
                              return summary(s, id, *prices[s]);
                            }))
        .first->second;
  };
  auto template_of = [&](int s, int i) { return template_for(ix, s, i, overlap_grad_reduce); };
  // The same without the overlapped reductions (variant 2 -> 1, 4 -> 3): a lower bound on
  // the reducing one (it holds the same ops and fewer: family_lower_bounds says why) that
  // the search's splits share (template_key), where a reducing one is built and priced
  // per split.
  auto plain_template = [&](int s, int i) {
    const int id = template_of(s, i);
    return reduces_gradients(id) ? id - 1 : id;
  };

  // in[j] + entry, where either may be kNever (no dependence, or no known time).
  auto plus = [](double t, double entry) { return t == kNever || entry == kNever ? kNever : t + entry; };
  // An output's bound from bounds on the inputs.
  auto out_bound = [&](const Table& t, int output, const Times& in) {
    double v = kNever;
    for (int j = 0; j < kInputs; ++j) v = std::max(v, plus(in[j], t[output][j]));
    return v;
  };
  // The compute stream's time through an action from its own start (>= its compute).
  auto busy = [&](int s, int id) { return std::max(0.0, priced_template(s, id)[kCompute][kCompute]); };
  models::StepProgram stub;
  Op exchange;
  exchange.kind = OpKind::pp_exchange;
  exchange.group = Group::pp;
  exchange.stream = Stream::p2p;
  exchange.bytes = exchange_bytes;
  auto half_us = [&](int stage, int peer) {
    stub.stage = stage;
    return pricer.exchange_half_us(stub, exchange, peer);
  };
  // A stage's action compute back to back after its first action, split at its last
  // chunk-0 backward (exclusive on both sides). `plain`: the chunks' last backwards (or
  // W's) counted by their plain templates, as the middle stages of a deep pipeline are.
  auto busy_before_after = [&](int s, bool plain) {
    auto last_template = [&](int action) { return plain ? plain_template(s, action) : template_of(s, action); };
    const int first = ix.first_action[s], L = ix.last_backward[s][0];
    double before = 0, after = 0;
    for (int c = 0; c < V; ++c) {
      if (ix.between[s][c * 2]) before += ix.between[s][c * 2] * busy(s, template_id(c, 0));
      if (ix.between[s][c * 2 + 1]) before += ix.between[s][c * 2 + 1] * busy(s, template_id(c, 1));
      if (ix.after[s][c * 2]) after += ix.after[s][c * 2] * busy(s, template_id(c, 0));
      if (ix.after[s][c * 2 + 1]) after += ix.after[s][c * 2 + 1] * busy(s, template_id(c, 1));
      if (ix.between_weight[s][c]) before += ix.between_weight[s][c] * busy(s, template_id(c, 3));
      if (ix.after_weight[s][c]) after += ix.after_weight[s][c] * busy(s, template_id(c, 3));
      // A split backward's last W (it may carry the chunk's reductions).
      const int last_w = ix.schedule.split_backward() ? ix.last_grads[s][c] : -1;
      if (last_w > first) (last_w < L ? before : after) += busy(s, last_template(last_w));
      const int last = ix.last_backward[s][c];
      if (c == 0 || last == first) continue;
      (last < L ? before : after) += busy(s, last_template(last));
    }
    return std::pair<double, double>{before, after};
  };

  // The fill: stage s's first action waits for microbatch 0's activation, which the
  // first forwards of stages 0..s-1 produce in turn.
  std::vector<double> first_free(P, 0.0);  // compute stream after the stage's first action
  double upstream_ready = kNever;          // stage s-1's first forward output
  bool chain = true;
  for (int s = 0; s < P; ++s) {
    const int i = ix.first_action[s];
    const auto& a = ix.action(s, i);
    chain = chain && a.kind == ActionKind::forward && a.chunk == 0 && a.microbatch == 0;
    const double received = s > 0 && chain ? plus(upstream_ready, half_us(s, s - 1)) : kNever;
    const Table& t = priced_template(s, template_of(s, i));
    const Times in{0.0, 0.0, 0.0, received};
    first_free[s] = std::max(0.0, out_bound(t, kCompute, in));
    upstream_ready = out_bound(t, kReceived, in);
    chain = chain && upstream_ready != kNever;
  }

  // The drain, from the last stage down: each stage's last chunk-0 backward waits for
  // the same microbatch's gradient from the next stage, and every stage counts its
  // actions' compute. The first and the last stage add their step-end tail; the middle
  // ones leave it out (built per split, and a deep pipeline has dozens) and take their
  // chunks' last backwards (the drain's too) plain. A middle stage bounds the step where the layers do
  // not divide evenly: the remainder goes to the middle stages (models/plan/schedule.hpp
  // stage_layers), so they, not the first and last, are the busiest.
  double bound = 0;
  double downstream_ready = kNever;  // stage s+1's last chunk-0 backward output
  int downstream_microbatch = -1;
  for (int s = P - 1; s >= 0; --s) {
    const bool edge = s == 0 || s == P - 1;
    const int first = ix.first_action[s];
    const int L = ix.last_backward[s][0];
    const auto [between, after] = busy_before_after(s, !edge);
    const double before = first_free[s] + between;
    double end = before;
    if (L > first) {
      const auto& a = ix.action(s, L);
      const bool linked = s < P - 1 && a.microbatch == downstream_microbatch;
      const double received = linked ? plus(downstream_ready, half_us(s, s + 1)) : kNever;
      const Table& t = priced_template(s, edge ? template_of(s, L) : plain_template(s, L));
      const Times in{before, 0.0, 0.0, received};
      end = std::max(before, out_bound(t, kCompute, in));
      downstream_ready = out_bound(t, kReceived, in);
      downstream_microbatch = downstream_ready == kNever ? -1 : a.microbatch;
    } else {
      downstream_ready = kNever;
      downstream_microbatch = -1;
    }
    if (!with_tail || !edge) {
      bound = std::max(bound, end + after);
      continue;
    }
    if (!prices[s]) prices[s].emplace(pricer, s);
    const std::vector<Op>& tail = tail_of(s);
    const PricedTemplate t = summarise(tail, (*prices[s])(tail), -1);
    end += after + std::max(0.0, t.table[kCompute][kCompute]);
    bound = std::max(bound, end);
  }
  return bound;
}

}  // namespace

struct BoundTemplates::Known {
  // template_key()s, hashed: a search looks up 10^5 of them, 10^5 times over.
  struct KeyHash {
    size_t operator()(const std::vector<long long>& key) const {
      std::uint64_t h = 0;
      for (const long long v : key) h = (h ^ static_cast<std::uint64_t>(v)) * 0x100000001b3ULL + 0x9e3779b97f4a7c15ULL;
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };
  size_t pricers = 0;
  std::mutex mutex;
  std::unordered_map<std::vector<long long>, Table, KeyHash> tables;
  // The chunk parts' summaries (part_key()), under the same mutex.
  std::unordered_map<std::vector<long long>, PartSummary, KeyHash> parts;

  // map's entry for key, or make()'s result stored there. make() runs outside the lock
  // (another thread may make the same entry meanwhile; the first one stored is kept).
  template <typename Map, typename Make>
  typename Map::mapped_type remembered(Map& map, const std::vector<long long>& key, Make&& make) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      const auto it = map.find(key);
      if (it != map.end()) return it->second;
    }
    typename Map::mapped_type made = make();
    std::lock_guard<std::mutex> lock(mutex);
    return map.emplace(key, std::move(made)).first->second;
  }
};

BoundTemplates::BoundTemplates(size_t pricers) : known_(std::make_unique<Known>()) { known_->pricers = pricers; }
BoundTemplates::~BoundTemplates() = default;

namespace {

// What a template's prices depend on, for splits of one model and world size on one
// pricer: the split's fields that shape its ops (not pp, vpp, m or dp: its layers are
// named by their count; nor ZeRO-0/1: they add no op to these), the template's pass,
// its layers (the dense ones come first, model_config.hpp layer_is_moe) and whether it
// holds the embedding or the head (the first and last virtual stage: they also decide
// whether it receives its input and sends its output), whether the schedule splits the
// backward (zb-h1: a backward then holds the input-gradient halves only), and the
// pricer. A variant carrying overlapped reductions (reduces_gradients) also depends on
// what they reduce over and how: dp (with tp, cp, ep and the shard group, keyed
// already; the pricer places the DP groups from them alone) and the ZeRO stage
// (all-reduce or reduce-scatter).
std::vector<long long> template_key(const models::ModelConfig& model, const models::ParallelSplit& split,
                                    const models::PipelineSchedule& schedule, int stage, int id, size_t pricer) {
  const int vs = schedule.virtual_stage(stage, id / kVariants);
  const int V = schedule.virtual_stages();
  const models::LayerRange r = models::stage_layers(model, V, vs);
  const int dense = model.is_moe() ? std::clamp(model.first_dense_layers - r.first, 0, r.count) : r.count;
  // A forward's ops are the same whatever the recompute and whether the backward is
  // split (both change only backward ops: models/plan/step_layers.cpp), so the forwards of
  // a family's representative, its members and its 1F1B/ZB-H1/interleaved kin share one.
  const bool forward = pass_of(id) == models::Pass::forward;
  const bool reducing = reduces_gradients(id);
  return {split.tp,
          split.cp,
          static_cast<long long>(split.cp_comm),
          split.ep,
          split.micro_batch_size,
          split.sequence_parallel,
          forward ? -1 : static_cast<long long>(split.recompute),
          split.zero >= 2 ? split.zero : 0,
          split.shard_group,
          id % kVariants,
          forward ? -1 : models::splits_backward(split.schedule),
          dense,
          r.count - dense,
          vs == 0,
          vs == V - 1,
          reducing ? split.dp : -1,
          reducing ? split.zero : -1,
          static_cast<long long>(pricer)};
}

// What a chunk part's prices depend on (template_key's fields for one part): the split's
// fields that shape its ops, its pass, which part (and for a layer, dense or MoE), and
// the pricer.
std::vector<long long> part_key(const models::ModelConfig& model, const models::ParallelSplit& split, models::Pass pass,
                                models::ChunkPart part, int layer, size_t pricer) {
  const bool forward = pass == models::Pass::forward;
  return {split.tp,
          split.cp,
          static_cast<long long>(split.cp_comm),
          split.ep,
          split.micro_batch_size,
          split.sequence_parallel,
          forward ? -1 : static_cast<long long>(split.recompute),
          static_cast<long long>(pass),
          forward ? -1 : models::splits_backward(split.schedule),
          static_cast<long long>(part),
          part == models::ChunkPart::layer ? model.layer_is_moe(layer) : -1,
          static_cast<long long>(pricer)};
}

}  // namespace

namespace {

// step_lower_bound() of `split` on each pricer: with_tail adds the stage's step-end
// tail, overlap_grad_reduce takes the chunks' last backwards with their gradient ops.
std::vector<double> lower_bounds(const models::ModelConfig& model, const models::ParallelSplit& split,
                                 const models::StepProgramOptions& options, bool overlap_grad_reduce, bool with_tail,
                                 const std::vector<OpPricer*>& pricers, BoundTemplates* known) {
  const std::shared_ptr<const ScheduleIndex> index = schedule_bound_index(split);
  const ScheduleIndex& ix = *index;
  const int P = ix.stages();
  // Templates with overlapped reductions (the others are composed from their parts,
  // below) are built on demand, once for every pricer.
  std::vector<std::map<int, BoundTemplate>> built(P);
  std::vector<std::optional<std::vector<Op>>> tails(P);
  auto action = [&](int s, int id) -> const BoundTemplate& {
    auto it = built[s].find(id);
    if (it != built[s].end()) return it->second;
    BoundTemplate b;
    b.t = models::build_action_template(model, split, s, id / kVariants, pass_of(id), reduces_gradients(id), options);
    if (pricers.size() > 1) b.classes = op_classes(b.t.ops);
    return built[s].emplace(id, std::move(b)).first->second;
  };
  auto tail = [&](int s) -> const std::vector<Op>& {
    if (!tails[s]) tails[s] = models::build_tail_template(model, split, s, ix.chunk_order[s], options);
    return *tails[s];
  };
  const double exchange_bytes = models::pipeline_message_bytes(model, split, options);
  // A bound asked for outside a search remembers its parts and templates for itself.
  BoundTemplates own(pricers.size());
  BoundTemplates::Known& shared_known = (known ? *known : own).known();
  if (shared_known.pricers != pricers.size())
    throw std::logic_error("sim_fast: BoundTemplates shared by bounds on different pricers");
  std::vector<double> out;
  for (size_t k = 0; k < pricers.size(); ++k) {
    // A part's summary: a known one, or built, priced and summarised once.
    auto part_summary = [&](int s, models::Pass pass, models::ChunkPart part, int layer,
                            StagePrices& prices) -> PartSummary {
      return shared_known.remembered(shared_known.parts, part_key(model, split, pass, part, layer, k), [&] {
        return summarise_part(models::build_part_template(model, split, s, pass, part, layer, options), prices);
      });
    };
    // Template id of stage s summarised: composed from its parts (chunk_parts.hpp), or
    // from its ops where overlapped reductions or ZeRO-2/3 reach across its layers.
    auto summary = [&](int s, int id, StagePrices& prices) -> Table {
      if (reduces_gradients(id) || split.zero >= 2) {
        const BoundTemplate& b = action(s, id);
        return summarise(b.t.ops, b.classes ? prices(*b.classes) : prices(b.t.ops), b.t.producer).table;
      }
      const models::Pass pass = pass_of(id);
      return summarise_by_parts(model, split, s, id / kVariants, pass, [&](models::ChunkPart part, int layer) {
        return part_summary(s, pass, part, layer, prices);
      });
    };
    auto shared = [&](int s, int id, auto&& summarise_it) -> Table {
      return shared_known.remembered(shared_known.tables, template_key(model, split, ix.schedule, s, id, k),
                                     summarise_it);
    };
    out.push_back(
        lower_bound_on(ix, summary, tail, exchange_bytes, overlap_grad_reduce, with_tail, shared, *pricers[k]));
  }
  return out;
}

}  // namespace

std::vector<double> step_lower_bounds(const models::ModelConfig& model, const models::ParallelSplit& given,
                                      const models::StepProgramOptions& options, const std::vector<OpPricer*>& pricers,
                                      BoundTemplates* known) {
  // ZeRO-2/3 (and HSDP) splits: the fast walk's templates cannot carry their per-unit
  // streams (fast_walk_prices), so they are bounded by their ZeRO-1 sibling, the same
  // split with the states sharded only at the step's end, without that tail. Its
  // forwards and backwards hold the same compute and the same TP/EP/CP/PP collectives;
  // ZeRO-2/3 only add waits (gathers before a unit, reductions after it), which can
  // only make the compute stream later. The tail is left out because ZeRO-1's one
  // reduce-scatter and gather at the step's end are what ZeRO-2/3 spread over the step.
  const bool sibling = !fast_walk_prices(given);
  models::ParallelSplit split = given;
  if (sibling) split.zero = 1;
  return lower_bounds(model, split, options, options.overlap_grad_reduce, !sibling, pricers, known);
}

double step_lower_bound(const models::ModelConfig& model, const models::ParallelSplit& split,
                        const models::StepProgramOptions& options, OpPricer& pricer) {
  return step_lower_bounds(model, split, options, {&pricer}, nullptr).front();
}

models::ParallelSplit bound_family(const models::ParallelSplit& split) {
  models::ParallelSplit family = split;
  family.recompute = models::Recompute::none;
  family.zero = 0;
  family.shard_group = 0;
  return family;
}

std::vector<double> family_lower_bounds(const models::ModelConfig& model, const models::ParallelSplit& split,
                                        const models::StepProgramOptions& options,
                                        const std::vector<OpPricer*>& pricers, BoundTemplates* known) {
  // The family's representative without recompute, ZeRO, gradient reductions or the
  // step-end tail: every member's templates hold its ops and more (sim_fast.hpp).
  return lower_bounds(model, bound_family(split), options, false, false, pricers, known);
}

}  // namespace ibt::topo
