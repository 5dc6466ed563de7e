#pragma once
// The attention core on cuBLAS: scores, context and their gradients as strided-batched
// GEMMs (DeviceBlas::batched) with operands in the run's precision (bf16 with fp32
// accumulation, or fp32), around causal-softmax kernels; the one-thread-per-output kernels
// of train_kernels.hpp run instead only when asked for (`ibt train --executor cuda
// --cuda-attention threads`). Layout: q [batch*seq, heads*d], k and v [batch*seq,
// kv_heads*d], probabilities [batch, heads, seq, seq]. The products skip the row blocks
// above the causal diagonal (attention_gemm.cpp); entries there are never written nor read.
//
// Precision, as a bf16 flash-attention kernel keeps it: the scores and their gradient dP
// come out of the GEMMs in fp32, the softmax and its backward run in fp32, and what feeds
// the next GEMM (P, dS, the context, dq) is stored in the operand precision. In fp32 runs
// every buffer is fp32 and the softmax may run in place.
//
// The default since it ran on one H200 (2026-11-26; docs/measurements/gpu-sessions.md, "GPUs: what has been
// observed"): megatron-1.7b's step took 0.67 s with TF32 products and fp32 probabilities,
// 0.56 s with these bf16 operands, 0.54 s with the causal blocks, 10.41 s with the
// one-thread kernels (PyTorch: 0.41 s). The two softmax kernels over the materialised
// probabilities now lead the non-GEMM time (ncu): a fused attention kernel is the next step.
#include <cuda_runtime_api.h>

#include "models/cuda/executor/attention_kernels.hpp"
#include "models/cuda/executor/device_blas.hpp"
#include "models/cuda/executor/train_kernels.hpp"

namespace ibt::gpu {

// q, k, v: operands. scores: fp32 scratch [batch, heads, seq, seq]. probs: the
// probabilities, operand precision (== scores in fp32 runs: in place). context: operand.
void attention_forward_gemm(DeviceBlas& blas, const AttentionShape& s, const void* q, const void* k, const void* v,
                            float* scores, void* probs, void* context, cudaStream_t stream);
// q, k, v, probs, d_context: as the forward kept them. d_probs: fp32 scratch the size of
// the probabilities; d_scores: operand-precision scratch (== d_probs in fp32 runs).
// dq: operand (overwritten); dk, dv: fp32 (overwritten; a KV head sums its group's).
void attention_backward_gemm(DeviceBlas& blas, const AttentionShape& s, const void* q, const void* k, const void* v,
                             const void* probs, const void* d_context, float* d_probs, void* d_scores, void* dq,
                             float* dk, float* dv, cudaStream_t stream);

}  // namespace ibt::gpu
