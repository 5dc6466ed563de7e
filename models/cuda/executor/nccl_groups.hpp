#pragma once
// NCCL communicators over the ranks of an MPI communicator (the executor's tp, dp and pp
// groups from ProcessGroups): ncclCommInitRank from a unique id its rank 0 makes and
// broadcasts over MPI, non-blocking under the runtime's watchdog.
#include <mpi.h>

#include <memory>
#include <string>

#include "collectives/nccl/nccl_communicator.hpp"
#include "collectives/nccl/nccl_runtime.hpp"

namespace ibt::gpu {

// `group` is duplicated (the communicator owns the copy). Collective over `group`.
std::unique_ptr<NcclCommunicator> make_nccl_group(const std::shared_ptr<NcclRuntime>& runtime, MPI_Comm group,
                                                  const std::string& what);

}  // namespace ibt::gpu
