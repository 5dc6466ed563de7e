#include "topologies/sim/eager_elementwise.hpp"

namespace ibt::topo {

namespace {
constexpr double kFp32 = 4;

// Per element of the hidden width: RMSNorm's eager chain beyond the fused pass (2b)
// already priced, and the block's residual add.
double norm_forward(double b) { return 4 * b + 7 * kFp32 - 2 * b; }
double norm_backward(double b) { return 6 * b + 13 * kFp32 - 2 * b; }
double residual(double b) { return 3 * b; }
double rotary(double b) { return 2 * b + 4 * kFp32; }
}  // namespace

EagerElementwise eager_elementwise_bytes(const models::ModelConfig& m, const models::ParallelSplit& split, double b) {
  const double tp = split.tp, h = m.hidden;
  // With sequence parallelism the norm op counts tokens/tp, the TP-sharded parts run on
  // every token at width/tp: per norm token that is the full width. Without it the norm
  // op counts every token and the sharded parts are width/tp.
  const double shard = split.sequence_parallel ? 1.0 : 1.0 / tp;
  double rope_width = 0, repeat_width = 0;
  if (m.attention == models::Attention::standard) {
    const double d = m.head_dim(), heads = m.heads, kv = m.kv_heads;
    rope_width = (heads + kv) * d;
    if (kv < heads) repeat_width = 2 * (kv + heads) * d;  // k and v: read kv, write heads
  } else {
    rope_width = (m.heads + 1.0) * m.qk_rope_head_dim;  // MLA: the decoupled rotary part
  }
  const double gated_fwd = m.activation == models::Activation::swiglu ? 5 * b : 2 * b;
  const double gated_bwd = m.activation == models::Activation::swiglu ? 9 * b : 3 * b;
  const double attention_body = shard * (rope_width * rotary(b) + repeat_width * b);
  const double dense_ffn = shard * m.ffn_hidden;
  const double moe_ffn = shard * (m.top_k + m.shared_experts) * static_cast<double>(m.expert_ffn_hidden);
  // Every block starts with a norm and ends in a residual add.
  const double block_forward = h * (norm_forward(b) + residual(b));
  const double block_backward = h * (norm_backward(b) + residual(b));
  EagerElementwise e;
  e.attention_forward = block_forward + attention_body;
  e.attention_backward = block_backward + attention_body;
  if (m.parallel_block) {  // one norm and one residual add start both branches
    e.attention_forward += dense_ffn * gated_fwd;
    e.attention_backward += dense_ffn * gated_bwd;
  }
  e.mlp_forward = block_forward + dense_ffn * gated_fwd;
  e.mlp_backward = block_backward + dense_ffn * gated_bwd;
  e.moe_forward = block_forward + moe_ffn * gated_fwd;
  e.moe_backward = block_backward + moe_ffn * gated_bwd;
  e.final_forward = h * norm_forward(b);
  e.final_backward = h * norm_backward(b);
  e.norm_bytes_per_token = 2.0 * h * b;
  e.first_moe_layer = m.is_moe() ? m.first_dense_layers : m.layers;
  e.layers = m.layers;
  return e;
}

double eager_extra_bytes(const EagerElementwise& e, const models::Op& op) {
  using models::OpKind;
  const double tokens = op.bytes / e.norm_bytes_per_token;
  const bool backward = op.phase == models::Phase::backward;  // recompute replays the forward
  switch (op.kind) {
    case OpKind::attn_norm: return tokens * (backward ? e.attention_backward : e.attention_forward);
    case OpKind::mlp_norm: {
      const bool moe = op.layer >= e.first_moe_layer && op.layer < e.layers;
      return tokens * (moe ? (backward ? e.moe_backward : e.moe_forward) : (backward ? e.mlp_backward : e.mlp_forward));
    }
    case OpKind::final_norm: return tokens * (backward ? e.final_backward : e.final_forward);
    default: return 0;
  }
}

}  // namespace ibt::topo
