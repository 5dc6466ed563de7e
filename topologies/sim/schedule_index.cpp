// The schedule index (ScheduleIndex, sim_fast.hpp): a pipeline schedule with what the
// fast walk and the search bounds derive from it (each exchange's partner, each chunk's
// last backward, the walk's packed per-action records, a compact schedule's held
// messages), and the process-wide caches that keep one per distinct schedule (the full
// index within a byte budget, the bound index and compute orders for the process).
#include "topologies/sim/sim_fast.hpp"

#include <stdexcept>

#include <algorithm>
#include <array>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "core/errors.hpp"

namespace ibt::topo {

using models::ActionKind;
using models::Transfer;

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

}  // namespace ibt::topo
