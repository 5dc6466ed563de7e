#pragma once
// The reductions a tensor-parallel shard of a block needs from its TP peers. The
// layers themselves never communicate: they return partial sums, and the block calls
// these at the Megatron points (after the row-parallel GEMMs in forward, after the
// column-parallel GEMMs' input gradients in backward, the vocab-parallel softmax, the
// MoE gate-weight gradient). The serial reference uses IdentityTp (t = 1); the CPU
// executor implements them with all-reduces on the TP communicator.
#include <vector>

#include "models/engine/tensor.hpp"

namespace ibt::models {

class TpReducer {
 public:
  virtual ~TpReducer() = default;
  virtual void sum(Tensor& t) = 0;
  virtual void sum(std::vector<float>& v) = 0;
  virtual void max(std::vector<float>& v) = 0;
  // Sequence parallelism (Korthikanti et al. 2022): between the TP regions each rank
  // keeps 1/t of the token rows (rank r: rows [r*T/t, (r+1)*T/t)); the all-reduce after
  // a row-parallel GEMM becomes a reduce-scatter of rows, and the input of a
  // column-parallel GEMM is all-gathered first.
  virtual bool sequence_parallel() const { return false; }
  virtual void all_gather_rows(const Tensor& local, Tensor& full) { full = local; }
  virtual void reduce_scatter_rows(const Tensor& full, Tensor& local) { local = full; }
};

// t = 1: every partial sum is already complete.
class IdentityTp final : public TpReducer {
 public:
  void sum(Tensor&) override {}
  void sum(std::vector<float>&) override {}
  void max(std::vector<float>&) override {}
};

}  // namespace ibt::models
