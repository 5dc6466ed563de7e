#pragma once
// A transformer, or the part of one a pipeline stage and TP/EP shard holds: an optional
// embedding, a run of consecutive blocks, and optionally the final norm, LM head and
// loss. The serial reference is the whole model with t = 1; a pipeline executor builds
// one part per (virtual) stage and passes activations between them.
//
// Parameters are named as in the full model ("layers.3.mlp.w_up") and initialised from
// the full tensors (init.hpp), so any split holds exactly the reference's values.
#include <cstdint>
#include <optional>
#include <vector>

#include "models/engine/data.hpp"
#include "models/engine/layers/block.hpp"
#include "models/engine/layers/embedding.hpp"
#include "models/engine/layers/norm.hpp"
#include "models/engine/layers/tp_reducer.hpp"
#include "models/engine/loss.hpp"
#include "models/plan/model_config.hpp"

namespace ibt::models {

struct ModelPart {
  int first_layer = 0;
  int end_layer = -1;  // one past the last layer; -1 = to the end
  bool has_embedding = true;
  bool has_head = true;  // final norm, LM head and loss
  Shard tp;
  Shard ep;
};

struct StageCache {
  int batch = 0, seq = 0;
  std::vector<int32_t> tokens, targets;
  std::vector<BlockCache> blocks;
  NormCache final_norm;
  Tensor normed;  // final norm output, the LM head's input
  Tensor logits;  // [T, V_local]
  SoftmaxStats stats;
};

// What one microbatch's forward through this part contributed to the objective.
struct MicrobatchLoss {
  double ce_sum = 0;  // sum over tokens of -log p(target) (head part only)
  int64_t tokens = 0;
  double balance_sum = 0;                      // sum over MoE layers of MoeLayer::balance_loss_sum
  std::vector<std::vector<int64_t>> moe_load;  // per MoE layer of this part: selections per expert
};

// How the per-microbatch gradients are scaled so that accumulation over microbatches
// and data-parallel ranks gives the gradient of the global-batch objective
//   mean CE over all tokens + aux_loss_coeff * mean over sequences of the balance loss.
struct LossScale {
  float ce_per_token = 0;       // 1 / tokens in the global batch
  double aux_per_sequence = 0;  // aux_loss_coeff / sequences in the global batch
};

// Called around each unit's use: units are numbered 0.. in forward order ([embedding],
// blocks..., [final norm + LM head]); backward visits them in reverse. ZeRO-3 (FSDP)
// gathers a unit's weights in before() and frees them in after(); ZeRO-2 and 3 give
// the unit zeroed gradients before its backward and reduce-scatter them after
// (models/executor/zero_units.hpp).
class UnitHooks {
 public:
  virtual ~UnitHooks() = default;
  virtual void before_forward(int unit) = 0;
  virtual void after_forward(int unit) = 0;
  virtual void before_backward(int unit) = 0;
  virtual void after_backward(int unit) = 0;
};

class Transformer {
 public:
  Transformer(const ModelConfig& m, uint64_t seed, ModelPart part = {});
  Transformer(const Transformer&) = delete;  // the LM head may point into the embedding
  Transformer& operator=(const Transformer&) = delete;

  // input: the previous part's output [T, hidden] (nullptr when has_embedding).
  // output: this part's output (left empty on the head part).
  // ep: the EP all-to-alls (required when the part's MoE layers hold a subset of experts).
  // cp: the context-parallel group (mb then holds this CP rank's tokens, cp_local_batch).
  MicrobatchLoss forward(const Batch& mb, const Tensor* input, Tensor& output, StageCache& cache, TpReducer& tp,
                         ExpertExchange* ep = nullptr, ContextExchange* cp = nullptr, UnitHooks* hooks = nullptr) const;
  // d_output: gradient of this part's output (nullptr on the head part, which starts
  // from the loss). d_input: gradient for the previous part (empty on the embedding part).
  void backward(StageCache& cache, const Tensor* d_output, const LossScale& scale, Tensor& d_input, TpReducer& tp,
                ExpertExchange* ep = nullptr, ContextExchange* cp = nullptr, UnitHooks* hooks = nullptr);
  // Units of this part (UnitHooks): the parameters of unit u, in params() order.
  int unit_count() const;
  std::vector<Param*> unit_params(int unit);

  std::vector<Param*> params();  // each parameter once (a tied head adds nothing)
  std::vector<MoeLayer*> moe_layers();
  const ModelConfig& config() const { return config_; }
  const ModelPart& part() const { return part_; }

  std::optional<Embedding> embedding;
  std::vector<TransformerBlock> blocks;
  std::optional<NormLayer> final_norm;
  std::optional<LmHead> head;

 private:
  ModelConfig config_;
  ModelPart part_;
};

}  // namespace ibt::models
