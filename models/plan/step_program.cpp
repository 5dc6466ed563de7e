// The step program's public face: the names of op kinds, phases and streams, one-line
// op descriptions, and build_step_program (validation, then StepBuilder's driver,
// step_builder.cpp); pipeline_message_bytes. The builder's parts: step_builder.hpp.
#include "models/plan/step_program.hpp"

#include <cstdio>
#include <string>

#include "core/errors.hpp"
#include "models/plan/step_builder.hpp"

namespace ibt::models {

std::string_view to_string(OpKind k) {
  switch (k) {
    case OpKind::embedding: return "embedding";
    case OpKind::attn_norm: return "attn_norm";
    case OpKind::qkv_gemm: return "qkv_gemm";
    case OpKind::q_down_gemm: return "q_down_gemm";
    case OpKind::q_up_gemm: return "q_up_gemm";
    case OpKind::kv_down_gemm: return "kv_down_gemm";
    case OpKind::kv_up_gemm: return "kv_up_gemm";
    case OpKind::attention_core: return "attention_core";
    case OpKind::out_proj_gemm: return "out_proj_gemm";
    case OpKind::mlp_norm: return "mlp_norm";
    case OpKind::mlp_up_gemm: return "mlp_up_gemm";
    case OpKind::mlp_down_gemm: return "mlp_down_gemm";
    case OpKind::router_gemm: return "router_gemm";
    case OpKind::expert_up_gemm: return "expert_up_gemm";
    case OpKind::expert_down_gemm: return "expert_down_gemm";
    case OpKind::shared_up_gemm: return "shared_up_gemm";
    case OpKind::shared_down_gemm: return "shared_down_gemm";
    case OpKind::moe_permute: return "moe_permute";
    case OpKind::moe_unpermute: return "moe_unpermute";
    case OpKind::final_norm: return "final_norm";
    case OpKind::lm_head_gemm: return "lm_head_gemm";
    case OpKind::loss: return "loss";
    case OpKind::optimizer: return "optimizer";
    case OpKind::tp_all_reduce: return "tp_all_reduce";
    case OpKind::sp_all_gather: return "sp_all_gather";
    case OpKind::sp_reduce_scatter: return "sp_reduce_scatter";
    case OpKind::ep_counts: return "ep_counts";
    case OpKind::ep_dispatch: return "ep_dispatch";
    case OpKind::ep_combine: return "ep_combine";
    case OpKind::pp_exchange: return "pp_exchange";
    case OpKind::grad_all_reduce: return "grad_all_reduce";
    case OpKind::grad_reduce_scatter: return "grad_reduce_scatter";
    case OpKind::param_all_gather: return "param_all_gather";
    case OpKind::load_all_reduce: return "load_all_reduce";
    case OpKind::cp_kv_all_gather: return "cp_kv_all_gather";
    case OpKind::cp_kv_reduce_scatter: return "cp_kv_reduce_scatter";
    case OpKind::cp_kv_pass: return "cp_kv_pass";
    case OpKind::cp_dkv_pass: return "cp_dkv_pass";
  }
  return "?";
}

bool is_comm(OpKind k) { return k >= OpKind::tp_all_reduce; }

std::string_view to_string(Phase p) {
  switch (p) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::recompute: return "recompute";
    case Phase::optimizer: return "optimizer";
  }
  return "?";
}

std::string_view to_string(Stream s) {
  switch (s) {
    case Stream::compute: return "compute";
    case Stream::comm: return "comm";
    case Stream::grad_comm: return "grad_comm";
    case Stream::param_comm: return "param_comm";
    case Stream::p2p: return "p2p";
  }
  return "?";
}

std::string describe(const Op& op, int index) {
  char buf[256];
  std::snprintf(
      buf, sizeof buf, "#%d %s mb%d c%d L%d %s %s%s%s flops=%.4g bytes=%.4g waits=%d,%d", index,
      std::string(to_string(op.phase)).c_str(), op.microbatch, op.chunk, op.layer,
      std::string(to_string(op.kind)).c_str(), std::string(to_string(op.stream)).c_str(),
      op.group == Group::none ? "" : " group=", op.group == Group::none ? "" : std::string(to_string(op.group)).c_str(),
      op.flops, op.bytes, op.waits[0], op.waits[1]);
  return buf;
}

StepProgram build_step_program(const ModelConfig& model, const ParallelSplit& split, const PipelineSchedule& schedule,
                               int rank, const StepProgramOptions& options) {
  validate(split, model, split.world_size());
  if (schedule.stages != split.pp || schedule.chunks != split.vpp || schedule.microbatches != split.microbatches ||
      schedule.kind != split.schedule)
    throw UsageError("step program: the schedule does not match split " + describe(split));
  return detail::StepBuilder(model, split, schedule, rank, options).build();
}

StepProgram build_step_program(const ModelConfig& model, const ParallelSplit& split, int rank,
                               const StepProgramOptions& options) {
  validate(split, model, split.world_size());
  const PipelineSchedule schedule = build_schedule(split);
  return detail::StepBuilder(model, split, schedule, rank, options).build();
}

double pipeline_message_bytes(const ModelConfig& model, const ParallelSplit& split, const StepProgramOptions& options) {
  // This rank's tokens: its 1/cp of the sequence (as the StepBuilder's tokens_).
  const double tokens = static_cast<double>(split.micro_batch_size) * model.seq_len / split.cp;
  // With SP each TP rank holds (and sends) its sequence shard.
  return (split.sequence_parallel ? tokens / split.tp : tokens) * model.hidden * options.activation_bytes;
}

}  // namespace ibt::models
