#pragma once
// The NCCL backend for `ibt collectives --backend nccl`: one GPU per rank (chosen by the
// rank's index among the ranks of its host), NCCL communicators built from the MPI job,
// device buffers, CUDA-event timing on the communication stream.
#include <mpi.h>

#include <memory>
#include <string>

#include "collectives/backend.hpp"

namespace ibt::gpu {

struct NcclOptions {
  // An op, communicator creation or wait still unfinished after this long aborts every
  // NCCL communicator of the rank and throws RuntimeError naming the op and its size.
  double timeout_s = 300.0;
  // Capture each distinct call once as a CUDA graph and replay it (nccl-tests -G).
  bool cuda_graph = false;
  // Build group communicators with ncclCommSplit (true) or with a fresh
  // ncclCommInitRank per group from a unique id broadcast over MPI (false).
  bool use_comm_split = true;
};

// Collective over `world`. Throws UsageError "--backend nccl: no CUDA GPU on this machine
// (...); the nccl backend needs one; use --backend mpi" (core/no_gpu.hpp) when this rank
// sees no usable GPU, and UsageError when a host runs more
// ranks than it has GPUs.
std::unique_ptr<Backend> make_nccl_backend(MPI_Comm world, const NcclOptions& options);

// The scale-up domain this rank's GPU belongs to, the same string on every rank of the
// domain: "nvlink-fabric:<cluster uuid>:<clique id>" when NVML reports a completed
// multi-node NVLink fabric registration (GB200 NVL72), else "host:<hostname>". Ranks
// split by it form the `intra` scope. Throws UsageError when `backend` is not NCCL's.
std::string scale_up_domain(const Backend& backend);

}  // namespace ibt::gpu
