#pragma once
// The serial reference: one process, the whole model, the whole global batch of
// microbatches x micro_batch_size sequences (times dp when it stands in for a
// data-parallel run), gradient accumulation over microbatches, one AdamW step per
// training step. Every distributed split must reproduce its per-step numbers.
//
// Objective per step: mean cross-entropy over all tokens of the global batch
// + aux_loss_coeff * (mean over sequences of each MoE layer's balance loss, summed over
// layers). Reported: the mean cross-entropy (the LM loss), the aux term, the L2 norm of
// the full gradient (before the update) and of the parameters (after it).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/engine/copy_check.hpp"
#include "models/engine/data.hpp"
#include "models/engine/layers/transformer.hpp"
#include "models/engine/optimizer.hpp"
#include "models/plan/model_config.hpp"

namespace ibt::models {

struct TrainConfig {
  int microbatches = 1;
  int micro_batch_size = 1;  // sequences per microbatch
  int data_parallel = 1;     // the global batch is data_parallel * microbatches * micro_batch_size
  uint64_t seed = 1234;
  AdamWConfig adam;
  int global_sequences() const { return data_parallel * microbatches * micro_batch_size; }
};

// One tensor's sums of squares in a step: its gradient (before the update) and its value
// (after it). --check compares them tensor by tensor (models/training/train_check.hpp).
struct TensorSums {
  std::string name;  // the full tensor's name (TP shards and EP experts share it)
  SquareSums sums;
};

struct StepStats {
  int64_t step = 0;                            // 0-based
  double loss = 0;                             // mean cross-entropy over the global batch
  double aux_loss = 0;                         // balance-loss term added to the objective (0 unless aux_loss)
  double grad_norm = 0;                        // ||g||_2 over every parameter, before the update
  double param_norm = 0;                       // ||p||_2 over every parameter, after the update
  double seconds = 0;                          // wall time of the step
  int64_t tokens = 0;                          // tokens in the global batch
  std::vector<std::vector<int64_t>> moe_load;  // per MoE layer: selections per expert this step
  // Per tensor, in params() order: the reference's full figures; the cpu executor's
  // (with per_tensor_sums on) this rank's share, each element counted once over the world.
  std::vector<TensorSums> tensors;
  // The cpu executor with tensor copies on: every tensor this rank holds, gradients as
  // the update read them and values after it (copy_check.hpp); the reference's are its
  // params themselves (model().params() after step()).
  std::vector<TensorCopy> copies;
};

// Global L2 norm of a list of gradients, in double.
double l2_norm_grads(const std::vector<Param*>& params);

class ReferenceTrainer {
 public:
  ReferenceTrainer(const ModelConfig& m, const TrainConfig& config, const DataSource& data);
  StepStats step();  // runs training step number steps_done()
  int64_t steps_done() const { return step_; }
  Transformer& model() { return *model_; }
  const TrainConfig& config() const { return config_; }
  // The global batch of step `step` (what a --dump writes and the executor slices).
  Batch global_batch(int64_t step) const;

 private:
  ModelConfig model_config_;
  TrainConfig config_;
  const DataSource& data_;
  std::unique_ptr<Transformer> model_;
  std::unique_ptr<AdamW> optimizer_;
  StageCache cache_;  // one microbatch's activations; its buffers are reused every step
  int64_t step_ = 0;
};

}  // namespace ibt::models
