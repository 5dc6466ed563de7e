#pragma once
// One pre-norm transformer layer:
//   h = x + Attention(Norm(x));  y = h + FFN(Norm(h))
// or, with ModelConfig::parallel_block (GPT-J, PaLM), the parallel form
//   y = x + Attention(Norm(x)) + FFN(Norm(x))
// with one norm (attn_norm; ffn_norm is then unused and not a parameter) and one TP
// reduction per pass instead of two. FFN is the dense MLP or, for MoE layers
// (ModelConfig::layer_is_moe), the MoE layer. TP reductions go through the TpReducer
// (see tp_reducer.hpp).
#include <cstdint>
#include <optional>
#include <vector>

#include "models/engine/layers/attention.hpp"
#include "models/engine/layers/expert_exchange.hpp"
#include "models/engine/layers/mlp.hpp"
#include "models/engine/layers/moe.hpp"
#include "models/engine/layers/norm.hpp"
#include "models/engine/layers/tp_reducer.hpp"
#include "models/plan/model_config.hpp"

namespace ibt::models {

struct BlockCache {
  NormCache attn_norm, ffn_norm;
  AttentionCache attention;
  MlpCache mlp;
  MoeCache moe;
};

class TransformerBlock {
 public:
  // ep: this rank's part of the expert-parallel group (MoE layers only). With
  // ep.count > 1 forward/backward need an ExpertExchange for the all-to-alls.
  TransformerBlock(const ModelConfig& m, uint64_t seed, int layer, Shard tp, Shard ep);
  // cp: the context-parallel group (attention only; context_parallel.hpp), or nullptr.
  void forward(const Tensor& x, int batch, int seq, Tensor& y, BlockCache& cache, TpReducer& tp,
               ExpertExchange* ep = nullptr, ContextExchange* cp = nullptr) const;
  // aux_weight_per_sequence: see MoeLayer::backward. dx overwritten.
  void backward(BlockCache& cache, int batch, int seq, const Tensor& dy, double aux_weight_per_sequence, Tensor& dx,
                TpReducer& tp, ExpertExchange* ep = nullptr, ContextExchange* cp = nullptr);
  std::vector<Param*> params();
  int layer() const { return layer_; }

  NormLayer attn_norm, ffn_norm;
  SelfAttention attention;
  std::optional<Mlp> mlp;
  std::optional<MoeLayer> moe;

 private:
  int layer_;
  bool parallel_;  // ModelConfig::parallel_block
  void parallel_forward(const Tensor& x, int batch, int seq, Tensor& y, BlockCache& c, TpReducer& tp,
                        ExpertExchange* ep, ContextExchange* cp) const;
  void parallel_backward(BlockCache& c, int batch, int seq, const Tensor& dy, double aux_w, Tensor& dx, TpReducer& tp,
                         ExpertExchange* ep, ContextExchange* cp);
  void moe_forward(const Tensor& x, Tensor& y, MoeCache& c, ExpertExchange* ep) const;
  void moe_backward(MoeCache& c, int seq, const Tensor& dy, double aux_w, Tensor& dx, TpReducer& tp,
                    ExpertExchange* ep);
  // Expert compute on dispatched rows, through the EP all-to-alls when ep is set.
  void run_experts_forward(MoeCache& c, ExpertExchange* ep) const;
  void run_experts_backward(MoeCache& c, const Tensor& d_expert_out, Tensor& d_rows, ExpertExchange* ep);
};

}  // namespace ibt::models
