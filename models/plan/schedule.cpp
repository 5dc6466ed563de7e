// Pipeline schedules (schedule.hpp): the vocabulary (names, message tags, the layers of
// a virtual stage), the memory check on a schedule's size, and the lock-step
// construction behind build_schedule() and build_compact_schedule(). The rest of the
// builder lives beside it (schedule_internal.hpp lists the files).
#include "models/plan/schedule.hpp"

#include <cstdint>

#include <algorithm>
#include <array>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>

#include "core/errors.hpp"
#include "core/memory_plan.hpp"
#include "models/plan/schedule_internal.hpp"

namespace ibt::models {

using schedule_internal::check_parameters;
using schedule_internal::memory_order;
using schedule_internal::require_schedule_bytes;
using schedule_internal::stage_compute_tasks;

ActionKind action_kind(Pass p) {
  return p == Pass::forward ? ActionKind::forward : p == Pass::backward ? ActionKind::backward : ActionKind::weight;
}

PipeAction compute_action(const ComputeTask& t) {
  PipeAction a;
  a.kind = action_kind(t.pass);
  a.microbatch = t.microbatch;
  a.chunk = t.chunk;
  a.overlapped = t.overlapped;
  return a;
}

double schedule_bytes(int p, int v, int m) {
  return static_cast<double>(p) * 7.0 * static_cast<double>(m) * v * sizeof(PipeAction);
}

namespace schedule_internal {
namespace {
// Below this a schedule is never refused: searches build thousands of small schedules,
// and reading the available memory for each would cost more than building it.
constexpr double kPlannedFrom = 256.0 * 1024 * 1024;
}  // namespace

void require_schedule_bytes(int p, int v, int m) {
  const double bytes = schedule_bytes(p, v, m);
  if (bytes < kPlannedFrom) return;
  require_memory(bytes, "the pipeline schedule of " + std::to_string(m) + " microbatches x " + std::to_string(v) +
                            " chunks on " + std::to_string(p) +
                            " stages (--microbatches, or the global batch / "
                            "(dp x micro-batch size))");
}
}  // namespace schedule_internal

void require_schedule_memory(const ParallelSplit& split) {
  require_schedule_bytes(split.pp, split.vpp, split.microbatches);
}

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

PipelineSchedule lock_step(ScheduleKind kind, int p, int v, int m, bool compact);
}  // namespace

PipelineSchedule build_schedule(ScheduleKind kind, int p, int v, int m) {
  check_parameters(kind, p, v, m);
  require_schedule_bytes(p, v, m);
  return lock_step(kind, p, v, m, false);
}

PipelineSchedule build_compact_schedule(const ParallelSplit& split) {
  check_parameters(split.schedule, split.pp, split.vpp, split.microbatches);
  return lock_step(split.schedule, split.pp, split.vpp, split.microbatches, true);
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
    out.compute_order[s] = memory_order(list, out.split_backward());
  }
  return out;
}

namespace {
PipelineSchedule lock_step(ScheduleKind kind, int p, int v, int m, bool compact) {
  PipelineSchedule out;
  out.kind = kind;
  out.stages = p;
  out.chunks = v;
  out.microbatches = m;
  out.per_stage.resize(p);
  // At most 3*m*v computes (with W) and 4*m*v exchanges per stage (2*m*v messages sent and as
  // many received, at worst one per exchange): reserving avoids reallocation.
  if (!compact)  // a compact schedule lists a fraction of them
    for (auto& list : out.per_stage) list.reserve(7 * static_cast<size_t>(m) * v);
  const int V = p * v;

  std::vector<std::vector<ComputeTask>> order(p);
  for (int s = 0; s < p; ++s) order[s] = stage_compute_tasks(kind, p, v, m, s);
  std::vector<size_t> next(p, 0);
  // Round in which activation / gradient (mb, destination virtual stage) arrived;
  // -1 = not yet. A message delivered in round r can be used from round r+1.
  std::vector<int> act_arrival(static_cast<size_t>(m) * V, -1);
  std::vector<int> grad_arrival(static_cast<size_t>(m) * V, -1);
  auto at = [V](int mb, int vs) { return static_cast<size_t>(mb) * V + vs; };

  size_t remaining = 0;
  for (auto& o : order) remaining += o.size();
  // Outgoing message of each stage in the current round, per phase: activations of lane 0,
  // of lane 1, gradients of lane 0, of lane 1. A lane is a direction: round-robin
  // placements use lane 0 only (activations to the next rank, gradients to the previous
  // one); the V's chunk 1 (lane 1) runs the other way. So within a phase every stage
  // sends to the same neighbour side and receives at most one message.
  std::array<std::vector<std::optional<Transfer>>, 4> outgoing;
  for (auto& o : outgoing) o.assign(p, std::nullopt);
  std::vector<PipeAction> phase(p);
  // The message a task consumes (its index in act_arrival / grad_arrival), -1 for none:
  // a W (the order put it after its B, on this stage), the first virtual stage's
  // forwards and the last one's backwards.
  auto input_of = [&](const ComputeTask& t, int s) -> long {
    const int vs = out.virtual_stage(s, t.chunk);
    if (t.pass == Pass::weight || (t.pass == Pass::forward ? vs == 0 : vs == V - 1)) return -1;
    return static_cast<long>(at(t.microbatch, vs));
  };
  // Whether the task's input arrived before `round` (a message delivered in round r can
  // be used from round r + 1).
  auto arrived_before = [&](const ComputeTask& t, int s, int round) {
    const long x = input_of(t, s);
    if (x < 0) return false;
    const int when = (t.pass == Pass::forward ? act_arrival : grad_arrival)[x];
    return when >= 0 && when < round;
  };
  auto ready = [&](const ComputeTask& t, int s, int round) {
    return input_of(t, s) < 0 || arrived_before(t, s, round);
  };
  // A paired F&B takes two rounds (two unit-time computes): its stage is busy through
  // round busy_until - 1, and appends nothing between its two rounds. So a message is
  // exchanged in the first round in which neither side is in the first round of a pair
  // (the exchange then runs, on both sides, when both are between computes: rendezvous
  // sends never wait for a pair to end), at most one per stage and lane a round, first
  // in, first out. Without pairs every message goes in the round it was produced.
  std::vector<int> busy_until(p, 0);
  std::vector<std::array<std::deque<Transfer>, 4>> pending(p);
  auto in_first_round_of_pair = [&](int s, int round) { return busy_until[s] > round + 1; };

  // A compact schedule's repeats (build_compact_schedule says how they are found).
  // held[s]: messages arrived at stage s that no compute has consumed yet.
  std::vector<int> held(p, 0);
  OrderPeriod period;
  if (compact && !v_shaped(kind) && !order[0].empty()) {
    period = order_period(order[0], order[0].size() / 2);
    if (period.tasks == 0) period = order_period(order[0], order[0].size() / 4);
  }
  const int c = period.tasks;  // rounds per period: one task a round in the steady state
  struct Boundary {
    std::vector<size_t> next, listed;
    std::vector<int> held;
  };
  std::vector<Boundary> ring(c > 0 ? c + 1 : 0);
  int recorded_from = 0;  // the ring holds boundaries from here on (a repeat skips rounds)
  // At the start of `round`, with the state at round - c in `then`: the number of periods
  // that repeat from here (0: none), and each stage's tasks per period and look-ahead.
  std::vector<size_t> per_period(p), window(p);
  int shift = 0;
  auto repeats_from = [&](int round, const Boundary& then) -> size_t {
    for (int s = 0; s < p; ++s)
      if (next[s] == order[s].size() || next[s] == then.next[s] || held[s] != then.held[s]) return 0;
    for (int s = 0; s < p; ++s)
      for (const auto& queue : pending[s])
        if (!queue.empty()) return 0;
    shift = order[0][next[0]].microbatch - order[0][then.next[0]].microbatch;
    if (shift <= 0) return 0;
    for (int s = 0; s < p; ++s) {
      per_period[s] = next[s] - then.next[s];
      // The held messages: the inputs of the same coming tasks, then and now.
      int found_now = 0, found_then = 0;
      size_t i = 0;
      for (; found_now < held[s] || found_then < then.held[s]; ++i) {
        if (next[s] + i >= order[s].size()) return 0;
        const ComputeTask& t_then = order[s][then.next[s] + i];
        const ComputeTask& t_now = order[s][next[s] + i];
        if (!shifted(t_then, t_now, shift)) return 0;
        const bool now_held = arrived_before(t_now, s, round);
        const bool then_held = arrived_before(t_then, s, round - c);
        if (now_held != then_held) return 0;
        found_now += now_held;
        found_then += then_held;
      }
      window[s] = i;
    }
    // How far each order repeats with period per_period[s]: the repeated periods'
    // tasks and the look-ahead after them must be shifts of the ones seen. One more
    // period is left listed after them, so that no listed period holds a chunk's last
    // forward, backward or W (which the sim prices apart: the overlapped reductions,
    // the tail's waits) and the repeats never end the schedule.
    size_t periods = std::numeric_limits<size_t>::max();
    for (int s = 0; s < p; ++s) {
      const size_t a = then.next[s], d = per_period[s];
      size_t run = 0;
      while (a + d + run < order[s].size() && shifted(order[s][a + run], order[s][a + d + run], shift)) ++run;
      periods = std::min(periods, run >= window[s] + d ? (run - window[s] - d) / d : 0);
    }
    return periods;
  };
  auto record = [&](int round) {
    Boundary& b = ring[static_cast<size_t>(round) % ring.size()];
    b.next = next;
    b.listed.resize(p);
    for (int s = 0; s < p; ++s) b.listed[s] = out.per_stage[s].size();
    b.held = held;
  };

  for (int round = 0; remaining > 0; ++round) {
    if (c > 0) {
      const Boundary* then = round - c >= recorded_from ? &ring[static_cast<size_t>(round - c) % ring.size()] : nullptr;
      const size_t periods = then ? repeats_from(round, *then) : 0;
      if (periods > 0) {
        ScheduleRepeat r;
        r.first_round = round - c;
        r.rounds = c;
        r.times = static_cast<int>(periods) + 1;
        r.microbatch_shift = shift;
        for (int s = 0; s < p; ++s) {
          r.begin.push_back(static_cast<int>(then->listed[s]));
          r.end.push_back(static_cast<int>(out.per_stage[s].size()));
        }
        out.repeats.push_back(std::move(r));
        // The state `periods` periods on: the same positions and held messages, shifted.
        const int mb_shift = static_cast<int>(periods) * shift, round_shift = static_cast<int>(periods) * c;
        for (int s = 0; s < p; ++s) {
          for (size_t i = 0; i < window[s]; ++i) {
            const ComputeTask& t = order[s][next[s] + i];
            if (!arrived_before(t, s, round)) continue;
            auto& arrival = t.pass == Pass::forward ? act_arrival : grad_arrival;
            const int vs = out.virtual_stage(s, t.chunk);
            arrival[at(t.microbatch + mb_shift, vs)] = arrival[at(t.microbatch, vs)] + round_shift;
          }
          next[s] += periods * per_period[s];
          remaining -= periods * per_period[s];
        }
        round += round_shift;
        recorded_from = round;
      }
      record(round);
    }
    for (auto& o : outgoing) std::fill(o.begin(), o.end(), std::nullopt);
    bool progress = false;
    for (int s = 0; s < p; ++s) {
      if (busy_until[s] > round) {  // the second round of a pair
        progress = true;
        continue;
      }
      if (next[s] == order[s].size()) continue;
      // A paired F&B (dualpipev) starts when both inputs are there.
      const size_t count = order[s][next[s]].overlapped ? 2 : 1;
      bool all_ready = next[s] + count <= order[s].size();
      for (size_t k = 0; all_ready && k < count; ++k) all_ready = ready(order[s][next[s] + k], s, round);
      if (!all_ready) continue;
      busy_until[s] = round + static_cast<int>(count);
      for (size_t k = 0; k < count; ++k) {
        const ComputeTask t = order[s][next[s]];
        if (input_of(t, s) >= 0) --held[s];
        const int vs = out.virtual_stage(s, t.chunk);
        PipeAction a = compute_action(t);
        a.round = round;
        out.per_stage[s].push_back(a);
        ++next[s];
        --remaining;
        const bool sends = t.pass == Pass::forward ? vs < V - 1 : t.pass == Pass::backward && vs > 0;
        if (!sends) continue;
        const int dst = t.pass == Pass::forward ? vs + 1 : vs - 1;
        const StageChunk where = placement_of(kind, p, dst);
        const Payload payload = t.pass == Pass::forward ? Payload::activation : Payload::gradient;
        if (where.stage == s) {  // the V's tip: chunk 0 and chunk 1 of the last rank, no message
          (payload == Payload::activation ? act_arrival : grad_arrival)[at(t.microbatch, dst)] = busy_until[s] - 1;
          ++held[s];
          continue;
        }
        const int lane = (payload == Payload::gradient ? 2 : 0) + (v_shaped(kind) && t.chunk == 1 ? 1 : 0);
        pending[s][lane].push_back(Transfer{payload, where.stage, t.microbatch, vs, dst, where.chunk});
      }
      progress = true;
    }
    for (int s = 0; s < p; ++s)
      for (int lane = 0; lane < 4; ++lane) {
        auto& queue = pending[s][lane];
        if (queue.empty()) continue;
        progress = true;
        if (in_first_round_of_pair(s, round) || in_first_round_of_pair(queue.front().peer_stage, round)) continue;
        outgoing[lane][s] = queue.front();
        queue.pop_front();
      }
    if (!progress)
      throw RuntimeError("pipeline schedule construction stalled (internal error) in round " + std::to_string(round));
    for (const auto& sends : outgoing) {
      std::fill(phase.begin(), phase.end(), PipeAction{});
      bool any = false;
      for (int s = 0; s < p; ++s) {
        if (!sends[s]) continue;
        any = true;
        Transfer send = *sends[s];
        const int dst_stage = send.peer_stage;
        Transfer recv = send;
        recv.peer_stage = s;
        phase[s].send = send;
        phase[dst_stage].recv = recv;
        ++held[dst_stage];
        auto& arrival = send.payload == Payload::activation ? act_arrival : grad_arrival;
        arrival[at(send.microbatch, send.dst_virtual_stage)] = round;
      }
      if (!any) continue;
      for (int s = 0; s < p; ++s) {
        if (!phase[s].send && !phase[s].recv) continue;
        phase[s].kind = ActionKind::exchange;
        phase[s].round = round;
        out.per_stage[s].push_back(phase[s]);
      }
    }
    out.rounds = round + 1;
  }
  if (!out.repeats.empty()) return out;  // no compute_order (build_compact_schedule)
  out.compute_order.resize(p);
  for (int s = 0; s < p; ++s) out.compute_order[s] = memory_order(out.per_stage[s], out.split_backward());
  return out;
}
}  // namespace

PipelineSchedule build_schedule(const ParallelSplit& split) {
  return build_schedule(split.schedule, split.pp, split.vpp, split.microbatches);
}

std::string_view to_string(Pass p) {
  switch (p) {
    case Pass::forward: return "forward";
    case Pass::backward: return "backward";
    case Pass::weight: return "weight";
  }
  return "?";
}
std::string_view to_string(Payload p) { return p == Payload::activation ? "activation" : "gradient"; }
std::string_view to_string(ActionKind k) {
  switch (k) {
    case ActionKind::forward: return "forward";
    case ActionKind::backward: return "backward";
    case ActionKind::exchange: return "exchange";
    case ActionKind::weight: return "weight";
  }
  return "?";
}

int message_tag(const Transfer& t, const PipelineSchedule& s) {
  const int kind = t.payload == Payload::activation ? 0 : 1;
  return (kind * s.virtual_stages() + t.src_virtual_stage) * s.microbatches + t.microbatch;
}

LayerRange stage_layers(const ModelConfig& model, int virtual_stages, int virtual_stage) {
  if (virtual_stages < 1 || virtual_stages > model.layers || virtual_stage < 0 || virtual_stage >= virtual_stages)
    throw UsageError("model " + model.name + ": " + std::to_string(model.layers) + " layers cannot be split into " +
                     std::to_string(virtual_stages) + " virtual stages (asked for stage " +
                     std::to_string(virtual_stage) + ")");
  const int per = model.layers / virtual_stages;
  const int extra = model.layers % virtual_stages;
  const int extra_begin = (virtual_stages - extra) / 2;  // [extra_begin, +extra) get per+1
  auto first_of = [&](int vs) {
    const int extras_before = std::clamp(vs - extra_begin, 0, extra);
    return vs * per + extras_before;
  };
  const int first = first_of(virtual_stage);
  return {first, first_of(virtual_stage + 1) - first};
}

}  // namespace ibt::models
