#include "models/cuda/executor/nccl_groups.hpp"

#include "core/errors.hpp"

namespace ibt::gpu {

std::unique_ptr<NcclCommunicator> make_nccl_group(const std::shared_ptr<NcclRuntime>& runtime, MPI_Comm group,
                                                  const std::string& what) {
  MPI_Comm own = MPI_COMM_NULL;
  if (MPI_Comm_dup(group, &own) != MPI_SUCCESS) throw RuntimeError("MPI_Comm_dup for the " + what + " failed");
  int rank = 0, size = 1;
  MPI_Comm_rank(own, &rank);
  MPI_Comm_size(own, &size);
  ncclUniqueId id{};
  if (rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId for the " + what);
  if (MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, own) != MPI_SUCCESS)
    throw RuntimeError("MPI_Bcast of the NCCL unique id for the " + what + " failed");
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // every wait goes through the runtime's watchdog
  ncclComm_t comm = nullptr;
  const std::string op = "ncclCommInitRank of the " + what + " (" + std::to_string(size) + " ranks)";
  runtime->set_current_op(op);
  const ncclResult_t rc = ncclCommInitRankConfig(&comm, size, id, rank, &config);
  if (comm) runtime->add(comm);
  runtime->finish_call(comm, rc, op);
  return std::make_unique<NcclCommunicator>(runtime, comm, own);
}

}  // namespace ibt::gpu
