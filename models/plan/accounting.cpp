#include "models/plan/accounting.hpp"

#include <cstdint>

#include <algorithm>
#include <cmath>
#include <vector>

#include "models/plan/schedule.hpp"

namespace ibt::models {

namespace {

double norm_params(const ModelConfig& m, double width) { return m.norm == Norm::layernorm ? 2 * width : width; }
// Weights of one MLP of inner size f: SwiGLU has gate, up and down; GELU up and down.
double mlp_params(const ModelConfig& m, double f) {
  return (m.activation == Activation::swiglu ? 3.0 : 2.0) * m.hidden * f;
}

}  // namespace

ParamCounts count_parameters(const ModelConfig& m) {
  ParamCounts c;
  const double h = m.hidden, H = m.heads, G = m.kv_heads;
  c.embedding = static_cast<double>(m.vocab) * h;
  c.lm_head = m.tied_embeddings ? 0.0 : static_cast<double>(m.vocab) * h;
  c.final_norm = norm_params(m, h);
  if (m.attention == Attention::standard) {
    const double d = m.head_dim();
    c.attention_per_layer = h * (H * d + 2 * G * d) + H * d * h;
    c.attention_kv_per_layer = 2 * h * G * d;
  } else {
    const double dqk = m.qk_head_dim(), dv = m.value_head_dim();
    double q = m.q_lora_rank > 0 ? h * m.q_lora_rank + m.q_lora_rank * H * dqk : h * H * dqk;
    double kv_down = h * (m.kv_lora_rank + m.qk_rope_head_dim);
    double kv_up = m.kv_lora_rank * H * (m.qk_nope_head_dim + dv);
    // The latent norms (q_a and kv_a layernorm) belong to the attention block.
    c.attention_norms_per_layer =
        (m.q_lora_rank > 0 ? norm_params(m, m.q_lora_rank) : 0.0) + norm_params(m, m.kv_lora_rank);
    c.attention_per_layer = q + kv_down + kv_up + H * dv * h + c.attention_norms_per_layer;
    // Down projections and latent norms are not split by TP.
    c.attention_tp_replicated_per_layer =
        (m.q_lora_rank > 0 ? h * m.q_lora_rank : 0.0) + kv_down + c.attention_norms_per_layer;
  }
  c.norms_per_layer = m.norms_per_layer() * norm_params(m, h);
  c.moe_layers = m.moe_layers();
  c.dense_layers = m.layers - c.moe_layers;
  c.dense_mlp_per_layer = mlp_params(m, m.ffn_hidden);
  if (m.is_moe()) {
    c.router_per_layer = h * m.num_experts;
    c.per_expert = mlp_params(m, m.expert_ffn_hidden);
    c.shared_per_layer = m.shared_experts * c.per_expert;
  }
  const double layer_common = c.attention_per_layer + c.norms_per_layer;
  const double moe_all = c.router_per_layer + m.num_experts * c.per_expert + c.shared_per_layer;
  const double moe_active = c.router_per_layer + m.top_k * c.per_expert + c.shared_per_layer;
  c.total = c.embedding + c.lm_head + c.final_norm + m.layers * layer_common + c.dense_layers * c.dense_mlp_per_layer +
            c.moe_layers * moe_all;
  c.active = c.total - c.moe_layers * (m.num_experts - m.top_k) * c.per_expert;
  // Matmul weights a token meets: everything active but the embedding lookup and norms
  // (a tied head still multiplies by the embedding matrix).
  c.matmul_active = m.layers * (c.attention_per_layer - c.attention_norms_per_layer) +
                    c.dense_layers * c.dense_mlp_per_layer + c.moe_layers * moe_active +
                    static_cast<double>(m.vocab) * h;
  return c;
}

double attention_forward_flops_per_token(const ModelConfig& m) {
  return 2.0 * m.layers * m.seq_len * m.heads * (m.qk_head_dim() + m.value_head_dim());
}

double model_flops_per_token(const ModelConfig& m) {
  return 6.0 * count_parameters(m).matmul_active + 3.0 * attention_forward_flops_per_token(m);
}

double model_flops_per_step(const ModelConfig& m, double sequences) {
  return model_flops_per_token(m) * sequences * m.seq_len;
}

double recompute_flops_per_token(const ModelConfig& m, Recompute r) {
  switch (r) {
    case Recompute::none: return 0.0;
    case Recompute::selective: return attention_forward_flops_per_token(m);
    case Recompute::full: {
      const ParamCounts c = count_parameters(m);
      const double layer_matmul = c.matmul_active - static_cast<double>(m.vocab) * m.hidden;
      return 2.0 * layer_matmul + attention_forward_flops_per_token(m);
    }
  }
  return 0.0;
}

double hardware_flops_per_step(const ModelConfig& m, double sequences, Recompute r) {
  return (model_flops_per_token(m) + recompute_flops_per_token(m, r)) * sequences * m.seq_len;
}

double megatron_model_flops(double B, double s, double l, double h, double V) {
  return 72.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * l * h));
}

double megatron_full_recompute_flops(double B, double s, double l, double h, double V) {
  return 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
}

Precision fp32_adam() { return {"fp32", 4, 4, 8, 4, true}; }
Precision bf16_mixed_adam() { return {"bf16-mixed", 2, 2, 12, 2, false}; }

double activation_bytes_per_layer(const ModelConfig& m, const ParallelSplit& s, const Precision& p, int layer) {
  // Per token, in elements of p.activation_bytes (fp32_* in 4-byte values), grouped by
  // how tensor parallelism divides them (accounting.hpp lists the tensors and sources).
  // The *_in parts are the inputs of linear layers kept for their weight gradient (held
  // at p.saved_gemm_input_bytes when set: Transformer Engine's fp8).
  const double h = m.hidden, H = m.heads, t = s.tp;
  const int kv_replicas = m.kv_replicas(s.tp);
  const bool swiglu = m.activation == Activation::swiglu;
  const double mlp_pre = swiglu ? 2.0 : 1.0;  // (gate, up) or the pre-activation; the act output is the down's input
  // Every norm's input and output: full rows, 1/t only with SP. A parallel block has
  // one norm, its output the input of both branches. The outputs feed the QKV and MLP-up
  // GEMMs.
  const double norms = m.norms_per_layer();
  double residual = norms * h, residual_in = norms * h;
  double residual_fp32 = norms * (m.norm == Norm::layernorm ? 2.0 : 1.0);  // norm rstd (+ mean) per row
  double unsharded = 0, unsharded_in = 0;  // never divided by t: whole on every TP rank, or already per rank
  double sharded = 0, sharded_in = 0;      // always divided by t (heads or ffn columns)
  double core = 0, core_fp32 = 0;          // attention core's own saved state, sharded by heads
  // MaxText's "minimal" policy (SelectivePolicy::dots_without_batch_dims), per token:
  // the layer input and the output projection's output (rows, 1/t with SP), the other
  // weight matmuls' outputs (Q, K, V and MLA's latents, the MLP gate/up), nothing else
  // (accounting.hpp).
  double dots_unsharded = 0, dots_sharded = 0;
  double context = 0;  // the attention output, the output projection's input (sharded)
  double mla_qkv = 0;  // MLA's up-projected Q, K, V (sharded): dropped by Megatron-Core's mla_up_proj
  if (m.attention == Attention::standard) {
    const double G = m.kv_heads, d = m.head_dim();
    sharded += H * d;  // Q
    context = H * d;
    // K and V (GQA: G heads): split by TP, or one replicated head per rank.
    if (kv_replicas > 1)
      unsharded += 2 * d;
    else
      sharded += 2 * G * d;
    dots_sharded += H * d + (kv_replicas > 1 ? 0.0 : 2 * G * d);
    dots_unsharded += kv_replicas > 1 ? 2 * d : 0.0;
  } else {
    const double dqk = m.qk_head_dim(), dv = m.value_head_dim();
    // Latents of the replicated down projections and their norms' outputs (the up
    // projections' inputs).
    if (m.q_lora_rank > 0) {
      unsharded += m.q_lora_rank;
      unsharded_in += m.q_lora_rank;
    }
    unsharded += m.kv_lora_rank + m.qk_rope_head_dim;
    unsharded_in += m.kv_lora_rank;
    sharded += 2 * H * dqk + H * dv;  // Q, K, V
    mla_qkv = 2 * H * dqk + H * dv;
    context = H * dv;
    dots_unsharded += (m.q_lora_rank > 0 ? m.q_lora_rank : 0.0) + m.kv_lora_rank + m.qk_rope_head_dim;
    dots_sharded += 2 * H * dqk + H * dv;
  }
  sharded += context;  // the attention output: kept by the attention kernel (and the projection)
  // With fp8 the output projection keeps its own fp8 copy of it beside the kernel's
  // (Precision::saved_gemm_input_bytes).
  const double context_fp8_copy = p.saved_gemm_input_bytes > 0 ? context : 0.0;
  // Context parallelism, all_gather variant: the K/V of the whole sequence gathered
  // from the CP group are kept for the backward (cp times the local K/V per local
  // token); the ring variant keeps only the local ones (its blocks are transient:
  // cp_transient_bytes()).
  if (s.cp > 1 && s.cp_comm == CpComm::all_gather) unsharded += s.cp * kv_elements_per_token_per_rank(m, s.tp);
  // Ring CP is blockwise whatever the kernel: each block's probabilities are recomputed
  // in the backward from one log-sum-exp per head and query (layers/ring_attention.cpp).
  const bool ring = s.cp > 1 && s.cp_comm == CpComm::ring;
  if (p.stores_attention_scores && !ring)
    core = H * m.seq_len;  // softmax probabilities, one s-long row per head and query
                           // (with CP: the rank's queries against the whole sequence)
  else
    core_fp32 = H;  // FlashAttention: one log-sum-exp per head and query
  if (m.layer_is_moe(layer)) {
    residual_fp32 += m.num_experts + m.top_k;  // router logits, gate weights
    // Dispatched rows: each expert's input, the whole sequence of the TP group (experts
    // are TP-split, so every TP rank needs every row). The experts' outputs, kept for the
    // gate weights' gradient, after the TP reduce-scatter (rows split with SP). The
    // routed experts' tensors: top_k expert MLPs per token, plus the shared experts.
    unsharded_in += m.top_k * h;
    residual += m.top_k * h;
    const double experts = m.top_k + m.shared_experts;
    sharded += experts * mlp_pre * m.expert_ffn_hidden;
    sharded_in += experts * m.expert_ffn_hidden;
    dots_sharded += experts * mlp_pre * m.expert_ffn_hidden;
  } else {
    sharded += mlp_pre * m.ffn_hidden;
    sharded_in += m.ffn_hidden;
    dots_sharded += mlp_pre * m.ffn_hidden;
  }
  const double res_div = s.sequence_parallel ? t : 1.0;
  const double in_bytes = p.saved_gemm_input_bytes > 0 ? p.saved_gemm_input_bytes : p.activation_bytes;
  double bytes = 0;  // per token
  switch (s.recompute) {
    case Recompute::none:
      bytes = (residual / res_div + unsharded + (sharded + core) / t) * p.activation_bytes +
              (residual_in / res_div + unsharded_in + (sharded_in + context_fp8_copy) / t) * in_bytes +
              (residual_fp32 / res_div + core_fp32 / t) * 4.0;
      break;
    case Recompute::selective:
      if (p.selective == SelectivePolicy::dots_without_batch_dims) {
        // The layer input, the output projection's output and the other weight matmuls'
        // outputs, in the activation dtype.
        bytes = (2 * h / res_div + dots_unsharded + dots_sharded / t) * p.activation_bytes;
        break;
      }
      // Korthikanti's selective: the core is recomputed from the kept Q, K, V; with
      // Megatron-Core's policy on MLA, Q, K and V too, from the kept latents.
      bytes = (residual / res_div + unsharded +
               (sharded - (p.selective == SelectivePolicy::megatron_core ? mla_qkv : 0.0)) / t) *
                  p.activation_bytes +
              (residual_in / res_div + unsharded_in + (sharded_in + context_fp8_copy) / t) * in_bytes +
              residual_fp32 / res_div * 4.0;
      break;
    case Recompute::full:  // only the layer's input
      bytes = h / res_div * p.activation_bytes;
      break;
  }
  // With CP the rank holds seq_len/cp tokens of each sequence.
  const double tokens = static_cast<double>(m.seq_len) * s.micro_batch_size / s.cp;
  return tokens * bytes;
}

double cp_kv_elements_per_token(const ModelConfig& m) {
  if (m.attention == Attention::standard) return 2.0 * m.kv_heads * m.head_dim();
  return static_cast<double>(m.heads) * (m.qk_head_dim() + m.value_head_dim());
}

double kv_elements_per_token_per_rank(const ModelConfig& m, int tp) {
  if (m.attention == Attention::standard) return 2.0 * m.kv_heads_per_rank(tp) * m.head_dim();
  return cp_kv_elements_per_token(m) / tp;
}

double attention_params_per_rank(const ModelConfig& m, const ParamCounts& c, int tp) {
  const double replicated = c.attention_tp_replicated_per_layer, kv = c.attention_kv_per_layer;
  return (c.attention_per_layer - replicated - kv) / tp + kv * m.kv_heads_per_rank(tp) / m.kv_heads + replicated;
}

double cp_transient_bytes(const ModelConfig& m, const ParallelSplit& s, const Precision& p) {
  if (s.cp == 1 || s.cp_comm != CpComm::ring) return 0.0;
  const double block_tokens = static_cast<double>(m.seq_len) * s.micro_batch_size / s.cp;
  // The backward is the peak (layers/ring_attention.cpp): the K/V block in hand and the
  // one arriving, and three dK/dV blocks: this step's contribution, the previous
  // step's sum in flight to the next rank, and the partial sum arriving.
  return 5.0 * block_tokens * kv_elements_per_token_per_rank(m, s.tp) * p.activation_bytes;
}

namespace {
// Whether sums of whole multiples of `bytes` up to the counts of `peaks` are exact in
// doubles (whole numbers of bytes, every sum below 2^53): then the peak read from the
// schedule's held_peaks equals, bit for bit, the walk's held bytes, which adds and
// subtracts the same whole numbers in another order.
bool held_sums_exact(const std::vector<double>& bytes, const std::vector<std::vector<int>>& peaks) {
  double most = 0;
  for (size_t c = 0; c < bytes.size(); ++c) {
    if (!(bytes[c] >= 0) || std::floor(bytes[c]) != bytes[c]) return false;
    int count = 0;
    for (const std::vector<int>& point : peaks) count = std::max(count, point[c]);
    most += count * bytes[c];
  }
  return most < 0x1p53;
}
}  // namespace

double peak_activation_bytes(const ModelConfig& m, const ParallelSplit& s, const Precision& p, int stage,
                             const PipelineSchedule& sched) {
  // Bytes one microbatch leaves on each chunk of the stage (its layers summed).
  std::vector<double> chunk_bytes(s.vpp, 0.0);
  for (int chunk = 0; chunk < s.vpp; ++chunk) {
    const LayerRange range = stage_layers(m, s.pp * s.vpp, s.virtual_stage(stage, chunk));
    for (int l = range.first; l < range.end(); ++l) chunk_bytes[chunk] += activation_bytes_per_layer(m, s, p, l);
  }
  return peak_held(sched, stage, chunk_bytes,
                   sched.held_peaks.empty() || held_sums_exact(chunk_bytes, sched.held_peaks.at(stage)));
}

RankMemory memory_per_rank(const ModelConfig& m, const ParallelSplit& s, const Precision& p, int stage) {
  return memory_per_rank(m, s, p, stage, build_schedule(s));
}

RankMemory memory_per_rank(const ModelConfig& m, const ParallelSplit& s, const Precision& p, int stage,
                           const PipelineSchedule& sched) {
  const ParamCounts c = count_parameters(m);
  const int V = s.pp * s.vpp;
  const double t = s.tp;
  RankMemory r;
  r.stage = stage;
  for (int chunk = 0; chunk < s.vpp; ++chunk) {
    const int vs = s.virtual_stage(stage, chunk);
    const LayerRange range = stage_layers(m, V, vs);
    if (vs == 0) r.params += c.embedding / t;
    if (vs == V - 1) r.params += c.lm_head / t + c.final_norm;
    for (int l = range.first; l < range.end(); ++l) {
      r.params += attention_params_per_rank(m, c, s.tp) + c.norms_per_layer;
      if (m.layer_is_moe(l)) {
        r.params += c.router_per_layer + c.shared_per_layer / t;
        const double experts = (m.num_experts / s.ep) * c.per_expert / t;
        r.params += experts;
        r.expert_params += experts;
      } else {
        r.params += c.dense_mlp_per_layer / t;
      }
    }
  }
  const double dense = r.params - r.expert_params;
  // What one copy of the sharded states holds per rank: every ZeRO stage shards over
  // the gradient groups, dp x cp (expert weights: expert_dp x cp), or the HSDP shard
  // group x cp (CP ranks are gradient replicas).
  const double d = static_cast<double>(s.shard_group > 0 ? s.shard_group : s.dp) * s.cp;
  // Expert weights: over expert_dp x cp, or with HSDP the shard group's g/ep ranks
  // holding the same experts x cp.
  const double d_expert = static_cast<double>(s.shard_group > 0 ? s.shard_group / s.ep : s.expert_dp()) * s.cp;
  const double sharded = dense / d + r.expert_params / d_expert;
  r.weights = (s.zero >= 3 ? sharded : r.params) * p.weight_bytes;
  r.grads = (s.zero >= 2 ? sharded : r.params) * p.grad_bytes;
  r.optimizer = (s.zero >= 1 ? sharded : r.params) * p.optimizer_bytes;
  // ZeRO buffers: ZeRO-2 the gradients of the unit being back-propagated; ZeRO-3 in
  // forward unit u and the prefetched u+1 gathered, in backward u, the prefetched u-1
  // and u's gradients.
  // Only ZeRO-2/3 hold unit buffers: a search checks the memory of 10^5 splits, most
  // of them ZeRO-0/1, and listing their units was a fifth of that check.
  if (s.zero >= 2)
    for (const auto& chunk : zero_units(m, s, stage))
      for (size_t i = 0; i < chunk.size(); ++i) {
        const double next = i + 1 < chunk.size() ? chunk[i + 1] : 0.0, prev = i > 0 ? chunk[i - 1] : 0.0;
        const double held = s.zero == 2 ? chunk[i] * p.grad_bytes
                                        : std::max((chunk[i] + next) * p.weight_bytes,
                                                   (chunk[i] + prev) * p.weight_bytes + chunk[i] * p.grad_bytes);
        r.buffers = std::max(r.buffers, held);
      }
  r.chunks_in_flight = max_chunks_in_flight(sched, stage);
  r.layers_in_flight = max_layers_in_flight(sched, m, stage);
  r.activations = peak_activation_bytes(m, s, p, stage, sched) + cp_transient_bytes(m, s, p);
  return r;
}

std::vector<std::vector<double>> zero_units(const ModelConfig& m, const ParallelSplit& s, int stage) {
  const ParamCounts c = count_parameters(m);
  const int V = s.pp * s.vpp;
  const double t = s.tp;
  std::vector<std::vector<double>> out;
  for (int chunk = 0; chunk < s.vpp; ++chunk) {
    const int vs = s.virtual_stage(stage, chunk);
    std::vector<double> units;
    if (vs == 0) units.push_back(c.embedding / t);
    const LayerRange range = stage_layers(m, V, vs);
    for (int l = range.first; l < range.end(); ++l) {
      double u = attention_params_per_rank(m, c, s.tp) + c.norms_per_layer;
      u += m.layer_is_moe(l) ? c.router_per_layer + c.shared_per_layer / t + (m.num_experts / s.ep) * c.per_expert / t
                             : c.dense_mlp_per_layer / t;
      units.push_back(u);
    }
    // A tied head multiplies by the embedding table: gathered (and its gradient held)
    // with the head's unit (zero_units.hpp; with PP the head part holds a copy).
    if (vs == V - 1) units.push_back((m.tied_embeddings ? c.embedding : c.lm_head) / t + c.final_norm);
    out.push_back(std::move(units));
  }
  return out;
}

RankMemory peak_memory_per_rank(const ModelConfig& m, const ParallelSplit& s, const Precision& p) {
  return peak_memory_per_rank(m, s, p, build_schedule(s));
}

RankMemory peak_memory_per_rank(const ModelConfig& m, const ParallelSplit& s, const Precision& p,
                                const PipelineSchedule& sched) {
  RankMemory best;
  for (int st = 0; st < s.pp; ++st) {
    RankMemory r = memory_per_rank(m, s, p, st, sched);
    if (st == 0 || r.total() > best.total()) best = r;
  }
  return best;
}

}  // namespace ibt::models
