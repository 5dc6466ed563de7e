#pragma once
// AdamW (Loshchilov & Hutter): Adam with bias correction and decoupled weight decay,
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
//   p -= lr * ( (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps) + wd * p )
// adamw_update() works on any contiguous slice, so ZeRO-1 can step only its shard.
#include <cstdint>
#include <vector>

#include "models/tensor.hpp"

namespace ibt::models {

struct AdamWConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;  // applied to Params with decay == true only
};

// One step (t counts from 1) over n elements.
void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n, int64_t t,
                  const AdamWConfig& c, bool decay);

class AdamW {
 public:
  AdamW(AdamWConfig config, std::vector<Param*> params);
  void step();        // one update of every parameter from its .grad
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
