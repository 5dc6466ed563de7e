// Gradients and ZeRO in the step program: each unit's (layer's, the embedding's, the
// head's) parameter bucket, its gradient reductions (TP-partial weights, replicated KV
// heads, dp / expert_dp all-reduce or, with ZeRO, reduce-scatter over the shard group,
// HSDP's replica all-reduce), ZeRO-3's per-unit parameter all-gathers, the optimizer
// and what follows it (aux-loss-free load sums, ZeRO-1/2 parameter all-gathers).
// Private to models/plan (step_builder.hpp).
#include <utility>

#include "models/plan/step_builder.hpp"

namespace ibt::models::detail {

// ZeRO-3: the all-gather of a unit's parameters before its forward or backward
// (step_program.hpp, "ZeRO-3 / FSDP").
void StepBuilder::begin_unit(int layer) {
  if (split_.zero != 3) return;
  unit_end_.push_back(last_compute_);  // the end of the unit before this one
  const int wait = unit_end_.size() >= 2 ? unit_end_[unit_end_.size() - 2] : -1;
  const Bucket b = bucket(layer);
  const double full_dense = b.dense, full_expert = b.expert;
  for (auto [expert, elements] : {std::pair{false, full_dense}, {true, full_expert}}) {
    const Group g = expert ? expert_shard_group() : shard_group();
    if (layout_.group_size(g) == 1 || elements <= 0) continue;
    Op op;
    op.kind = OpKind::param_all_gather;
    op.phase = phase_;
    op.group = g;
    op.stream = Stream::param_comm;
    op.expert = expert;
    op.bytes = elements * options_.param_bytes;
    op.waits[0] = wait;
    op.layer = layer;
    gather_wait_ = push(op);
  }
}

StepBuilder::Bucket StepBuilder::bucket(int layer) const {
  Bucket b;
  if (layer == kEmbeddingLayer) {
    b.dense = param_counts_.embedding / tp_;
  } else if (layer == model_.layers) {
    b.dense = param_counts_.lm_head / tp_ + param_counts_.final_norm;
    b.tp_partial = sp() ? param_counts_.final_norm : 0.0;
  } else {
    const double replicated = param_counts_.attention_tp_replicated_per_layer;
    b.dense = attention_params_per_rank(model_, param_counts_, split_.tp) + param_counts_.norms_per_layer;
    b.tp_partial = replicated + (sp() ? param_counts_.norms_per_layer : 0.0);
    if (model_.kv_replicas(split_.tp) > 1) b.kv_replicated = param_counts_.attention_kv_per_layer / model_.kv_heads;
    if (model_.layer_is_moe(layer)) {
      // The router's gradient is complete on every TP rank (the gate-weight gradient
      // was TP-summed in the backward), so it needs no TP reduction.
      b.dense += param_counts_.router_per_layer + param_counts_.shared_per_layer / tp_;
      b.expert = (model_.num_experts / split_.ep) * param_counts_.per_expert / tp_;
    } else {
      b.dense += param_counts_.dense_mlp_per_layer / tp_;
    }
  }
  return b;
}

void StepBuilder::grad_op(OpKind kind, Group g, double bytes, bool expert, int wait) {
  if (layout_.group_size(g) == 1 || bytes <= 0) return;
  Op op;
  op.kind = kind;
  op.phase = Phase::optimizer;
  op.group = g;
  op.stream = Stream::grad_comm;
  op.expert = expert;
  op.bytes = bytes;
  op.waits[0] = wait;
  last_grad_ = push(op);
  // Per-step op: it belongs to a layer's bucket, not to a microbatch.
  Op& pushed = program_.ops.back();
  pushed.layer = pending_bucket_layer_;
  pushed.microbatch = -1;
  pushed.chunk = -1;
}

// Gradient reduction of one layer's bucket (after its last backward; with ZeRO-2/3
// after every backward, record = false except after the last one with overlap: the
// bucket is recorded, and HSDP's replica all-reduce issued, once).
void StepBuilder::grad_buckets(int layer, bool record) {
  pending_bucket_layer_ = layer;
  const Bucket b = bucket(layer);
  const double gb = options_.gradient_bytes;
  const OpKind kind = split_.zero >= 1 ? OpKind::grad_reduce_scatter : OpKind::grad_all_reduce;
  // TP-replicated weights with partial gradients: the MLA down projections (their
  // output gradients come from TP-split consumers) and, with SP, the norms (each TP
  // rank sees only its sequence shard).
  grad_op(OpKind::grad_all_reduce, Group::tp, b.tp_partial * gb, false, last_compute_);
  // Replicated KV heads: each copy's share of its Wk, Wv gradient, summed over the
  // copies (tp_kv) so that they stay identical.
  grad_op(OpKind::grad_all_reduce, Group::tp_kv, b.kv_replicated * gb, false, last_compute_);
  grad_op(kind, split_.zero >= 1 ? shard_group() : dense_group(), b.dense * gb, false, last_compute_);
  grad_op(kind, split_.zero >= 1 ? expert_shard_group() : expert_group(), b.expert * gb, true, last_compute_);
  if (!record) return;
  if (split_.zero >= 1) replica_reduce(b);
  recorded_buckets_.push_back(layer);
}

// Hybrid sharding: the reduced shard summed over the replicas of the shard group.
void StepBuilder::replica_reduce(const Bucket& b) {
  if (split_.shard_group > 0) {
    grad_op(OpKind::grad_all_reduce, Group::dp_replica,
            b.dense / layout_.group_size(Group::dp_shard) * options_.gradient_bytes, false, last_compute_);
    grad_op(OpKind::grad_all_reduce, Group::dp_replica,
            b.expert / layout_.group_size(Group::expert_dp_shard) * options_.gradient_bytes, true, last_compute_);
  }
}

// Every bucket of the stage, in backward order (last chunk's head first).
void StepBuilder::all_grad_buckets() {
  for (int chunk = split_.vpp - 1; chunk >= 0; --chunk) {
    chunk_ = chunk;
    const int vs = vstage();
    const LayerRange r = stage_layers(model_, virtual_stages_, vs);
    auto bucket_done = [this](int layer) {
      if (split_.zero < 2) return grad_buckets(layer);
      pending_bucket_layer_ = layer;  // reduce-scattered in every backward already
      replica_reduce(bucket(layer));
      recorded_buckets_.push_back(layer);
    };
    if (vs == virtual_stages_ - 1) bucket_done(model_.layers);
    for (int l = r.end() - 1; l >= r.first; --l) bucket_done(l);
    if (vs == 0) bucket_done(kEmbeddingLayer);
  }
  chunk_ = -1;
}

void StepBuilder::optimizer_step() {
  double dense = 0, expert = 0;
  for (int l : recorded_buckets_) {
    const Bucket b = bucket(l);
    dense += b.dense;
    expert += b.expert;
  }
  if (recorded_buckets_.empty()) {  // no reduction emitted buckets (never happens; defensive)
    return;
  }
  const double shard =
      split_.zero >= 1 ? dense / layout_.group_size(shard_group()) + expert / layout_.group_size(expert_shard_group())
                       : dense + expert;
  Op op;
  op.kind = OpKind::optimizer;
  op.phase = Phase::optimizer;
  op.stream = Stream::compute;
  op.flops = options_.optimizer_flops_per_param * shard;
  op.bytes = shard * (2.0 * options_.param_bytes + options_.gradient_bytes + 16.0);  // w, g, fp32 m, v
  op.waits[0] = last_grad_;  // the grad_comm stream is in order: its last op covers all
  layer_ = kNoLayer;
  microbatch_ = chunk_ = action_ = -1;
  const int opt = push(op);
  last_compute_ = opt;
  // Aux-loss-free balancing: each MoE layer's per-expert load of the step is summed
  // over dp (fp64 counts) before its bias update (cpu_executor.cpp, after the
  // optimizer).
  if (model_.balance == RoutingBalance::aux_loss_free)
    for (int l : recorded_buckets_)
      if (l >= 0 && l < model_.layers && model_.layer_is_moe(l)) {
        pending_bucket_layer_ = l;
        grad_op(OpKind::load_all_reduce, dense_group(), model_.num_experts * 8.0, false, opt);
      }
  // ZeRO-1/2: the updated shards gathered back into whole weights (ZeRO-3 keeps them
  // sharded: the next step gathers each unit before its use).
  if (split_.zero != 1 && split_.zero != 2) return;
  for (int l : recorded_buckets_) {
    pending_bucket_layer_ = l;
    const Bucket b = bucket(l);
    grad_op(OpKind::param_all_gather, shard_group(), b.dense * options_.param_bytes, false, opt);
    grad_op(OpKind::param_all_gather, expert_shard_group(), b.expert * options_.param_bytes, true, opt);
  }
}

}  // namespace ibt::models::detail
