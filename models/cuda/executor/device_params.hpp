#pragma once
// A rank's parameters on the GPU, in the CPU engine's layout: one entry per Param of the
// chunk's models::Transformer (same names, same TP shard shapes, same initial values,
// uploaded from it), packed into flat fp32 buffers so one NCCL call reduces them all:
//   master  fp32 weights (AdamW updates these: mixed precision with fp32 masters)
//   operand the GEMM copy of the weights (bf16, or fp32 with --precision fp32)
//   grad    fp32 gradients (accumulated over microbatches; the DP all-reduce's buffer)
//   m, v    fp32 AdamW moments
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/cuda/executor/device_blas.hpp"
#include "models/cuda/executor/device_memory.hpp"
#include "models/cuda/executor/train_kernels.hpp"
#include "models/engine/tensor.hpp"

namespace ibt::gpu {

struct DeviceParamInfo {
  std::string name;
  std::vector<std::int64_t> shape;
  bool decay = true;
  std::size_t offset = 0;  // elements into the flat buffers
  std::size_t count = 0;
};

class DeviceParams {
 public:
  DeviceParams(const std::vector<models::Param*>& params, MathPrecision precision, cudaStream_t stream);

  std::size_t size() const { return info_.size(); }
  const DeviceParamInfo& info(std::size_t i) const { return info_.at(i); }
  // Index of the entry made from `p` (the tied LM head finds the embedding's this way).
  std::size_t index_of(const models::Param* p) const;

  float* master(std::size_t i) { return master_.get() + info_[i].offset; }
  float* grad(std::size_t i) { return grad_.get() + info_[i].offset; }
  const void* operand(std::size_t i) const {
    return static_cast<const unsigned char*>(operand_) + info_[i].offset * operand_bytes(precision_);
  }
  float* grads() { return grad_.get(); }
  std::size_t total() const { return total_; }

  void zero_grads(cudaStream_t stream) { grad_.zero(stream); }
  // One AdamW step (t from 1) on every entry, refreshing the operand copy.
  void adamw(std::int64_t t, const AdamWParams& config, cudaStream_t stream);
  // Sums of squares per entry (values or gradients), in double; synchronous.
  std::vector<double> sum_squares_each(bool grads, cudaStream_t stream);
  // Host copies (for --check, tests and state): the flat fp32 buffers.
  std::vector<float> download_master(cudaStream_t stream) const { return master_.download(stream); }
  std::vector<float> download_grads(cudaStream_t stream) const { return grad_.download(stream); }
  // Bytes of master, operand, grad and AdamW state.
  double state_bytes() const { return static_cast<double>(total_) * (4.0 * 4.0 + operand_bytes(precision_)); }

 private:
  MathPrecision precision_;
  std::vector<DeviceParamInfo> info_;
  std::unordered_map<const models::Param*, std::size_t> index_;
  std::size_t total_ = 0;
  DeviceBuffer<float> master_, grad_, m_, v_;
  DeviceBuffer<std::uint16_t> operand_storage_;  // bf16 operands
  DeviceBuffer<float> operand_fp32_;             // fp32 operands
  void* operand_ = nullptr;                      // the one of the two in use
};

}  // namespace ibt::gpu
