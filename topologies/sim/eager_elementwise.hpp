#pragma once
// What a layer's element-wise work costs in eager PyTorch, where every operator is its own
// kernel that reads its inputs from HBM and writes its output back. The step program
// prices a norm as one fused pass (read and write the activation once: 2 x element bytes
// per element, step_emit.cpp) and leaves rotary embedding, the SwiGLU product and the
// residual adds inside the GEMMs around them, as fused stacks (Megatron-Core with
// Transformer Engine, XLA) run them. An eager stack (topologies/stacks, "elementwise":
// "eager") pays these extra bytes, which the pricer adds to the norm op that starts each
// block (sim_pricer.cpp): the attention block's to attn_norm, the MLP block's to mlp_norm.
//
// The kernels are those of torchtitan's Llama (torchtitan/models/llama/model.py and
// models/norms.py, "rmsnorm", the Dec-2024 default without torch.compile), counted per
// element at b bytes (bf16: 2) and fp32 f = 4, forward / backward (autograd of the same
// chain; the fp32 intermediates are materialised):
//   RMSNorm  x.float() b+f, pow 2f, mean f, x*rstd 2f, type_as f+b, *weight 2b
//            = 4b+7f (36 B) forward; the backward of each, with the two branches of x
//            summed, 6b+13f (64 B). The fused pass priced already (2b) is subtracted.
//   residual add  2b read + b written, forward; the gradient sum of skip and branch, the
//            same, backward (per hidden element, one per block).
//   rotary   q and k: float() b+f, complex multiply 2f, type_as f+b = 2b+4f (20 B) each
//            way, per element of this rank's (heads + kv_heads) x head_dim.
//   GQA repeat_kv  k and v expanded to heads: kv read, heads written (b each) forward;
//            summed back the same backward.
//   SwiGLU   silu(g) 2b, silu(g) * u 3b = 5b forward; grad*u, grad*silu(g), silu' 3b each
//            = 9b backward, per element of this rank's ffn width (experts: top_k + shared
//            expert widths). A non-gated activation (GELU): 2b forward, 3b backward.
// Left out, and so still optimistic: SDPA's layout copies (transpose + contiguous), the
// fp32 logits and cross-entropy, FSDP2's copy-in/copy-out of gathered parameters, and
// the kernels' launch cost (op_overhead_us prices that).
#include "models/plan/model_config.hpp"
#include "models/plan/parallel_split.hpp"
#include "models/plan/step_program.hpp"

namespace ibt::topo {

// Extra bytes per token of a block's norm op for eager element-wise kernels, forward
// (and recompute) and backward, for one rank of `split` (TP shares the widths; with
// sequence parallelism the norm and residual run on the rank's tokens only, which the
// norm op's own token count already says: the result is per token of that op).
struct EagerElementwise {
  double attention_forward = 0, attention_backward = 0;  // per token of attn_norm
  double mlp_forward = 0, mlp_backward = 0;              // per token of mlp_norm (a dense layer)
  double moe_forward = 0, moe_backward = 0;              // per token of mlp_norm (an MoE layer)
  double final_forward = 0, final_backward = 0;          // per token of final_norm
  // What turns a norm op into its tokens and its layer's kind: a norm's fused bytes per
  // token (2 x hidden x element bytes), and the layers that are MoE ([first_moe_layer, layers)).
  double norm_bytes_per_token = 0;
  int first_moe_layer = 0, layers = 0;
};

EagerElementwise eager_elementwise_bytes(const models::ModelConfig& model, const models::ParallelSplit& split,
                                         double element_bytes);

// The extra bytes of one norm op (its kind, phase, layer, and its own bytes, which give
// its token count); 0 for any other op.
double eager_extra_bytes(const EagerElementwise& e, const models::Op& op);

}  // namespace ibt::topo
