#pragma once
// Chooses the communication backend a suite runs on.
#include <mpi.h>

#include <memory>
#include <string>

#include "collectives/backend.hpp"

namespace ibt::suites {

struct BackendOptions {
  double timeout_s = 60;
  bool cuda_graph = false;          // nccl: capture each call once as a CUDA graph
  std::string nccl_comm = "split";  // nccl: groups by ncclCommSplit ("split") or fresh init ("init")
};

// "mpi" always; "nccl" when this build has CUDA and NCCL (otherwise a UsageError that
// says so). Throws UsageError with the CUDA error text when there is no usable GPU.
std::unique_ptr<Backend> make_backend(const std::string& name, MPI_Comm world, const BackendOptions& options);

}  // namespace ibt::suites
