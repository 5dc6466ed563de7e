#pragma once
// Private to models/plan: the pieces of the pipeline schedule builder (schedule.hpp) that
// its files share. Nothing outside models/plan includes this header; the public names
// are in schedule.hpp.
//
// Which file holds what:
//  - schedule.cpp: the vocabulary (names, message tags, layer ranges), the memory check
//    on a schedule's size, build_schedule() and its lock-step construction, and the
//    compact schedule's repeats;
//  - schedule_orders.cpp: each stage's compute order, schedule by schedule, and the
//    checks on (kind, pp, vpp, microbatches);
//  - schedule_memory.cpp: in-flight activations (compute_order, held_peaks, peak_held,
//    build_compute_orders);
//  - schedule_simulate.cpp: simulate_pipeline, the reference timing and deadlock check.
#include <cstddef>
#include <cstdint>
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

}  // namespace ibt::models::schedule_internal
