#pragma once
// State every NCCL communicator of one rank shares: the GPU, the one communication
// stream all collectives and copies are queued on (so they run in issue order, as the
// harness expects), the list of live communicators, and the watchdog.
//
// Communicators are non-blocking (ncclConfig_t::blocking = 0): no NCCL call can hold the
// process forever, and every wait here polls the stream and ncclCommGetAsyncError. When a
// wait outlives the timeout, or NCCL reports an asynchronous error, every communicator of
// this rank is aborted with ncclCommAbort and a RuntimeError names the op in flight.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>
#include <vector>

namespace ibt::gpu {

// Throws RuntimeError "<what> failed: <NCCL error text>" unless rc is ncclSuccess.
void check_nccl(ncclResult_t rc, const std::string& what, ncclComm_t comm = nullptr);

class NcclRuntime {
 public:
  NcclRuntime(int device, double timeout_s, bool cuda_graph);
  ~NcclRuntime();
  NcclRuntime(const NcclRuntime&) = delete;
  NcclRuntime& operator=(const NcclRuntime&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  bool cuda_graph() const { return cuda_graph_; }
  double timeout_s() const { return timeout_s_; }
  bool aborted() const { return aborted_; }

  // Bumped whenever device memory is freed: graphs captured before then may name an
  // address that now belongs to another allocation, so communicators drop them.
  void note_release() { ++release_generation_; }
  unsigned long release_generation() const { return release_generation_; }

  void add(ncclComm_t comm);
  void remove(ncclComm_t comm);

  // Names the op being queued ("all_reduce of 4096 B bfloat16 on 8 ranks") so that a
  // later timeout or error can say what hung.
  void set_current_op(std::string what) { current_op_ = std::move(what); }
  const std::string& current_op() const { return current_op_; }

  // Completes a non-blocking NCCL call: rc is what the call returned; while the
  // communicator reports ncclInProgress, polls it until the timeout.
  void finish_call(ncclComm_t comm, ncclResult_t rc, const std::string& what);
  // Waits until the stream has run everything queued on it.
  void wait_stream();
  // Aborts every live communicator and throws RuntimeError with `why`.
  [[noreturn]] void abort_all(const std::string& why);

 private:
  void throw_if_aborted() const;

  int device_;
  double timeout_s_;
  bool cuda_graph_;
  cudaStream_t stream_ = nullptr;
  std::vector<ncclComm_t> comms_;
  std::string current_op_ = "no operation";
  bool aborted_ = false;
  unsigned long release_generation_ = 0;
};

}  // namespace ibt::gpu
