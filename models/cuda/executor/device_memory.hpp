#pragma once
// RAII device buffers for the cuda executor: a typed cudaMalloc'd array that frees
// itself, moves but never copies, and names its size in the error when allocation fails.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "collectives/nccl/cuda_device.hpp"

namespace ibt::gpu {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) { resize(count); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }

  // Reallocates only when growing; the contents are then undefined.
  void resize(std::size_t count) {
    if (count <= capacity_ && data_) {
      count_ = count;
      return;
    }
    release();
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, std::max<std::size_t>(count, 1) * sizeof(T)),
               "cudaMalloc of " + std::to_string(count * sizeof(T)) + " B");
    data_ = static_cast<T*>(p);
    count_ = capacity_ = count;
  }
  void zero(cudaStream_t stream) {
    if (count_) check_cuda(cudaMemsetAsync(data_, 0, count_ * sizeof(T), stream), "cudaMemsetAsync");
  }
  void upload(const T* host, std::size_t count, cudaStream_t stream) {
    resize(count);
    if (count)
      check_cuda(cudaMemcpyAsync(data_, host, count * sizeof(T), cudaMemcpyHostToDevice, stream), "upload to the GPU");
  }
  // Synchronous with respect to `stream`: returns once the data is on the host.
  std::vector<T> download(cudaStream_t stream) const {
    std::vector<T> out(count_);
    if (count_) {
      check_cuda(cudaMemcpyAsync(out.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost, stream),
                 "download from the GPU");
      check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize after a download");
    }
    return out;
  }

  T* get() { return data_; }
  const T* get() const { return data_; }
  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }

 private:
  void release() {
    if (data_) cudaFree(data_);
    data_ = nullptr;
    count_ = capacity_ = 0;
  }
  T* data_ = nullptr;
  std::size_t count_ = 0;
  std::size_t capacity_ = 0;
};

// An fp32 activation with its [rows, cols] shape, what travels between pipeline stages.
struct DeviceTensor {
  DeviceBuffer<float> data;
  std::int64_t rows = 0, cols = 0;
  void reset(std::int64_t r, std::int64_t c) {
    rows = r;
    cols = c;
    data.resize(static_cast<std::size_t>(r * c));
  }
  float* get() { return data.get(); }
  const float* get() const { return data.get(); }
  std::int64_t numel() const { return rows * cols; }
};

}  // namespace ibt::gpu
