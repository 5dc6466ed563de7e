#pragma once
// A transformer's shape, as read from a model file in models/catalog/*.json
// (models/plan/model_file.hpp loads and validates one; the JSON keys are the field names).
// Dense models leave the MoE fields at their defaults (num_experts == 0).
//
// Conventions every consumer relies on:
// - No biases anywhere (Llama-style). GPT-3 had biases; they are < 0.1% of its
//   parameters and FLOPs, and Megatron's FLOP formula ignores them too.
// - Standard attention: heads query heads of head_dim() and kv_heads key/value heads
//   of the same size (GQA when kv_heads < heads). head_dim() is hidden / heads unless
//   the file gives "head_dim" (explicit_head_dim): heads x head_dim may then differ
//   from hidden, as in Gemma and MaxText's scaled models; the Q/K/V projections map
//   hidden to heads*head_dim and the output projection back.
// - attention == mla (DeepSeek-V3, Kimi K2): multi-head latent attention, modelled by
//   its projections exactly (q down/up, kv down/up, output; see accounting.hpp), with
//   per-head query/key size qk_nope_head_dim + qk_rope_head_dim and value size
//   v_head_dim. The CPU engine does not implement MLA; accounting and the step program do.
// - parallel_block (GPT-J, PaLM): y = x + Attention(Norm(x)) + FFN(Norm(x)) with ONE
//   norm shared by both branches (GPT-J's ln_1; PaLM's "parallel formulation" applies
//   the same LayerNorm to both), so a layer has one norm, not two, and under TP the two
//   row-parallel outputs are summed before a single reduction. Without it the layer is
//   the sequential pre-norm block (h = x + Attention(Norm(x)); y = h + FFN(Norm(h))).
//   The shared-norm variant is the one GPT-J and PaLM train with; GPT-NeoX's parallel
//   residual, two separate norms of the same x, is not modelled (it would differ only
//   by one norm's weights and activations, not by the TP communication).
// - Tensor parallelism with fewer KV heads than TP ranks (kv_heads < tp, tp a multiple
//   of kv_heads): each KV head is replicated on tp/kv_heads consecutive TP ranks
//   (kv_replicas()), the ranks whose query heads use it; their K/V weight gradients are
//   summed over those replicas so the copies stay identical (parallel_split.hpp).
#include <cstdint>
#include <string>

namespace ibt::models {

enum class Norm { rmsnorm, layernorm };
enum class Activation { gelu, swiglu };
enum class RoutingBalance { none, aux_loss, aux_loss_free };  // aux_loss_free: DeepSeek-V3 bias
enum class Attention { standard, mla };

struct ModelConfig {
  std::string name;
  std::string source;  // where the shape comes from (paper, config file URL)
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;           // == heads without GQA
  int explicit_head_dim = 0;  // "head_dim" in the file; 0 = hidden / heads
  int ffn_hidden = 0;         // dense MLP inner size
  int vocab = 0;
  int seq_len = 0;
  Norm norm = Norm::rmsnorm;
  Activation activation = Activation::swiglu;
  bool tied_embeddings = false;
  bool parallel_block = false;  // attention and FFN in parallel on one norm (above)
  // Multi-head latent attention (attention == mla only; 0 otherwise).
  Attention attention = Attention::standard;
  int q_lora_rank = 0;  // 0 with mla = queries projected directly from hidden
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  // Mixture of experts.
  int num_experts = 0;  // routed experts per MoE layer; 0 = dense model
  int top_k = 0;        // experts per token
  int shared_experts = 0;
  int expert_ffn_hidden = 0;
  int first_dense_layers = 0;  // leading layers that use the dense MLP
  RoutingBalance balance = RoutingBalance::none;
  double aux_loss_coeff = 0.0;    // classic auxiliary loss weight
  double bias_update_rate = 0.0;  // aux-loss-free: bias step per training step
  // Node-limited (group-limited) routing: the experts form route_groups equal groups
  // and each token's top_k experts are drawn from at most route_group_limit of them
  // (DeepSeek-V3's n_group 8 / topk_group 4: "each token will be sent to at most 4
  // nodes", arXiv:2412.19437 section 2.1.2). 0 = no limit. The pricer sends each token
  // once per domain it reaches (sim_pricer.hpp).
  int route_groups = 0;
  int route_group_limit = 0;

  bool is_moe() const { return num_experts > 0; }
  int head_dim() const { return explicit_head_dim > 0 ? explicit_head_dim : hidden / heads; }
  bool layer_is_moe(int layer) const { return is_moe() && layer >= first_dense_layers; }
  int moe_layers() const { return is_moe() ? layers - first_dense_layers : 0; }
  // Per-head sizes of the attention core (query.key and value); equal to head_dim()
  // for standard attention.
  int qk_head_dim() const { return attention == Attention::mla ? qk_nope_head_dim + qk_rope_head_dim : head_dim(); }
  int value_head_dim() const { return attention == Attention::mla ? v_head_dim : head_dim(); }
  // Norms per transformer layer: 1 for a parallel block, 2 for the sequential one.
  int norms_per_layer() const { return parallel_block ? 1 : 2; }
  // TP ranks holding each KV head (standard attention): tp / kv_heads when tp exceeds
  // kv_heads (replicated heads), else 1; and the KV heads one TP rank holds.
  int kv_replicas(int tp) const { return attention == Attention::standard && tp > kv_heads ? tp / kv_heads : 1; }
  int kv_heads_per_rank(int tp) const { return kv_replicas(tp) > 1 ? 1 : kv_heads / tp; }
};

}  // namespace ibt::models
