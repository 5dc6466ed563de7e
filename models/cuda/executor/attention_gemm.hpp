#pragma once
// The attention core on cuBLAS: scores, context and their gradients as strided-batched
// GEMMs (DeviceBlas::batched_f32), around the same causal-softmax kernels as the
// one-thread-per-output kernels of train_kernels.hpp, which it replaces when the run asks
// for it (`ibt train --executor cuda --cuda-attention gemm`). Same inputs, outputs and
// layout (q [batch*seq, heads*d], k and v [batch*seq, kv_heads*d], probabilities
// [batch, heads, seq, seq]); the products run over the full seq x seq square (the
// softmax zeroes the keys after each query), twice the causal FLOPs, still far faster
// than a thread per score. fp32 products in fp32 runs; TF32 tensor cores in bf16 runs.
//
// Measured on one H200 before it existed: the one-thread kernels made megatron-1.7b's step
// 10.46 s against PyTorch's 0.405 s (README, "GPUs: what has been observed"). This path
// was written after that run, on a machine without a GPU: tests/gpu/device_model_test.cpp
// compares it with the CPU engine, and it has not run on a GPU yet.
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
