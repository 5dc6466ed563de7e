#pragma once
// The dense transformer chunk on the GPU: the forward and backward of
// models/engine/layers/transformer.cpp (embedding, pre-norm blocks with GQA attention and
// GELU/SwiGLU MLP, final norm, vocab-parallel LM head and cross-entropy) with cuBLAS
// GEMMs in bf16 (fp32 accumulate) and fp32 kernels for everything else
// (train_kernels.hpp). It is built from the CPU chunk (models::Transformer) the cpu
// executor would hold at the same (stage, TP shard): the same parameters, shapes and
// initial values, so the two executors train the same model.
//
// TP: Megatron's reductions (row-parallel outputs, column-parallel input gradients, the
// vocab-parallel embedding and softmax) go through a DeviceTpReducer; with tp == 1 it
// does nothing. Sequence parallelism, MoE and tied embeddings across stages are not
// implemented here (cuda_executor_check refuses them).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "models/cuda/executor/attention_gemm.hpp"
#include "models/cuda/executor/device_blas.hpp"
#include "models/cuda/executor/device_memory.hpp"
#include "models/cuda/executor/device_params.hpp"
#include "models/engine/data.hpp"
#include "models/engine/layers/transformer.hpp"

namespace ibt::gpu {

// The TP group's reductions on device fp32 buffers, ordered after the work queued on
// the compute stream and before whatever is queued after them.
class DeviceTpReducer {
 public:
  virtual ~DeviceTpReducer() = default;
  virtual void sum(float* data, std::int64_t n) = 0;
  virtual void max(float* data, std::int64_t n) = 0;
};
class NoTpReducer final : public DeviceTpReducer {
 public:
  void sum(float*, std::int64_t) override {}
  void max(float*, std::int64_t) override {}
};

using Operand = DeviceBuffer<unsigned char>;  // a GEMM operand (bf16 or fp32 bytes)

// What a block's backward reads. The attention core keeps q, k, v and the probabilities
// in fp32 for the one-thread kernels, as operands for the GEMM kernels.
struct DeviceBlockCache {
  DeviceBuffer<float> x, mean1, rstd1, h, mean2, rstd2, gate, up;
  DeviceBuffer<float> q, k, v, probs;  // --cuda-attention threads
  Operand q_op, k_op, v_op, probs_op;  // --cuda-attention gemm
  Operand normed1_op, context_op, normed2_op, act_op;
};

struct DeviceStageCache {
  int batch = 0, seq = 0;
  DeviceBuffer<std::int32_t> tokens, targets;
  std::vector<DeviceBlockCache> blocks;
  DeviceBuffer<float> final_x, final_mean, final_rstd, logits, row_max, sum_exp, target_logit;
  Operand normed_op;
};

class DeviceChunk {
 public:
  // attention: the attention core's kernels (attention_gemm.hpp).
  DeviceChunk(models::Transformer& cpu, DeviceBlas& blas, cudaStream_t stream,
              AttentionKernels attention = AttentionKernels::threads);

  // input: the previous chunk's output [T, hidden] (nullptr with the embedding);
  // output: this chunk's (nullptr on the head chunk). Returns the head's sum of
  // cross-entropy over the microbatch's tokens (0 elsewhere).
  double forward(const models::Batch& mb, const DeviceTensor* input, DeviceTensor* output, DeviceStageCache& cache,
                 DeviceTpReducer& tp);
  // d_output: gradient of the output (nullptr on the head chunk, which starts from the
  // loss scaled by ce_per_token); d_input: gradient for the previous chunk (nullptr with
  // the embedding). Gradients accumulate into params().
  // grads_final: when set (the step's last backward of this chunk), called with each
  // contiguous range [offset, offset + count) of params().grads() as soon as the work
  // that completes it is queued: the head, then each layer from the last, then the
  // embedding, so its data-parallel reduction can start while the rest runs.
  using GradsFinal = std::function<void(std::size_t offset, std::size_t count)>;
  void backward(DeviceStageCache& cache, const DeviceTensor* d_output, float ce_per_token, DeviceTensor* d_input,
                DeviceTpReducer& tp, const GradsFinal& grads_final = nullptr);

  DeviceParams& params() { return *params_; }
  const models::ModelPart& part() const { return part_; }

 private:
  struct BlockWeights {
    std::size_t attn_norm, ffn_norm, wq, wk, wv, wo, w_up, w_down;
    std::size_t attn_norm_bias = kNone, ffn_norm_bias = kNone, w_gate = kNone;
    std::size_t grads_begin = 0, grads_end = 0;  // the layer's contiguous range in the flat buffers
  };
  struct Range {
    std::size_t begin = 0, end = 0;
  };
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  void block_forward(const BlockWeights& w, const float* x, std::int64_t T, int batch, int seq, float* y,
                     DeviceBlockCache& c, DeviceTpReducer& tp);
  void block_backward(const BlockWeights& w, DeviceBlockCache& c, std::int64_t T, int batch, int seq, const float* dy,
                      float* dx, DeviceTpReducer& tp);
  void cast(const float* src, Operand& dst, std::int64_t n);
  // dst grown to n elements of the operand precision: a kernel's or GEMM's output.
  void* operand(Operand& dst, std::int64_t n);
  OperandOut operand_out(Operand& dst, std::int64_t n) { return {operand(dst, n), blas_.bf16()}; }
  // The Q, K, V projections of the normed input and the attention core, leaving the
  // context (Wo's input) in c.context_op; and the backward from dh (the gradient of Wo's
  // output, an operand) through d_context to dq, dk, dv (operands for the QKV GEMMs).
  void attention_core_forward(const Operand& normed, const BlockWeights& w, std::int64_t T, int batch, int seq,
                              DeviceBlockCache& c);
  void attention_core_backward(const Operand& dh, const BlockWeights& w, DeviceBlockCache& c, std::int64_t T, int batch,
                               int seq, Operand& dq, Operand& dk, Operand& dv);
  const void* op(std::size_t param) const { return params_->operand(param); }
  float* bias_or_null(std::size_t i) { return i == kNone ? nullptr : params_->master(i); }
  float* bias_grad_or_null(std::size_t i) { return i == kNone ? nullptr : params_->grad(i); }

  models::ModelConfig config_;
  models::ModelPart part_;
  DeviceBlas& blas_;
  cudaStream_t stream_;
  AttentionKernels attention_;
  std::unique_ptr<DeviceParams> params_;
  int heads_ = 0, kv_heads_ = 0, head_dim_ = 0;
  std::int64_t ffn_local_ = 0, vocab_local_ = 0, vocab_begin_ = 0;
  std::size_t embedding_ = kNone, final_norm_ = kNone, final_norm_bias_ = kNone, head_ = kNone;
  std::vector<BlockWeights> blocks_;
  Range head_grads_, embedding_grads_;  // final norm + own LM head; the embedding (+ a tied head)
};

}  // namespace ibt::gpu
