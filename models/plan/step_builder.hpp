#pragma once
// PRIVATE to models/plan: include it only from the step program's own sources
// (step_program.cpp, step_builder.cpp, step_emit.cpp, step_layers.cpp,
// step_gradients.cpp, step_templates.cpp). Callers use step_program.hpp.
//
// StepBuilder builds one rank's step program (step_program.hpp describes what the
// program holds). Its member functions are defined in several files, one job each:
//   step_builder.cpp    the driver: a whole step, the schedule's actions in order
//                       (forward, backward, W, exchange), paired F&B interleaving;
//   step_emit.cpp       how one op joins the program and what it waits for (compute,
//                       GEMM, norm, collective);
//   step_layers.cpp     the ops of one layer (attention with CP, dense MLP, MoE), of the
//                       embedding and of the head, forward and backward;
//   step_gradients.cpp  gradient buckets and their reductions, ZeRO-1/2/3 and HSDP
//                       (per-unit parameter gathers, reduce-scatters), the optimizer;
//   step_templates.cpp  the sim's templates: one action, one part of a chunk, the tail.
#include <cstddef>
#include <vector>

#include "models/plan/accounting.hpp"
#include "models/plan/model_config.hpp"
#include "models/plan/parallel_split.hpp"
#include "models/plan/rank_groups.hpp"
#include "models/plan/schedule.hpp"
#include "models/plan/step_program.hpp"

namespace ibt::models::detail {

// Builds one rank's program. Member functions emit the ops of one block; the
// bookkeeping (which op a new op waits for) lives in compute() and collective().
class StepBuilder {
 public:
  StepBuilder(const ModelConfig& model, const ParallelSplit& split, const PipelineSchedule& schedule, int rank,
              const StepProgramOptions& options);

  // step_builder.cpp: the whole program (build_step_program).
  StepProgram build();
  void interleave_pair(size_t f, size_t b);

  // step_templates.cpp: the sim's templates.
  ActionTemplate chunk_ops(int chunk, Pass pass, bool reduce_grads);
  ActionTemplate part_ops(Pass pass, ChunkPart part, int layer);
  std::vector<Op> gradient_ops();
  std::vector<Op> overlapped_tail_ops(const std::vector<int>& chunk_order);

 private:
  // This rank's share of the parameters of `layer` (kEmbeddingLayer, m.layers = head):
  // non-expert weights (reduced over dp), of which tp_partial are TP-replicated weights
  // whose gradients are partial sums over the TP group (reduced over tp first), and
  // expert weights (reduced over expert_dp).
  struct Bucket {
    double dense = 0, tp_partial = 0, expert = 0;
    double kv_replicated = 0;  // of dense: replicated KV heads' Wk, Wv (summed over tp_kv)
  };

  int vstage() const { return split_.virtual_stage(program_.stage, chunk_); }
  bool sp() const { return split_.sequence_parallel; }
  double norm_tokens() const { return sp() ? tokens_ / tp_ : tokens_; }
  size_t slot() const { return static_cast<size_t>(microbatch_) * split_.vpp + chunk_; }

  // step_builder.cpp: the actions of the schedule.
  void reserve_like_first_pair(int forwards, size_t backward_begin);
  size_t estimate_ops() const;
  void forward_chunk();
  void backward_chunk(bool reduce_grads_now);
  void weight_chunk(bool reduce_grads_now);
  void exchange(const PipeAction& a);

  // step_emit.cpp: appending ops.
  int push(Op op);
  int wait_for_producer(Stream mine) const;
  void compute(OpKind kind, double flops, double bytes, bool tp_sharded = true);
  void emit_compute(OpKind kind, double flops, double bytes, bool tp_sharded);
  void gemm(OpKind kind, double rows, double k, double n, bool tp_sharded = true, int groups = 1);
  void norm(OpKind kind);
  void collective(OpKind kind, Group g, double bytes);

  // step_layers.cpp: TP operators around a block.
  void tp_gather_fwd();
  void tp_reduce_fwd();
  void tp_reduce_bwd();
  void tp_gather_bwd();
  // step_layers.cpp: attention, with context parallelism.
  void attention_fwd();
  void attention_body_fwd();
  void attention_projections();
  void attention_projections_bwd();
  void attention_core();
  Op core_op(double share) const;
  void cp_attention_core();
  int ring_pass(OpKind kind, double bytes, int wait);
  void attention_bwd();
  void attention_body_bwd();
  // Standard attention's fused Q, K, V projection width on this rank: heads/tp query
  // heads, and its KV heads (one replicated head when tp > kv_heads).
  double qkv_width() const {
    return (model_.heads / tp_ + 2.0 * model_.kv_heads_per_rank(split_.tp)) * model_.head_dim();
  }
  // Elements of K plus V per token on this rank (TP-split heads).
  double kv_width() const { return kv_elements_per_token_per_rank(model_, split_.tp); }
  // step_layers.cpp: the dense MLP and the MoE layer.
  void mlp_fwd(int layer);
  void mlp_body_fwd(int layer);
  void moe_permute();
  void moe_unpermute();
  void ep_regroup();
  void mlp_bwd(int layer);
  void mlp_body_bwd(int layer);
  double gated() const { return model_.activation == Activation::swiglu ? 2.0 : 1.0; }
  // The experts on this rank: their grouped GEMMs share its routed rows evenly.
  int local_experts() const { return model_.num_experts / split_.ep; }
  // step_layers.cpp: whole layers, the embedding, the head.
  void layer_body_fwd(int layer);
  void layer_body_bwd(int layer);
  void layer_fwd(int layer);
  void layer_bwd(int layer);
  void embedding_fwd();
  void embedding_bwd();
  void head_fwd();
  void head_bwd();

  // step_gradients.cpp: ZeRO-3 gathers, gradient reductions, the optimizer.
  void begin_unit(int layer);
  Bucket bucket(int layer) const;
  void grad_op(OpKind kind, Group g, double bytes, bool expert, int wait);
  void grad_buckets(int layer, bool record = true);
  void replica_reduce(const Bucket& b);
  void all_grad_buckets();
  void optimizer_step();
  // Where non-expert and expert gradients are reduced (CP ranks are replicas too).
  Group dense_group() const { return split_.cp > 1 ? Group::dp_cp : Group::dp; }
  Group expert_group() const { return split_.cp > 1 ? Group::expert_dp_cp : Group::expert_dp; }
  // The group the dense weights' states are sharded over.
  Group shard_group() const { return split_.shard_group > 0 ? Group::dp_shard : dense_group(); }
  // The group the expert weights' states are sharded over (HSDP: inside the shard group).
  Group expert_shard_group() const { return split_.shard_group > 0 ? Group::expert_dp_shard : expert_group(); }

  const ModelConfig& model_;
  const ParallelSplit& split_;
  const StepProgramOptions& options_;
  RankLayout layout_;
  ParamCounts param_counts_;
  StepProgram program_;
  double tp_ = 1;                 // the TP degree (split.tp), for divisions
  double tokens_ = 0;             // this rank's tokens of a microbatch (1/cp of each sequence)
  double activation_bytes_ = 4;   // element size of activations (options.activation_bytes)
  int virtual_stages_ = 1;        // pp * vpp
  Phase phase_ = Phase::forward;  // the phase of the ops being emitted
  Pass pass_ = Pass::forward;     // the action being expanded
  bool split_backward_ = false;   // backward = B only, weight gradients in W actions
  // What new ops are tagged with (layer_: kNoLayer outside layers).
  int layer_ = kNoLayer, microbatch_ = -1, chunk_ = -1, action_ = -1;
  // The last compute op, the op whose output the next op consumes (the action's
  // chain), the last grad_comm op: indices into program_.ops, -1 none, or a template's
  // marker (kWaitReceived, kWaitLastCompute, kWaitLastGrad).
  int last_compute_ = -1, producer_ = -1, last_grad_ = -1;
  int pending_bucket_layer_ = kNoLayer;  // the layer the gradient ops being emitted belong to
  int gather_wait_ = -1;                 // ZeRO-3: the gather the next compute op waits for
  std::vector<int> unit_end_;            // ZeRO-3: last compute op before each unit began
  // The pp_exchange that received each (microbatch, chunk)'s activation / gradient (slot()).
  std::vector<int> received_activation_, received_gradient_;
  std::vector<int> recorded_buckets_;  // layers whose buckets are reduced, in order (the optimizer's)
};

}  // namespace ibt::models::detail
