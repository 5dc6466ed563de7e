#pragma once
// RMSNorm (gain only) and LayerNorm (gain and bias) over the last dimension. Norms are
// replicated over TP: their input and output gradient are full on every TP rank, so
// their weight gradients are identical there and need no reduction (without sequence
// parallelism; with it, the caller all-reduces the gain/bias gradients over TP).
#include <string>
#include <vector>

#include "models/engine/tensor.hpp"
#include "models/plan/model_config.hpp"

namespace ibt::models {

struct NormCache {
  Tensor x;                 // input
  std::vector<float> mean;  // per row (LayerNorm only)
  std::vector<float> rstd;  // per row: 1 / sqrt(var + eps) or 1 / rms
};

class NormLayer {
 public:
  static constexpr float kEps = 1e-5f;
  NormLayer(Norm kind, int64_t width, const std::string& name);
  void forward(const Tensor& x, Tensor& y, NormCache& cache) const;
  // dx overwritten; gain (and bias) gradients accumulated.
  void backward(const NormCache& cache, const Tensor& dy, Tensor& dx);
  std::vector<Param*> params();

  Norm kind;
  Param gain;  // [width], ones
  Param bias;  // [width], zeros; LayerNorm only (empty for RMSNorm)
};

}  // namespace ibt::models
