#include "collectives/nccl/nccl_runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "collectives/nccl/cuda_device.hpp"
#include "core/errors.hpp"

namespace ibt::gpu {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Spin briefly (short ops finish within microseconds and the wait sits inside timed
// loops of the harness only through synchronize), then back off to sleeping so a hung
// rank does not burn a core for the whole timeout.
void back_off(int polls) {
  if (polls < 1000)
    std::this_thread::yield();
  else
    std::this_thread::sleep_for(std::chrono::microseconds(100));
}

std::string format_seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", s);
  return text;
}

}  // namespace

void check_nccl(ncclResult_t rc, const std::string& what, ncclComm_t comm) {
  if (rc == ncclSuccess) return;
  std::string message = what + " failed: " + ncclGetErrorString(rc);
  if (const char* last = ncclGetLastError(comm); last && *last) message += std::string(" (") + last + ")";
  throw RuntimeError(message);
}

NcclRuntime::NcclRuntime(int device, double timeout_s, bool cuda_graph)
    : device_(device), timeout_s_(timeout_s), cuda_graph_(cuda_graph) {
  check_cuda(cudaSetDevice(device_), "cudaSetDevice(" + std::to_string(device_) + ")");
  // Non-blocking: the legacy default stream (used by plain cudaMemcpy) must not
  // serialise with the communication stream behind our back.
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
}

NcclRuntime::~NcclRuntime() {
  if (stream_) cudaStreamDestroy(stream_);
}

void NcclRuntime::add(ncclComm_t comm) { comms_.push_back(comm); }

void NcclRuntime::remove(ncclComm_t comm) { std::erase(comms_, comm); }

void NcclRuntime::throw_if_aborted() const {
  if (aborted_) throw RuntimeError("NCCL communicators were aborted after an earlier failure; no further operations");
}

void NcclRuntime::finish_call(ncclComm_t comm, ncclResult_t rc, const std::string& what) {
  throw_if_aborted();
  const auto start = Clock::now();
  for (int polls = 0; rc == ncclInProgress; ++polls) {
    if (seconds_since(start) > timeout_s_) abort_all(what + " did not complete within " + format_seconds(timeout_s_));
    back_off(polls);
    const ncclResult_t query = ncclCommGetAsyncError(comm, &rc);
    if (query != ncclSuccess) rc = query;
  }
  if (rc != ncclSuccess) {
    std::string message = what + " failed: " + ncclGetErrorString(rc);
    if (const char* last = ncclGetLastError(comm); last && *last) message += std::string(" (") + last + ")";
    abort_all(message);
  }
}

void NcclRuntime::wait_stream() {
  throw_if_aborted();
  const auto start = Clock::now();
  for (int polls = 0;; ++polls) {
    const cudaError_t state = cudaStreamQuery(stream_);
    if (state == cudaSuccess) return;
    if (state != cudaErrorNotReady) abort_all(current_op_ + " failed on the GPU: " + cudaGetErrorString(state));
    for (ncclComm_t comm : comms_) {
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm, &async);
      if (async != ncclSuccess && async != ncclInProgress)
        abort_all(current_op_ + " failed: NCCL reported " + ncclGetErrorString(async));
    }
    if (seconds_since(start) > timeout_s_)
      abort_all(current_op_ + " did not complete within " + format_seconds(timeout_s_));
    back_off(polls);
  }
}

void NcclRuntime::abort_all(const std::string& why) {
  if (!aborted_) {
    aborted_ = true;
    // ncclCommAbort stops the kernels still waiting for peers, so the stream drains.
    for (ncclComm_t comm : comms_) ncclCommAbort(comm);
    comms_.clear();
  }
  throw RuntimeError(why + "; aborted every NCCL communicator of this rank");
}

}  // namespace ibt::gpu
