// Pipeline schedules (schedule.hpp): the vocabulary (names, message tags, the layers of
// a virtual stage), the memory check on a schedule's size, and build_schedule(). The
// rest of the builder lives beside it (schedule_internal.hpp lists the files).
#include "models/plan/schedule.hpp"

#include <algorithm>
#include <string>

#include "core/errors.hpp"
#include "core/memory_plan.hpp"
#include "models/plan/schedule_internal.hpp"

namespace ibt::models {

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
  schedule_internal::require_schedule_bytes(split.pp, split.vpp, split.microbatches);
}

PipelineSchedule build_schedule(ScheduleKind kind, int p, int v, int m) {
  schedule_internal::check_parameters(kind, p, v, m);
  schedule_internal::require_schedule_bytes(p, v, m);
  return schedule_internal::lock_step(kind, p, v, m, false);
}

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
