#pragma once
// Weight gradients computed later: the engine's side of a split backward (zero-bubble
// schedules, schedule.hpp zb-h1). A backward run while a DeferWeightGrads is alive on
// the thread computes only the input gradients; every weight-gradient GEMM it reaches
// (linear_backward_weight, blas.hpp: all the engine's linear layers, attention
// projections, experts, router and LM head) is queued with copies of its two operands,
// and run() later performs exactly those GEMMs into the same gradient buffers: the W
// pass. The arithmetic is the same call on the same values, so a step's gradients are
// the same as with the backward in one piece whenever the W passes of one weight run in
// microbatch order (they do in zb-h1). Norm and embedding gradients (elementwise sums)
// are not GEMMs and stay in the backward (B).
//
// What a queue holds is what W needs: each GEMM's input rows x and output gradient dy,
// held from B until W (accounting.hpp counts the chunk's activations until its W).
#include <cstdint>
#include <vector>

namespace ibt::models {

class WeightGradQueue {
 public:
  // Queues dw[out,in] += dy[T,out]^T · x[T,in] (linear_backward_weight's contract).
  void push(const float* dy, const float* x, float* dw, int64_t tokens, int64_t in, int64_t out);
  // Performs the queued GEMMs in the order they were queued and empties the queue.
  void run();
  bool empty() const { return items_.empty(); }
  // Bytes of operands held.
  double bytes() const;

 private:
  struct Item {
    std::vector<float> dy, x;
    float* dw = nullptr;
    int64_t tokens = 0, in = 0, out = 0;
  };
  std::vector<Item> items_;
};

// While alive, linear_backward_weight on this thread queues into `queue` instead of
// computing. Not nestable: a second one on the same thread is a logic error.
class DeferWeightGrads {
 public:
  explicit DeferWeightGrads(WeightGradQueue& queue);
  ~DeferWeightGrads();
  DeferWeightGrads(const DeferWeightGrads&) = delete;
  DeferWeightGrads& operator=(const DeferWeightGrads&) = delete;
};

// The queue linear_backward_weight must use on this thread, or nullptr.
WeightGradQueue* deferred_weight_grads();

}  // namespace ibt::models
