#pragma once
// Causal self-attention with grouped-query attention (kv_heads <= heads), Megatron
// tensor-parallel: shard r of t holds query heads [r*H/t, (r+1)*H/t) and KV heads
// [r*KV/t, (r+1)*KV/t) (column-parallel Wq, Wk, Wv: rows of the full weights) and the
// matching input columns of Wo (row-parallel). Query head i uses KV head
// i / (H/KV), which stays inside the shard because both counts are split by t.
// With fewer KV heads than shards (t a multiple of KV) shard r holds the one KV head
// r / (t/KV) its query heads use, a copy of it on each of the t/KV shards sharing it:
// each shard's K/V weight gradient is then only its query heads' share, and the caller
// sums wk.grad and wv.grad over those shards (the executor's tp_kv group). The input
// gradient needs nothing extra: the TP all-reduce of dx already sums the shares.
//
// Communication points: forward() returns a PARTIAL SUM of the output (the caller
// all-reduces it over TP, or reduce-scatters it with sequence parallelism);
// backward() takes the FULL output gradient and returns a PARTIAL input gradient
// (all-reduced by the caller). No positional encoding is applied: the causal mask
// alone makes positions distinguishable (documented limitation: no RoPE).
//
// Context parallelism (context_parallel.hpp): with a ContextExchange of size cp > 1, x
// holds this CP rank's S/cp tokens of each sequence (`seq` is that local length); K and
// V are all-gathered over the CP group, and dK, dV reduce-scattered back; or, when the
// exchange is a ring, passed around it block by block (cp_ring_attention_*).
#include <cstdint>
#include <string>
#include <vector>

#include "models/engine/layers/context_parallel.hpp"
#include "models/engine/tensor.hpp"
#include "models/plan/model_config.hpp"

namespace ibt::models {

struct AttentionCache {
  Tensor x;               // input [T, hidden]
  Tensor q, k, v;         // [T, H_local*d], [T, KV_local*d], [T, KV_local*d]
  Tensor probs;           // softmax rows [B, H_local, S, S] ([B, H_local, S/cp, S] with CP)
  Tensor context;         // P·V per head, [T, H_local*d]
  Tensor k_full, v_full;  // context parallel: the CP group's K, V in sequence order [B*S, KV_local*d]
  Tensor lse;             // ring context parallel: log-sum-exp per query and head [B, H_local, S/cp] (no probs)
};

class SelfAttention {
 public:
  SelfAttention(const ModelConfig& m, uint64_t seed, int layer, Shard tp);
  // x: [batch*seq, hidden] (replicated over TP). out: [batch*seq, hidden], partial.
  void forward(const Tensor& x, int batch, int seq, Tensor& out, AttentionCache& cache,
               ContextExchange* cp = nullptr) const;
  // d_out: full output gradient. dx: partial input gradient (overwritten).
  void backward(const AttentionCache& cache, int batch, int seq, const Tensor& d_out, Tensor& dx,
                ContextExchange* cp = nullptr);
  std::vector<Param*> params() { return {&wq, &wk, &wv, &wo}; }

  Param wq, wk, wv;  // [H_local*d, hidden], [KV_local*d, hidden] x 2
  Param wo;          // [hidden, H_local*d]

 private:
  int64_t hidden_, head_dim_, heads_, kv_heads_;  // heads_/kv_heads_: local counts
  // backward()'s working buffers, kept from call to call so that a step neither
  // allocates nor clears them (each is written in full before it is read).
  struct Scratch {
    Tensor d_context, dq, dk, dv;
    Tensor ds;  // one head's score gradient [S, S]
  } scratch_;
};

}  // namespace ibt::models
