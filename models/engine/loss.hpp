#pragma once
// The LM head and cross-entropy loss, vocab-parallel capable (Megatron): shard r of t
// holds head rows [r*V/t, (r+1)*V/t) and computes its slice of the logits. The softmax
// over the full vocabulary needs three reductions over the TP group, made explicit as
// stages the caller runs with all-reduces in between:
//   1. local_row_max()            -> all-reduce MAX  -> row_max
//   2. local_sum_exp_and_target() -> all-reduce SUM of both vectors
//   3. loss_sum() and logits_grad() need no communication.
// With t = 1 the reductions are identities and cross_entropy() runs the three stages.
#include <cstdint>
#include <vector>

#include "models/engine/tensor.hpp"
#include "models/plan/model_config.hpp"

namespace ibt::models {

class LmHead {
 public:
  // tied: the head multiplies by `tied_table` (the embedding's shard, same rows).
  LmHead(const ModelConfig& m, uint64_t seed, Shard tp, Param* tied_table = nullptr);
  void forward(const Tensor& x, Tensor& logits) const;  // logits [T, V_local]
  // dx overwritten (partial over TP: the caller all-reduces); weight grad accumulated.
  void backward(const Tensor& x, const Tensor& d_logits, Tensor& dx);
  Param& weight() { return *weight_; }
  int64_t vocab_begin() const { return vocab_begin_; }
  bool tied() const { return weight_ != &own_; }

 private:
  Param own_;
  Param* weight_;
  int64_t vocab_begin_;
  int64_t hidden_;
};

struct SoftmaxStats {
  std::vector<float> row_max;       // [T]
  std::vector<float> sum_exp;       // [T] sum_j exp(logit_j - row_max)
  std::vector<float> target_logit;  // [T] (0 on shards that do not own the target)
};

void local_row_max(const Tensor& logits, std::vector<float>& row_max);
void local_sum_exp_and_target(const Tensor& logits, const std::vector<int32_t>& targets, int64_t vocab_begin,
                              SoftmaxStats& stats);
// Sum over rows of -log softmax(target), in double.
double loss_sum(const SoftmaxStats& stats);
// d_logits = scale * (softmax - onehot(target)) for this shard's columns.
void logits_grad(const Tensor& logits, const std::vector<int32_t>& targets, int64_t vocab_begin,
                 const SoftmaxStats& stats, float scale, Tensor& d_logits);

// Unsharded convenience (t = 1): returns the loss sum and fills d_logits with
// scale * dloss_sum/dlogits.
double cross_entropy(const Tensor& logits, const std::vector<int32_t>& targets, float scale, Tensor& d_logits);

}  // namespace ibt::models
