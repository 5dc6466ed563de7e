#pragma once
// The cpu executor: one training step of a (model, split) over MPI ranks, with real
// fp32 math (ibt_engine) and real MPI collectives, walking the pipeline schedule of
// schedule.hpp action by action (walk_pipeline in pipeline_walk.hpp: the step loop
// this executor shares with the cuda executor).
//
// What each split does here:
//  - TP: every layer built as shard (tp_rank, tp); the Megatron reductions of block.hpp
//    are MPI all-reduces on the tp communicator (MpiTpReducer).
//  - PP: this rank holds chunks c = 0..vpp-1 = virtual stages c*pp + stage
//    (stage_layers()); forward/backward/exchange actions run in the schedule's order,
//    each exchange as one send, one receive or one MPI_Sendrecv on the pp communicator.
//  - DP: rank dp_rank takes sequences [dp_rank*m*b, (dp_rank+1)*m*b) of the global batch;
//    after the last backward, gradients are summed over dp in one flat all-reduce
//    (the loss is scaled by the GLOBAL token count, so the sum is the global gradient).
//  - EP: routed experts sharded over the ep group (carved out of dp, rank_groups.hpp);
//    dispatched rows travel by all-to-allv to the expert's owner and back
//    (MpiExpertExchange); expert gradients are summed over expert_dp, the rest over dp.
//  - Microbatches: m per DP replica, gradients accumulate.
//  - ZeRO-1: instead of the all-reduce, gradients are reduce-scattered over dp (expert
//    ones over expert_dp) in one padded flat buffer; each rank keeps AdamW states for
//    its 1/d slice only, updates that slice, and the updated weights are all-gathered.
//  - ZeRO-2 and ZeRO-3 (FSDP): per unit (embedding, block, head) gradients reduce-scattered
//    after every backward, and with ZeRO-3 weights all-gathered before every forward
//    and backward (zero_units.hpp). With tied embeddings the embedding and the LM head
//    act as one unit.
//  - With cp > 1 every ZeRO stage shards over dp x cp (expert weights expert_dp x cp):
//    CP ranks are gradient replicas.
//  - Hybrid sharding (shard_group): the sharding above inside dp_shard (g x cp), then the shard
//    all-reduced over dp_replica before the update.
//  - Sequence parallelism (with tp > 1): between TP regions each TP rank keeps 1/tp of
//    the token rows; all-gather before and reduce-scatter after each TP region
//    (block.hpp), norm gradients summed over tp; pipeline messages are 1/tp as large.
//  - CP: each rank runs its CP share of every sequence (chunks i and 2cp-1-i,
//    layers/context_parallel.hpp); attention all-gathers K/V over the cp communicator
//    and reduce-scatters dK/dV, or with cp_comm ring passes K/V (and dK/dV) blocks
//    around the CP ring by MPI point-to-point (MpiContextExchange); gradients (and ZeRO-1 shards,
//    and aux-loss-free loads) are reduced over dp_cp / expert_dp_cp instead of dp /
//    expert_dp: CP ranks are extra data-parallel replicas of the weights.
// Not implemented here (rejected with a UsageError naming the option): recompute, tied
// embeddings with pp > 1, the classic per-sequence aux loss with cp > 1 (its sequence
// statistics would need a CP reduction).
//
// Step statistics (loss, grad/param norms, MoE loads) are reduced over the world so
// every rank returns the same numbers as ReferenceTrainer::step().
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include <mpi.h>

#include "models/checkpoint/training_state.hpp"
#include "models/engine/data.hpp"
#include "models/engine/layers/transformer.hpp"
#include "models/engine/optimizer.hpp"
#include "models/engine/reference_trainer.hpp"
#include "models/executor/process_groups.hpp"
#include "models/executor/time_breakdown.hpp"
#include "models/executor/zero_units.hpp"
#include "models/plan/model_config.hpp"
#include "models/plan/parallel_split.hpp"
#include "models/plan/schedule.hpp"

namespace ibt::models {

// Why a split cannot run on this executor (empty when it can). Checks validate()
// first, then the executor's own limits.
std::string cpu_executor_check(const ParallelSplit& split, const ModelConfig& model, int world_size);

class CpuExecutor {
 public:
  CpuExecutor(const ModelConfig& m, const ParallelSplit& split, const TrainConfig& train, const DataSource& data,
              MPI_Comm world);
  // train.microbatches/micro_batch_size/data_parallel are taken from the split.
  StepStats step(TimeBreakdown* time = nullptr);
  const ProcessGroups& groups() const { return *groups_; }
  const PipelineSchedule& schedule() const { return schedule_; }
  // Parameters this rank holds (all chunks).
  std::vector<Param*> params();
  // --check: every step also returns this rank's share of each tensor's sums of squares
  // (StepStats::tensors, each element counted once over the world).
  void set_per_tensor_sums(bool on) { per_tensor_sums_ = on; }
  // --check: every step also returns every tensor this rank holds (StepStats::copies):
  // each replica, TP/vocab slice, expert and ZeRO shard, gradients as the update reads
  // them (reduced), values after the update (cpu_executor_copies.cpp).
  void set_tensor_copies(bool on) { tensor_copies_ = on; }
  // Testing only (ibt train --inject-grad-fault): multiplies the gradient of the tensor
  // `name` ("*": every tensor) by `scale` before the gradients are reduced, on the ranks
  // that count that tensor's shard once, so a check must find it. Not with ZeRO-2/3
  // (their gradients are reduced inside the backward).
  void inject_grad_fault(const std::string& name, double scale);
  // Bytes of parameters, gradients and AdamW states this rank holds between steps.
  double model_state_bytes();
  // ZeRO-2/3: the most bytes of gathered weights and unit gradients held at once in
  // the steps so far (0 otherwise).
  double zero_buffer_peak_bytes() const { return zero_ ? zero_->peak_buffer_bytes() : 0.0; }

  // --- checkpointing (models/checkpoint/) ---
  // Steps completed: also the data position, since step k reads batch k.
  int64_t steps_done() const { return step_; }
  // This rank's full training state: "params/c<chunk>/<name>" weights; AdamW moments
  // "adam_m/c<chunk>/<name>", "adam_v/..." or, with ZeRO-1, this rank's slices
  // "zero1/bucket<i>/m", ".../v"; "moe_bias/c<chunk>/layer<i>" selection biases.
  // Gradients are not state (zeroed at the start of every step).
  TrainingState training_state();
  // Takes back what training_state() gave on the same model, split and rank. Throws
  // UsageError naming the first array that is missing or has the wrong element count.
  void restore_training_state(const TrainingState& state);

 private:
  // A set of weights whose gradients are reduced over one communicator (dense over dp,
  // experts over expert_dp) and, with ZeRO-1, whose optimizer states are sharded there.
  struct Bucket {
    std::vector<Param*> params;
    Communicator* comm = nullptr;
    size_t total = 0;                 // elements
    size_t shard = 0;                 // ZeRO-1: padded total / comm size
    Communicator* replica = nullptr;  // HSDP: the shard's replicas (dense bucket)
    std::vector<float> m, v, grad_shard;
  };
  void reduce_gradients(double& dp_seconds);
  // ZeRO-1 step: reduce-scatter, sharded AdamW, all-gather. Returns this rank's share
  // of the squared gradient norm (each weight counted once over the world).
  double zero1_reduce_and_update(double& dp_seconds, double& compute_seconds);
  void all_reduce_grads(const std::vector<Param*>& params, Communicator& comm);
  // Multiplies the faulty tensor's gradient (inject_grad_fault), if any.
  void apply_grad_fault();
  // This rank's counted share of each tensor's sums (StepStats::tensors), from the
  // path the step took (AdamW's sums, ZeRO-1 slices, ZeRO-2/3 units).
  std::vector<TensorSums> tensor_sums(const std::vector<SquareSums>& update_sums);
  // With tensor_copies_: the reduced gradients (before the update) and the values
  // (after it) into copies_, from the path the step takes (ZeRO-1's gradient slices are
  // taken in zero1_reduce_and_update).
  void take_grad_copies();
  void take_value_copies();
  // Whole-model sum of squares of values or grads, each parameter counted once.
  double global_sum_squares(bool grads);

  ModelConfig model_;
  ParallelSplit split_;
  TrainConfig train_;
  const DataSource& data_;
  std::unique_ptr<ProcessGroups> groups_;
  PipelineSchedule schedule_;
  std::vector<std::unique_ptr<Transformer>> chunks_;  // chunk c = virtual stage c*pp + stage
  std::unique_ptr<AdamW> optimizer_;                  // without ZeRO
  bool grads_clear_ = false;                          // every .grad is zero (the optimizer cleared it)
  std::unique_ptr<ZeroUnits> zero_;                   // ZeRO-2 and ZeRO-3
  std::vector<Bucket> buckets_;
  // Activation caches of finished microbatches, kept so the next step's reuse their
  // buffers instead of allocating and zero-filling them afresh.
  std::vector<StageCache> spare_caches_;
  int64_t step_ = 0;
  bool per_tensor_sums_ = false;
  bool tensor_copies_ = false;
  std::vector<TensorCopy> copies_;                // this step's (tensor_copies_)
  std::map<std::string, double> zero_grad_sums_;  // ZeRO-1/2/3: this step's counted gradient slices
  std::string fault_tensor_;                      // inject_grad_fault ("" = none)
  double fault_scale_ = 1.0;
};

}  // namespace ibt::models
