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
  EagerElementwise e;
  e.attention_forward = h * (norm_forward(b) + residual(b)) + attention_body;
  e.attention_backward = h * (norm_backward(b) + residual(b)) + attention_body;
  const double dense_ffn = shard * m.ffn_hidden;
  const double moe_ffn = shard * (m.top_k + m.shared_experts) * static_cast<double>(m.expert_ffn_hidden);
  e.mlp_forward = h * (norm_forward(b) + residual(b)) + dense_ffn * gated_fwd;
  e.mlp_backward = h * (norm_backward(b) + residual(b)) + dense_ffn * gated_bwd;
  e.moe_forward = h * (norm_forward(b) + residual(b)) + moe_ffn * gated_fwd;
  e.moe_backward = h * (norm_backward(b) + residual(b)) + moe_ffn * gated_bwd;
  if (m.parallel_block) {  // one norm and one residual add start both branches
    e.attention_forward = h * (norm_forward(b) + residual(b)) + attention_body + dense_ffn * gated_fwd;
    e.attention_backward = h * (norm_backward(b) + residual(b)) + attention_body + dense_ffn * gated_bwd;
  }
  e.final_forward = h * norm_forward(b);
  e.final_backward = h * norm_backward(b);
  return e;
}

double eager_extra_bytes(const EagerElementwise& e, const models::ModelConfig& m, const models::Op& op, double b) {
  using models::OpKind;
  if (op.kind != OpKind::attn_norm && op.kind != OpKind::mlp_norm && op.kind != OpKind::final_norm) return 0;
  const double tokens = op.bytes / (2.0 * m.hidden * b);
  const bool backward = op.phase == models::Phase::backward;  // recompute replays the forward
  switch (op.kind) {
    case OpKind::attn_norm: return tokens * (backward ? e.attention_backward : e.attention_forward);
    case OpKind::mlp_norm: {
      const bool moe = op.layer >= 0 && op.layer < m.layers && m.layer_is_moe(op.layer);
      return tokens * (moe ? (backward ? e.moe_backward : e.moe_forward) : (backward ? e.mlp_backward : e.mlp_forward));
    }
    default: return tokens * (backward ? e.final_backward : e.final_forward);
  }
}

}  // namespace ibt::topo
