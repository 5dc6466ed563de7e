// The ops of one transformer layer, forward and backward (and recompute): attention
// (standard or MLA projections, the core, with context parallelism's all-gather or
// ring around it), the dense MLP or the MoE layer (router, permutes, expert
// all-to-alls, experts, shared experts), the TP operators around each block; and the
// embedding and the head. Private to models/plan (step_builder.hpp).
#include "models/plan/step_builder.hpp"

namespace ibt::models::detail {

// TP operators (Megatron's f and g): "gather" precedes a column-parallel block,
// "reduce" follows a row-parallel one; in backward their roles swap.
void StepBuilder::tp_gather_fwd() {
  if (sp()) collective(OpKind::sp_all_gather, Group::tp, tokens_ * model_.hidden * activation_bytes_);
}

void StepBuilder::tp_reduce_fwd() {
  collective(sp() ? OpKind::sp_reduce_scatter : OpKind::tp_all_reduce, Group::tp,
             tokens_ * model_.hidden * activation_bytes_);
}

// Backward of tp_reduce_fwd: identity without SP, all-gather with SP.
void StepBuilder::tp_reduce_bwd() {
  if (sp()) collective(OpKind::sp_all_gather, Group::tp, tokens_ * model_.hidden * activation_bytes_);
}

// Backward of the (implicit) copy before a column-parallel block: all-reduce, or
// reduce-scatter with SP.
void StepBuilder::tp_gather_bwd() {
  collective(sp() ? OpKind::sp_reduce_scatter : OpKind::tp_all_reduce, Group::tp,
             tokens_ * model_.hidden * activation_bytes_);
}

void StepBuilder::attention_fwd() {
  norm(OpKind::attn_norm);
  tp_gather_fwd();
  attention_body_fwd();
  tp_reduce_fwd();
}

// Between the TP operators: projections, core, output projection.
void StepBuilder::attention_body_fwd() {
  attention_projections();
  cp_attention_core();
  gemm(OpKind::out_proj_gemm, tokens_, model_.heads * static_cast<double>(model_.value_head_dim()) / tp_,
       model_.hidden);
}

void StepBuilder::attention_projections() {
  const double h = model_.hidden, H = model_.heads;
  if (model_.attention == Attention::standard) {
    gemm(OpKind::qkv_gemm, tokens_, h, qkv_width());
    return;
  }
  const double dqk = model_.qk_head_dim(), dv = model_.value_head_dim();
  if (model_.q_lora_rank > 0) {
    gemm(OpKind::q_down_gemm, tokens_, h, model_.q_lora_rank, false);
    gemm(OpKind::q_up_gemm, tokens_, model_.q_lora_rank, H * dqk / tp_);
  } else {
    gemm(OpKind::q_up_gemm, tokens_, h, H * dqk / tp_);
  }
  gemm(OpKind::kv_down_gemm, tokens_, h, model_.kv_lora_rank + model_.qk_rope_head_dim, false);
  gemm(OpKind::kv_up_gemm, tokens_, model_.kv_lora_rank, H * (model_.qk_nope_head_dim + dv) / tp_);
}

void StepBuilder::attention_projections_bwd() {
  // Reverse order of attention_projections().
  const double h = model_.hidden, H = model_.heads;
  if (model_.attention == Attention::standard) {
    gemm(OpKind::qkv_gemm, tokens_, h, qkv_width());
    return;
  }
  const double dqk = model_.qk_head_dim(), dv = model_.value_head_dim();
  gemm(OpKind::kv_up_gemm, tokens_, model_.kv_lora_rank, H * (model_.qk_nope_head_dim + dv) / tp_);
  gemm(OpKind::kv_down_gemm, tokens_, h, model_.kv_lora_rank + model_.qk_rope_head_dim, false);
  if (model_.q_lora_rank > 0) {
    gemm(OpKind::q_up_gemm, tokens_, model_.q_lora_rank, H * dqk / tp_);
    gemm(OpKind::q_down_gemm, tokens_, h, model_.q_lora_rank, false);
  } else {
    gemm(OpKind::q_up_gemm, tokens_, h, H * dqk / tp_);
  }
}

// softmax(QK^T)V over the full causal sequence (not discounted, accounting.hpp).
// With CP, tokens_ local queries attend to all seq_len keys.
void StepBuilder::attention_core() {
  const Op op = core_op(1.0);
  compute(OpKind::attention_core, op.flops, op.bytes);
}

// The attention core's cost, or `share` of it (a ring step), not yet pushed.
Op StepBuilder::core_op(double share) const {
  const double mult = phase_ == Phase::backward ? 2.0 : 1.0;
  const double H = model_.heads / static_cast<double>(split_.tp);
  const double dqk = model_.qk_head_dim(), dv = model_.value_head_dim();
  Op op;
  op.kind = OpKind::attention_core;
  op.phase = phase_;
  op.stream = Stream::compute;
  op.flops = share * mult * 2.0 * tokens_ * model_.seq_len * H * (dqk + dv);
  op.bytes = share * mult * activation_bytes_ * tokens_ * H * (2 * dqk + 2 * dv);
  return op;
}

// The attention core with the CP communication around it (step_program.hpp).
// Recompute re-runs the forward's communication; the all-gather variant keeps the
// gathered K/V for the backward, so the backward only reduce-scatters dK/dV.
void StepBuilder::cp_attention_core() {
  if (pass_ == Pass::weight) return;  // no weights
  if (split_.cp == 1) return attention_core();
  const bool backward = phase_ == Phase::backward;
  const double full_kv = static_cast<double>(split_.micro_batch_size) * model_.seq_len * kv_width() * activation_bytes_;
  if (split_.cp_comm == CpComm::all_gather) {
    if (!backward) collective(OpKind::cp_kv_all_gather, Group::cp, full_kv);
    attention_core();
    if (backward) collective(OpKind::cp_kv_reduce_scatter, Group::cp, full_kv);
    return;
  }
  // Ring: cp parts of 1/cp of the core each, one block of full_kv/cp per pass.
  const double block = full_kv / split_.cp;
  const int start = producer_;  // the QKV projection (forward) or out_proj backward
  int kv_prev = -1, dkv_prev = -1, part_prev = -1;
  for (int j = 0; j < split_.cp; ++j) {
    int kv = -1, dkv = -1;
    if (j < split_.cp - 1) kv = ring_pass(OpKind::cp_kv_pass, block, j == 0 ? start : -1);
    if (backward && j >= 1) dkv = ring_pass(OpKind::cp_dkv_pass, block, part_prev);
    Op part_op = core_op(1.0 / split_.cp);
    part_op.waits = {j == 0 ? (start >= 0 && program_.ops[start].stream != Stream::compute ? start : -1) : kv_prev,
                     backward ? dkv_prev : -1};
    last_compute_ = producer_ = part_prev = push(part_op);
    kv_prev = kv;
    dkv_prev = dkv;
  }
  if (backward) producer_ = ring_pass(OpKind::cp_dkv_pass, block, part_prev);
}

int StepBuilder::ring_pass(OpKind kind, double bytes, int wait) {
  Op op;
  op.kind = kind;
  op.phase = phase_;
  op.group = Group::cp;
  op.stream = Stream::comm;
  op.bytes = bytes;
  op.waits[0] = wait;
  return push(op);
}

void StepBuilder::mlp_fwd(int layer) {
  norm(OpKind::mlp_norm);
  tp_gather_fwd();
  mlp_body_fwd(layer);
  tp_reduce_fwd();
}

// Between the TP operators: the dense MLP or the MoE layer.
void StepBuilder::mlp_body_fwd(int layer) {
  const double h = model_.hidden;
  if (!model_.layer_is_moe(layer)) {
    gemm(OpKind::mlp_up_gemm, tokens_, h, gated() * model_.ffn_hidden / tp_);
    gemm(OpKind::mlp_down_gemm, tokens_, model_.ffn_hidden / static_cast<double>(tp_), h);
  } else {
    const double routed = tokens_ * model_.top_k, fe = model_.expert_ffn_hidden;
    gemm(OpKind::router_gemm, tokens_, h, model_.num_experts, false);
    moe_permute();
    // models/engine/layers/block.cpp: the per-expert row counts go first (each rank learns
    // how many rows it receives), then the rows themselves.
    collective(OpKind::ep_counts, Group::ep, model_.num_experts * 8.0);
    collective(OpKind::ep_dispatch, Group::ep, routed * h * activation_bytes_);
    ep_regroup();
    gemm(OpKind::expert_up_gemm, routed, h, gated() * fe / tp_, true, local_experts());
    gemm(OpKind::expert_down_gemm, routed, fe / tp_, h, true, local_experts());
    ep_regroup();
    collective(OpKind::ep_combine, Group::ep, routed * h * activation_bytes_);
    moe_unpermute();
    if (model_.shared_experts > 0) {
      const double fs = fe * model_.shared_experts;
      gemm(OpKind::shared_up_gemm, tokens_, h, gated() * fs / tp_);
      gemm(OpKind::shared_down_gemm, tokens_, fs / tp_, h);
    }
  }
}

// Token permutation around the experts (memory-bound copies, models/engine/layers/moe.cpp),
// counted as the rows moved once each (the k copies of one token are consecutive
// slots, so the token's row is read once from memory), R = tokens * top_k routed
// rows and T tokens of hidden:
//   moe_permute    forward: dispatch reads T rows, writes R; backward: the R row
//                  gradients are added into the T token gradients (read R, read +
//                  write T);
//   moe_unpermute  forward: combine reads R expert outputs, writes T gate-weighted
//                  sums; backward: reads dy (T) and the saved outputs (R), writes R
//                  row gradients;
//   ep_regroup     with EP only (a moe_permute op): the rows received grouped by
//                  peer are reordered by local expert before the experts and back
//                  after them (read + write R).
void StepBuilder::moe_permute() {
  const double R = tokens_ * model_.top_k, row = model_.hidden * activation_bytes_;
  compute(OpKind::moe_permute, 0.0, (phase_ == Phase::backward ? R + 2 * tokens_ : R + tokens_) * row);
}

void StepBuilder::moe_unpermute() {
  const double R = tokens_ * model_.top_k, row = model_.hidden * activation_bytes_;
  compute(OpKind::moe_unpermute, 0.0, (phase_ == Phase::backward ? 2 * R + tokens_ : R + tokens_) * row);
}

void StepBuilder::ep_regroup() {
  if (split_.ep > 1)
    compute(OpKind::moe_permute, 0.0, 2.0 * tokens_ * model_.top_k * model_.hidden * activation_bytes_);
}

void StepBuilder::mlp_bwd(int layer) {
  tp_reduce_bwd();
  mlp_body_bwd(layer);
  tp_gather_bwd();
  norm(OpKind::mlp_norm);
}

void StepBuilder::mlp_body_bwd(int layer) {
  const double h = model_.hidden;
  if (!model_.layer_is_moe(layer)) {
    gemm(OpKind::mlp_down_gemm, tokens_, model_.ffn_hidden / static_cast<double>(tp_), h);
    gemm(OpKind::mlp_up_gemm, tokens_, h, gated() * model_.ffn_hidden / tp_);
  } else {
    // The engine's order (block.cpp moe_backward): combine backward, the TP sum of
    // the gate-weight gradient (expert outputs are partial over TP, so is dy . out;
    // summed here, the router's own gradient comes out complete on every TP rank),
    // the routed experts between the two all-to-alls, the shared experts, the
    // dispatch backward and the router.
    const double routed = tokens_ * model_.top_k, fe = model_.expert_ffn_hidden;
    moe_unpermute();
    collective(OpKind::tp_all_reduce, Group::tp, routed * 4.0);  // fp32 gate gradients
    collective(OpKind::ep_combine, Group::ep, routed * h * activation_bytes_);
    ep_regroup();
    gemm(OpKind::expert_down_gemm, routed, fe / tp_, h, true, local_experts());
    gemm(OpKind::expert_up_gemm, routed, h, gated() * fe / tp_, true, local_experts());
    ep_regroup();
    collective(OpKind::ep_dispatch, Group::ep, routed * h * activation_bytes_);
    if (model_.shared_experts > 0) {
      const double fs = fe * model_.shared_experts;
      gemm(OpKind::shared_down_gemm, tokens_, fs / tp_, h);
      gemm(OpKind::shared_up_gemm, tokens_, h, gated() * fs / tp_);
    }
    moe_permute();
    gemm(OpKind::router_gemm, tokens_, h, model_.num_experts, false);
  }
}

void StepBuilder::attention_bwd() {
  tp_reduce_bwd();
  attention_body_bwd();
  tp_gather_bwd();
  norm(OpKind::attn_norm);
}

void StepBuilder::attention_body_bwd() {
  gemm(OpKind::out_proj_gemm, tokens_, model_.heads * static_cast<double>(model_.value_head_dim()) / tp_,
       model_.hidden);
  if (split_.recompute == Recompute::selective) {
    const Phase saved = phase_;
    phase_ = Phase::recompute;
    cp_attention_core();
    phase_ = saved;
  }
  cp_attention_core();
  attention_projections_bwd();
}

// The layer's forward ops. A parallel block (model_config.hpp parallel_block) runs
// both branches on one norm's (gathered) output and reduces their summed partial
// outputs once, as block.cpp does; the sequential block has a norm and a TP
// gather/reduce pair around each branch.
void StepBuilder::layer_body_fwd(int layer) {
  if (!model_.parallel_block) {
    attention_fwd();
    mlp_fwd(layer);
    return;
  }
  norm(OpKind::attn_norm);
  tp_gather_fwd();
  attention_body_fwd();
  mlp_body_fwd(layer);
  tp_reduce_fwd();
}

// Backward in the engine's order: the MLP branch, then attention, one reduction.
void StepBuilder::layer_body_bwd(int layer) {
  if (!model_.parallel_block) {
    mlp_bwd(layer);
    attention_bwd();
    return;
  }
  tp_reduce_bwd();
  mlp_body_bwd(layer);
  attention_body_bwd();
  tp_gather_bwd();
  norm(OpKind::attn_norm);
}

void StepBuilder::layer_fwd(int layer) {
  layer_ = layer;
  begin_unit(layer);
  layer_body_fwd(layer);
}

void StepBuilder::layer_bwd(int layer) {
  layer_ = layer;
  begin_unit(layer);
  if (split_.recompute == Recompute::full && pass_ != Pass::weight) {
    // Re-run the layer's forward from its saved input; the backward then continues
    // from the incoming gradient, not from the recomputed output.
    const int gradient = producer_;
    phase_ = Phase::recompute;
    layer_body_fwd(layer);
    phase_ = Phase::backward;
    producer_ = gradient;
  }
  layer_body_bwd(layer);
}

void StepBuilder::embedding_fwd() {
  layer_ = kEmbeddingLayer;
  begin_unit(kEmbeddingLayer);
  compute(OpKind::embedding, 0.0, tokens_ * model_.hidden * activation_bytes_);
  tp_reduce_fwd();  // vocab-parallel lookup: partial rows summed over TP
}

void StepBuilder::embedding_bwd() {
  layer_ = kEmbeddingLayer;
  begin_unit(kEmbeddingLayer);
  tp_reduce_bwd();
  compute(OpKind::embedding, 0.0, tokens_ * model_.hidden * activation_bytes_);
}

void StepBuilder::head_fwd() {
  layer_ = model_.layers;
  begin_unit(model_.layers);
  norm(OpKind::final_norm);
  tp_gather_fwd();
  gemm(OpKind::lm_head_gemm, tokens_, model_.hidden, model_.vocab / static_cast<double>(tp_));
  compute(OpKind::loss, 0.0, tokens_ * model_.vocab / static_cast<double>(tp_) * activation_bytes_);
  // Vocab-parallel cross-entropy: max, sum of exp and target logit per token (fp32).
  collective(OpKind::tp_all_reduce, Group::tp, 3.0 * tokens_ * 4.0);
}

void StepBuilder::head_bwd() {
  layer_ = model_.layers;
  begin_unit(model_.layers);
  compute(OpKind::loss, 0.0, tokens_ * model_.vocab / static_cast<double>(tp_) * activation_bytes_);
  gemm(OpKind::lm_head_gemm, tokens_, model_.hidden, model_.vocab / static_cast<double>(tp_));
  tp_gather_bwd();
  norm(OpKind::final_norm);
}

}  // namespace ibt::models::detail
