#pragma once
// Token embedding, vocab-parallel capable (Megatron): shard r of t holds table rows
// [r*V/t, (r+1)*V/t). Its forward output is a PARTIAL SUM: rows for tokens the shard
// does not own are zero, so the caller all-reduces (sum) over the TP group; with t = 1
// it is already the full embedding.
#include <cstdint>
#include <vector>

#include "models/engine/tensor.hpp"
#include "models/plan/model_config.hpp"

namespace ibt::models {

class Embedding {
 public:
  Embedding(const ModelConfig& m, uint64_t seed, Shard tp);
  // out: [tokens, hidden], overwritten.
  void forward(const std::vector<int32_t>& tokens, Tensor& out) const;
  // d_out: the FULL gradient of the embedding output (after the TP all-reduce, every
  // shard holds the same one); accumulates into table.grad for owned rows.
  void backward(const std::vector<int32_t>& tokens, const Tensor& d_out);

  int64_t vocab_begin() const { return vocab_begin_; }
  Param table;  // [vocab/t, hidden], name "embedding.weight"

 private:
  int64_t vocab_begin_ = 0;
  int64_t hidden_ = 0;
};

}  // namespace ibt::models
