#pragma once
// The tables of a projection in the HDF5 store (runs of kind "projection" and
// "crossover"), one schema each (core/row_schema.hpp): "projections", one row per split
// projected, and "projection_stages", one row per pipeline stage of a feasible one. The
// columns keep the names, types and order files have had; a value a row has not (an
// unpriced split's times, goodput not computed) is NaN, never 0.
#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "core/row_schema.hpp"

namespace ibt::topo {

struct ProjectionRow {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  std::string split;
  std::int64_t devices = 0, dp = 0, tp = 0, pp = 0, ep = 0, vpp = 0, microbatches = 0, micro_batch_size = 0;
  std::string schedule;
  std::int64_t sequence_parallel = 0, zero = 0, shard_group = 0;
  std::string strategy, recompute;
  std::int64_t feasible = 0;
  std::string reason;
  double step_s = kNone, mfu = kNone, hfu = kNone, tokens_per_s = kNone, model_flops = 0;
  double compute_s = kNone, exposed_tp_s = kNone, exposed_dp_s = kNone, exposed_expert_dp_s = kNone,
         exposed_pp_s = kNone, exposed_ep_s = kNone, bubble_s = kNone;
  double memory_bytes = 0, memory_capacity_bytes = 0;
  std::int64_t fits_memory = 0;
  double memory_excess_bytes = 0;
  std::int64_t priced = 0;
  double job_mtbf_s = kNone, checkpoint_bytes = kNone, checkpoint_s = kNone, restart_s = kNone,
         interval_young_s = kNone, interval_daly_s = kNone;
  std::int64_t interval_steps = 0;
  double goodput = kNone, goodput_mfu = kNone;
  std::int64_t cp = 1;
  std::string cp_comm;
  double exposed_cp_s = kNone;

  static constexpr std::string_view kTable = "projections";
  static constexpr std::array<store::Field<ProjectionRow>, 46> kFields{{
      {"split", &ProjectionRow::split, "", "the split (models::describe)"},
      {"devices", &ProjectionRow::devices, "devices", "devices of the job"},
      {"dp", &ProjectionRow::dp, "", "data-parallel degree"},
      {"tp", &ProjectionRow::tp, "", "tensor-parallel degree"},
      {"pp", &ProjectionRow::pp, "", "pipeline stages"},
      {"ep", &ProjectionRow::ep, "", "expert-parallel degree"},
      {"vpp", &ProjectionRow::vpp, "", "virtual stages per rank (interleaved schedule)"},
      {"microbatches", &ProjectionRow::microbatches, "", "micro-batches per step"},
      {"micro_batch_size", &ProjectionRow::micro_batch_size, "sequences", "sequences per micro-batch"},
      {"schedule", &ProjectionRow::schedule, "", "the pipeline schedule"},
      {"sequence_parallel", &ProjectionRow::sequence_parallel, "", "1 with sequence parallelism"},
      {"zero", &ProjectionRow::zero, "", "the ZeRO stage (0: none)"},
      {"shard_group", &ProjectionRow::shard_group, "", "ranks a ZeRO shard spans (0: the whole dp group)"},
      {"strategy", &ProjectionRow::strategy, "", "the strategy in words (fsdp, tp4 sp, ...)"},
      {"recompute", &ProjectionRow::recompute, "", "what the backward pass recomputes"},
      {"feasible", &ProjectionRow::feasible, "", "1 when the split fits and was priced"},
      {"reason", &ProjectionRow::reason, "", "why not, when infeasible (255 characters at most)"},
      {"step_s", &ProjectionRow::step_s, "s", "the projected step time"},
      {"mfu", &ProjectionRow::mfu, "fraction", "model FLOPs utilisation"},
      {"hfu", &ProjectionRow::hfu, "fraction", "hardware FLOPs utilisation (recompute counted)"},
      {"tokens_per_s", &ProjectionRow::tokens_per_s, "tokens/s", "tokens of the global batch over the step time"},
      {"model_flops", &ProjectionRow::model_flops, "FLOP", "model FLOPs per step, all devices"},
      {"compute_s", &ProjectionRow::compute_s, "s", "the first stage's compute"},
      {"exposed_tp_s", &ProjectionRow::exposed_tp_s, "s", "tensor-parallel communication not hidden, first stage"},
      {"exposed_dp_s", &ProjectionRow::exposed_dp_s, "s", "data-parallel communication not hidden, first stage"},
      {"exposed_expert_dp_s", &ProjectionRow::exposed_expert_dp_s, "s",
       "expert data-parallel communication not hidden, first stage"},
      {"exposed_pp_s", &ProjectionRow::exposed_pp_s, "s", "pipeline sends and receives not hidden, first stage"},
      {"exposed_ep_s", &ProjectionRow::exposed_ep_s, "s", "expert-parallel all-to-alls not hidden, first stage"},
      {"bubble_s", &ProjectionRow::bubble_s, "s", "the first stage's pipeline bubble"},
      {"memory_bytes", &ProjectionRow::memory_bytes, "B", "peak memory per device, the peak stage"},
      {"memory_capacity_bytes", &ProjectionRow::memory_capacity_bytes, "B", "usable memory per device"},
      {"fits_memory", &ProjectionRow::fits_memory, "", "1 when the peak memory fits"},
      {"memory_excess_bytes", &ProjectionRow::memory_excess_bytes, "B", "by how much it does not fit (0 when it does)"},
      {"priced", &ProjectionRow::priced, "", "1 when the step time and breakdown were computed"},
      {"job_mtbf_s", &ProjectionRow::job_mtbf_s, "s", "goodput: the job's mean time between failures"},
      {"checkpoint_bytes", &ProjectionRow::checkpoint_bytes, "B", "goodput: checkpoint bytes per device"},
      {"checkpoint_s", &ProjectionRow::checkpoint_s, "s", "goodput: the time to write a checkpoint"},
      {"restart_s", &ProjectionRow::restart_s, "s", "goodput: the time to restart after a failure"},
      {"interval_young_s", &ProjectionRow::interval_young_s, "s", "goodput: Young's checkpoint interval"},
      {"interval_daly_s", &ProjectionRow::interval_daly_s, "s", "goodput: Daly's checkpoint interval"},
      {"interval_steps", &ProjectionRow::interval_steps, "steps", "goodput: Daly's interval in whole steps"},
      {"goodput", &ProjectionRow::goodput, "", "goodput: the fraction of time that makes progress"},
      {"goodput_mfu", &ProjectionRow::goodput_mfu, "", "goodput: MFU x goodput"},
      {"cp", &ProjectionRow::cp, "", "context-parallel degree"},
      {"cp_comm", &ProjectionRow::cp_comm, "", "how context parallelism exchanges K/V"},
      {"exposed_cp_s", &ProjectionRow::exposed_cp_s, "s", "context-parallel communication not hidden, first stage"},
  }};
};

// One pipeline stage of a feasible projection: its compute and exposed parts, which add
// up to its finish; bottleneck = 1 on the busiest stage (least bubble).
struct ProjectionStageRow {
  std::string split;
  std::int64_t stage = 0, bottleneck = 0;
  double compute_s = 0, exposed_tp_s = 0, exposed_dp_s = 0, exposed_expert_dp_s = 0, exposed_pp_s = 0, exposed_ep_s = 0,
         bubble_s = 0, exposed_cp_s = 0;

  static constexpr std::string_view kTable = "projection_stages";
  static constexpr std::array<store::Field<ProjectionStageRow>, 11> kFields{{
      {"split", &ProjectionStageRow::split, "", "the split (models::describe)"},
      {"stage", &ProjectionStageRow::stage, "stage", "the pipeline stage"},
      {"bottleneck", &ProjectionStageRow::bottleneck, "", "1 on the busiest stage"},
      {"compute_s", &ProjectionStageRow::compute_s, "s", "the stage's compute"},
      {"exposed_tp_s", &ProjectionStageRow::exposed_tp_s, "s", "tensor-parallel communication not hidden"},
      {"exposed_dp_s", &ProjectionStageRow::exposed_dp_s, "s", "data-parallel communication not hidden"},
      {"exposed_expert_dp_s", &ProjectionStageRow::exposed_expert_dp_s, "s",
       "expert data-parallel communication not hidden"},
      {"exposed_pp_s", &ProjectionStageRow::exposed_pp_s, "s", "pipeline sends and receives not hidden"},
      {"exposed_ep_s", &ProjectionStageRow::exposed_ep_s, "s", "expert-parallel all-to-alls not hidden"},
      {"bubble_s", &ProjectionStageRow::bubble_s, "s", "the stage's pipeline bubble"},
      {"exposed_cp_s", &ProjectionStageRow::exposed_cp_s, "s", "context-parallel communication not hidden"},
  }};
};

}  // namespace ibt::topo
