#pragma once
// RAII device buffers for the cuda executor: a typed device array that frees itself,
// moves but never copies, and names its size in the error when allocation fails.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "collectives/nccl/cuda_device.hpp"

namespace ibt::gpu {

// Memory comes from CUDA's stream-ordered allocator (cudaMallocAsync/cudaFreeAsync on
// the buffer's stream), never plain cudaFree: cudaFree waits for the whole device, which
// would stall the compute stream behind the DP all-reduce running on the communication
// stream and undo the overlap. A buffer is freed in the order of its stream; memory
// another stream used must be waited for before the buffer goes (the executor
// synchronizes after every cross-stream use).
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(std::size_t count, cudaStream_t stream) { resize(count, stream); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept { take(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }

  // Reallocates only when growing; the contents are then undefined.
  void resize(std::size_t count, cudaStream_t stream) {
    if (data_ && count <= capacity_) {
      count_ = count;
      return;
    }
    release();
    void* p = nullptr;
    check_cuda(cudaMallocAsync(&p, std::max<std::size_t>(count, 1) * sizeof(T), stream),
               "cudaMallocAsync of " + std::to_string(count * sizeof(T)) + " B");
    data_ = static_cast<T*>(p);
    stream_ = stream;
    count_ = capacity_ = count;
  }
  void zero(cudaStream_t stream) {
    if (count_) check_cuda(cudaMemsetAsync(data_, 0, count_ * sizeof(T), stream), "cudaMemsetAsync");
  }
  void upload(const T* host, std::size_t count, cudaStream_t stream) {
    resize(count, stream);
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
    if (data_) cudaFreeAsync(data_, stream_);
    data_ = nullptr;
    count_ = capacity_ = 0;
  }
  void take(DeviceBuffer& o) {
    data_ = std::exchange(o.data_, nullptr);
    count_ = std::exchange(o.count_, 0);
    capacity_ = std::exchange(o.capacity_, 0);
    stream_ = o.stream_;
  }
  T* data_ = nullptr;
  std::size_t count_ = 0;
  std::size_t capacity_ = 0;
  cudaStream_t stream_ = nullptr;
};

// Keeps freed stream-ordered memory in the device's pool instead of returning it to
// the driver at every synchronization (the default release threshold is 0), as a
// caching allocator does: a step allocates and frees the same sizes over and over.
inline void keep_freed_memory_pooled(int device) {
  cudaMemPool_t pool = nullptr;
  check_cuda(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
  std::uint64_t threshold = UINT64_MAX;
  check_cuda(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
             "cudaMemPoolSetAttribute(release threshold)");
}

// An fp32 activation with its [rows, cols] shape, what travels between pipeline stages.
struct DeviceTensor {
  DeviceBuffer<float> data;
  std::int64_t rows = 0, cols = 0;
  void reset(std::int64_t r, std::int64_t c, cudaStream_t stream) {
    rows = r;
    cols = c;
    data.resize(static_cast<std::size_t>(r * c), stream);
  }
  float* get() { return data.get(); }
  const float* get() const { return data.get(); }
  std::int64_t numel() const { return rows * cols; }
};

}  // namespace ibt::gpu
