#pragma once
// The attention core on cuBLAS: scores, context and their gradients as strided-batched
// GEMMs (DeviceBlas::batched_f32), around the same causal-softmax kernels as the
// one-thread-per-output kernels of train_kernels.hpp, which run instead only when asked
// for (`ibt train --executor cuda --cuda-attention threads`). Same inputs, outputs and
// layout (q [batch*seq, heads*d], k and v [batch*seq, kv_heads*d], probabilities
// [batch, heads, seq, seq]); the products run over the full seq x seq square (the
// softmax zeroes the keys after each query), twice the causal FLOPs, still far faster
// than a thread per score. fp32 products in fp32 runs; TF32 tensor cores in bf16 runs.
//
// The default since it ran on one H200 (2026-11-26; README, "GPUs: what has been
// observed"): its GPU tests and `--check` pass, and megatron-1.7b's step took 0.67 s
// against 10.41 s with the one-thread kernels (PyTorch: 0.41 s). The products here (TF32)
// and the two softmax kernels took 40% of the kernel time profiled (ncu): bf16 operands and a
// fused attention kernel are the next steps.
#include <cuda_runtime_api.h>

#include "models/cuda/executor/attention_kernels.hpp"
#include "models/cuda/executor/device_blas.hpp"
#include "models/cuda/executor/train_kernels.hpp"

namespace ibt::gpu {

void attention_forward_gemm(DeviceBlas& blas, const AttentionShape& s, const float* q, const float* k, const float* v,
                            float* probs, float* context, cudaStream_t stream);
void attention_backward_gemm(DeviceBlas& blas, const AttentionShape& s, const float* q, const float* k,
                             const float* v, const float* probs, const float* d_context, float* d_probs, float* dq,
                             float* dk, float* dv, cudaStream_t stream);

}  // namespace ibt::gpu
