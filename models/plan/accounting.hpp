#pragma once
// Parameter, FLOP and memory accounting for a model and a split: the figures MFU, HFU
// and memory feasibility are computed from. Pure arithmetic on doubles (counts for
// 1T-parameter models exceed 2^31).
//
// Conventions (design.md "Definitions"; these are ibt's, stated once here):
// - Parameters: weights of every linear layer, embedding, LM head (unless tied) and
//   norms (RMSNorm: h; LayerNorm: 2h). No biases (model_config.hpp).
// - matmul_active (the N of "6N"): weights a token is multiplied with: attention
//   projections, the dense MLP or the MoE router + top_k routed experts + shared
//   experts, and the LM head. Not the input embedding (a lookup) nor the norms.
// - Model FLOPs per token, training (forward + backward):
//       6 * matmul_active + attention,
//   attention = 6 * layers * seq * heads * (qk_head_dim + value_head_dim)
//   i.e. QK^T and AV over the FULL sequence (causal masking NOT discounted); for
//   standard attention this is 12 * layers * hidden * seq. For a GPT block (ffn 4h,
//   MHA, untied head) the total equals Megatron's 72·B·s·l·h²·(1 + s/6h + V/12lh)
//   exactly (megatron_model_flops() is kept as the cross-check).
// - Hardware FLOPs (HFU) add recompute: full = one more forward of every transformer
//   layer (not the LM head), selective = one more forward of the attention core.
// - MLA (DeepSeek-V3, Kimi K2) is counted by its real projections (q down/up, kv
//   down/up, out), not approximated by MHA; its attention core uses qk_head_dim = 192
//   and value_head_dim = 128 per head. Their multi-token-prediction module is not
//   modelled.
// - Memory per rank: weights + gradients + optimizer states (bytes per parameter from
//   Precision) + ZeRO buffers. Sharding is over the shard group d (dp, or the HSDP
//   shard_group; expert weights over expert_dp), per stage of ZeRO:
//     0  weights P·w, gradients P·g, optimizer P·o
//     1  optimizer P·o/d (Megatron's distributed optimizer is this stage)
//     2  also gradients P·g/d, plus a buffer of one unit's full gradients (the unit
//        being back-propagated; reduce-scattered after every backward, step_program.hpp)
//     3  also weights P·w/d, plus the gathered weights of two consecutive units (the
//        one computing and the prefetched next one) and, in backward, the computing
//        unit's full gradients: the most of max(w·(n_u + n_u+1), w·(n_u + n_u-1) + g·n_u)
//        over the stage's units (what the cpu engine holds, zero_units.hpp)
//   "Units" are the embedding, each layer and the head (final norm + LM head), FSDP's
//   usual wrapping. With the default bf16 mixed precision (w 2, g 2, o 12: fp32 master
//   weights, Adam m and v) stage 0 is 16 bytes per parameter, 1: 4 + 12/d, 2: 2 + 14/d,
//   3: 16/d (design.md), plus buffers. Megatron keeps fp32 main gradients (g 4), which
//   this plan does not assume (it would add 2 bytes per parameter, /d with ZeRO-2/3).
//   + activations: the most bytes of saved activations the stage's schedule holds at
//   once (forward done, backward not started; schedule.hpp). For 1F1B that is p - stage
//   microbatches of the stage's layers; for Megatron's interleaved schedule
//   (p-stage-1)*2 + (v-1)*p + 1 chunks, i.e. about L*(1 + (p-1)/(p*v)) layers on stage 0
//   (Narayanan et al. 2021 sec. 2.2; Korthikanti et al. 2022 sec. 4.2.3). Exact per chunk,
//   from the built schedule, not from the closed form.
// - Activations per layer and microbatch: the tensors a Llama-style block (pre-norm, no
//   biases, NO dropout: ibt's engines have none) saves for its backward pass, counted
//   per token (x seq_len x micro_batch_size), in Precision::activation_bytes per element
//   (per-row statistics in fp32):
//     norms        input and output of both norms (the output is the next GEMM's
//                  input): 4h; + rstd (RMSNorm) or mean and rstd (LayerNorm) per row
//     attention    Q (H*dqk), K and V (GQA: G*d each; MLA: H*dqk and H*dv), the core's
//                  output (H*dv, the output projection's input); MLA also keeps its
//                  latents (q: 2*q_lora_rank, kv: kv_lora + rope + kv_lora), not split by TP
//     core         unfused (Precision::stores_attention_scores, the CPU engine): the
//                  softmax probabilities, H*s per token; fused FlashAttention-style: one
//                  fp32 log-sum-exp per head (Dao 2022: the backward recomputes the scores)
//     MLP          SwiGLU: gate and up (the first GEMM's outputs) and the activation
//                  (the down GEMM's input): 3f; GELU: pre-activation and output: 2f
//     MoE layer    router logits and gate weights (E + top_k fp32); the dispatched
//                  rows, top_k*h (the experts' input: the whole sequence of the TP
//                  group on every TP rank, experts being TP-split); the experts'
//                  outputs, top_k*h, kept for the gate weights' gradient after the TP
//                  reduce-scatter (Megatron's all-to-all dispatcher; split like the
//                  norm rows); (top_k + shared) expert MLPs as above, f = expert_ffn_hidden
//   Parallel block (parallel_block, GPT-J/PaLM): one norm per layer, whose input and
//   output (the input of both branches, kept once) are 2h, plus its row statistics.
//   Replicated KV heads (tp > kv_heads): K and V are one head each per rank, 2*d,
//   not G*d/t (and CP's gathered or ring K/V likewise).
//   Tensor parallelism divides the head/ffn-column tensors (attention, core, MLP) by t;
//   the norm tensors are whole rows on every TP rank unless sequence parallelism shards
//   them by t (Megatron saves the sharded GEMM input and all-gathers it again in the
//   backward; the CPU engine keeps the gathered copy, 2h(1 - 1/t) more per token, and
//   its experts' outputs before the TP reduction, whole rows).
//   Context parallelism (cp > 1): the rank holds seq_len/cp tokens of each sequence, so
//   every per-token tensor above is counted for seq_len*b/cp tokens (the unfused core's
//   probabilities are still s long: local queries against the whole sequence). The
//   all_gather variant also keeps the gathered K/V of the whole sequence for the
//   backward (cp x the local K/V per local token, split by TP like the heads); the
//   ring variant keeps only its own and, being blockwise whatever the kernel, one
//   log-sum-exp per head and query instead of the probabilities; plus transient
//   blocks at the backward's peak: the K/V block in hand and the one arriving, and
//   three dK/dV blocks (this step's, the previous sum in flight out, the partial sum
//   arriving): 5 blocks of seq_len*b/cp tokens, counted once per rank with the
//   activations. Every ZeRO stage shards its states over dp x cp.
//   Selective recompute drops the core's saved state (scores or log-sum-exp): with
//   fused attention it saves almost nothing. Full recompute keeps the layer input only
//   (h, /t with SP). Embedding and logits buffers are not counted.
//   For a GPT block this is Korthikanti et al. 2022's Table 2 (s*b*h*(10 + 24/t +
//   5*a*s/(h*t)) bytes in 2-byte precision) minus the dropout state their block has:
//   two 1-byte sbh masks and, per attention score, a 1-byte mask and a 2-byte dropout
//   output, i.e. s*b*h*(8 + 24/t + 2*a*s/(h*t)). For Llama 3 405B (h 16384, G 8 of 128
//   heads, f 3.25h, tp 8 with SP, fused attention) it is 15.875h/t elements per token,
//   31.75*s*b*h/t bytes instead of Korthikanti's 34*s*b*h/t.
#include <string>
#include <vector>

#include "models/plan/model_config.hpp"
#include "models/plan/parallel_split.hpp"
#include "models/plan/schedule.hpp"

namespace ibt::models {

struct ParamCounts {
  // Per component (whole model, not sharded).
  double embedding = 0;
  double lm_head = 0;  // 0 when tied_embeddings
  double final_norm = 0;
  double attention_per_layer = 0;                // projections (+ MLA latent norms)
  double attention_norms_per_layer = 0;          // MLA latent norms (q_a, kv_a); 0 for standard
  double attention_tp_replicated_per_layer = 0;  // MLA down projections + latent norms: not split by TP
  double attention_kv_per_layer = 0;             // standard attention's Wk + Wv (2*h*kv_heads*head_dim)
  double norms_per_layer = 0;                    // attn_norm + mlp_norm (parallel block: the one norm)
  double dense_mlp_per_layer = 0;                // dense layers only
  double router_per_layer = 0;                   // MoE layers only
  double per_expert = 0;                         // one routed (or shared) expert
  double shared_per_layer = 0;                   // shared experts of one MoE layer
  int dense_layers = 0;
  int moe_layers = 0;
  // Totals.
  double total = 0;
  double active = 0;         // total minus the routed experts a token does not use
  double matmul_active = 0;  // N in 6N (see above)
};
ParamCounts count_parameters(const ModelConfig& m);
// One layer's attention weights on one TP rank: the TP-split projections / tp, the
// TP-replicated MLA parts whole, and Wk, Wv for the rank's KV heads: kv_heads/tp of
// them, or with tp > kv_heads one whole replicated head (model_config.hpp kv_replicas).
double attention_params_per_rank(const ModelConfig& m, const ParamCounts& c, int tp);

// Attention-core FLOPs per token, forward only: 2 * layers * seq * heads * (dqk + dv).
double attention_forward_flops_per_token(const ModelConfig& m);
// Model FLOPs per token, training (forward + backward), no recompute.
double model_flops_per_token(const ModelConfig& m);
// Model FLOPs of one step of `sequences` sequences of m.seq_len tokens.
double model_flops_per_step(const ModelConfig& m, double sequences);
// The FLOPs recompute adds per token (0 for none).
double recompute_flops_per_token(const ModelConfig& m, Recompute r);
double hardware_flops_per_step(const ModelConfig& m, double sequences, Recompute r);

// Megatron's closed forms for a GPT (Korthikanti et al. 2022; Narayanan et al. 2021):
// 72·B·s·l·h²·(1 + s/6h + V/12lh) and, with full recompute, 96·B·s·l·h²·(1 + s/6h + V/16lh).
double megatron_model_flops(double B, double s, double l, double h, double V);
double megatron_full_recompute_flops(double B, double s, double l, double h, double V);

// How an engine stores its state: bytes per parameter and per activation element, and
// whether the attention core keeps its a*s*s score matrices for the backward pass
// (Korthikanti's 5·a·s/h term) or recomputes them (fused / FlashAttention kernels).
//
// What "selective" recompute keeps differs by framework (the memory plan follows each
// one's documented policy):
// - attention_core: Korthikanti et al. 2022 section 5 (Megatron-LM/Megatron-Core
//   --recompute-granularity selective, default module core_attn): everything but the
//   attention core's scores; with a fused (flash) core that is all of the layer's
//   tensors, the same as no recompute.
// - dots_without_batch_dims: MaxText's remat_policy "minimal", which is JAX's
//   checkpoint_dots_with_no_batch_dims (MaxText/layers/models.py get_remat_policy,
//   https://github.com/AI-Hypercomputer/maxtext/blob/0042423ad678428ccc53441834f7364fdc665003/MaxText/layers/models.py):
//   only the outputs of matmuls against weights are saved -- Q, K, V, the output
//   projection's and the MLP's gate/up projections' -- beside the layer input, which
//   jax.checkpoint always keeps; norms, activations, the attention core (its batched
//   dots and the flash kernel) and the MLP down projection's input are recomputed from
//   them. The MLP down projection's output and the residual sums are not needed by the
//   backward, so they are not kept either.
// - megatron_core: attention_core for standard attention; for MLA, Megatron-Core's
//   --recompute-modules mla_up_proj, which every DeepSeek-V3 recipe of Megatron-Bridge
//   sets (B200 and GB200 ["mla_up_proj"], H100 ["mla_up_proj", "mlp"]:
//   https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/v0.2.0/scripts/performance/configs/deepseek/workload_base_configs.py)
//   and DeepSeek-V3's own training does (arXiv:2412.19437 section 3.2.3): the up
//   projections' outputs -- the full Q, K and V -- are dropped after the attention core
//   and recomputed from the kept latents in the backward. (The step is still priced
//   with the attention core's recompute, as for core_attn: the up projections cost
//   about a third of it at DeepSeek-V3's shape.)
enum class SelectivePolicy { attention_core, dots_without_batch_dims, megatron_core };

struct Precision {
  std::string name;
  double weight_bytes = 4;
  double grad_bytes = 4;
  double optimizer_bytes = 8;  // Adam m and v (+ fp32 master weights in mixed precision)
  double activation_bytes = 4;
  bool stores_attention_scores = true;
  // Bytes per element of the linear layers' inputs kept for their weight gradient; 0 =
  // activation_bytes. Transformer Engine with fp8 keeps them quantized (1 byte): _Linear
  // saves the fp8 cast of its input for the weight-gradient GEMM unless the recipe
  // overrides wgrad precision (saved_inputmat = inputmat, else inputmat_no_fp8:
  // https://github.com/NVIDIA/TransformerEngine/blob/0004dbd0231cb02d7b47d45344900a494fa13f46/transformer_engine/pytorch/module/linear.py),
  // and LayerNormLinear / LayerNormMLP do the same with the norm's and the activation's
  // output. The attention kernel still keeps its own bf16 output, so the output
  // projection's input is held twice: bf16 for the attention backward, fp8 for the
  // projection's weight gradient.
  double saved_gemm_input_bytes = 0;
  SelectivePolicy selective = SelectivePolicy::attention_core;
};
// CPU engine: 4 + 4 + 8 (m, v) = 16 bytes per parameter, naive attention (scores kept).
Precision fp32_adam();
// GPUs: 2 + 2 + 12 (fp32 master, m, v) = 16 bytes per parameter, FlashAttention-style
// core (no score matrices kept: the 5·a·s/h term is dropped).
Precision bf16_mixed_adam();

// Activation bytes one microbatch leaves on transformer layer `layer` (formula above;
// dense and MoE layers differ, all dense layers are equal).
double activation_bytes_per_layer(const ModelConfig& m, const ParallelSplit& s, const Precision& p, int layer = 0);
// K plus V elements per token (whole model width, before TP): 2*kv_heads*head_dim, or
// for MLA heads*(qk_head_dim + value_head_dim).
double cp_kv_elements_per_token(const ModelConfig& m);
// The same on one TP rank: the rank's KV heads (one replicated head when tp > kv_heads).
double kv_elements_per_token_per_rank(const ModelConfig& m, int tp);
// Ring CP's transient K/V and dK/dV blocks on one rank (0 without the ring).
double cp_transient_bytes(const ModelConfig& m, const ParallelSplit& s, const Precision& p);
// The most activation bytes a stage holds at once under the schedule (each forward adds
// its chunk's layers, each backward frees them).
double peak_activation_bytes(const ModelConfig& m, const ParallelSplit& s, const Precision& p, int stage,
                             const PipelineSchedule& schedule);

struct RankMemory {
  int stage = 0;
  double params = 0;         // parameters held by the rank
  double expert_params = 0;  // of which routed-expert weights
  double weights = 0;        // bytes
  double grads = 0;
  double optimizer = 0;
  double activations = 0;
  double buffers = 0;        // ZeRO-2/3: gathered-weight and unit-gradient buffers (above)
  int chunks_in_flight = 0;  // from the schedule (schedule.hpp max_chunks_in_flight)
  int layers_in_flight = 0;  // the same in layers (max_layers_in_flight)
  double total() const { return weights + grads + optimizer + activations + buffers; }
  double model_state() const { return weights + grads + optimizer; }  // without buffers and activations
};
// Memory of a rank of pipeline stage `stage` (all TP/CP/DP/EP peers of a stage are equal
// up to rounding). The split must be valid for the model.
RankMemory memory_per_rank(const ModelConfig& m, const ParallelSplit& s, const Precision& p, int stage);
// Same with the split's schedule built once by the caller (build_schedule(s)): what a
// search over thousands of splits should call.
RankMemory memory_per_rank(const ModelConfig& m, const ParallelSplit& s, const Precision& p, int stage,
                           const PipelineSchedule& schedule);
// ZeRO-2/3 unit sizes of a stage (parameters this rank holds unsharded per unit, in
// forward order: per chunk [embedding], layers..., [head]), and the largest pair of
// consecutive units inside one chunk (what ZeRO-3 holds gathered with prefetch).
std::vector<std::vector<double>> zero_units(const ModelConfig& m, const ParallelSplit& s, int stage);
// The stage with the largest total.
RankMemory peak_memory_per_rank(const ModelConfig& m, const ParallelSplit& s, const Precision& p);
// The same with the split's schedule built once elsewhere (a search shares it).
RankMemory peak_memory_per_rank(const ModelConfig& m, const ParallelSplit& s, const Precision& p,
                                const PipelineSchedule& schedule);

}  // namespace ibt::models
