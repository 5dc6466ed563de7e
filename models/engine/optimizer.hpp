#pragma once
// AdamW (Loshchilov & Hutter): Adam with bias correction and decoupled weight decay,
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
//   p -= lr * ( (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps) + wd * p )
// adamw_update() works on any contiguous slice, so ZeRO-1 can step only its shard.
#include <cstdint>
#include <vector>

#include "models/engine/tensor.hpp"

namespace ibt::models {

struct AdamWConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;  // applied to Params with decay == true only
};

// One step (t counts from 1) over n elements.
void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n, int64_t t, const AdamWConfig& c,
                  bool decay);

// Sums of squares, in double, of the gradient an update read and of the values it wrote:
// the step's gradient and weight norms, gathered in the update's own pass over memory
// instead of two more passes over every weight. Each equals sum_squares() of the same
// array bit for bit (same order of additions).
struct SquareSums {
  double grad = 0;
  double value = 0;
};
// adamw_update() that also returns those sums.
SquareSums adamw_update_with_sums(float* param, const float* grad, float* m, float* v, int64_t n, int64_t t,
                                  const AdamWConfig& c, bool decay);
// The same, and each gradient element set to zero once read: the next step accumulates
// into it without a separate clearing pass over every gradient. Same update, same sums.
SquareSums adamw_update_with_sums_clearing_grad(float* param, float* grad, float* m, float* v, int64_t n, int64_t t,
                                                const AdamWConfig& c, bool decay);

class AdamW {
 public:
  AdamW(AdamWConfig config, std::vector<Param*> params);
  // One update of every parameter from its .grad; with `sums`, also each parameter's
  // SquareSums, in the constructor's order. With `clear_grads` every .grad is zero
  // afterwards (cleared in the update's own pass when `sums` is given).
  void step(std::vector<SquareSums>* sums = nullptr, bool clear_grads = false);
  void zero_grad();
  int64_t steps() const { return t_; }
  const AdamWConfig& config() const { return config_; }
  // Checkpointing (models/checkpoint/): the moments, one vector per parameter in the
  // order given to the constructor, and t, so a resumed run continues bit for bit.
  std::vector<std::vector<float>>& first_moments() { return m_; }
  std::vector<std::vector<float>>& second_moments() { return v_; }
  void set_steps(int64_t t) { t_ = t; }

 private:
  AdamWConfig config_;
  std::vector<Param*> params_;
  std::vector<std::vector<float>> m_, v_;
  int64_t t_ = 0;
};

}  // namespace ibt::models
