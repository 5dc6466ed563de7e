#include "collectives/host_memory.hpp"

#include "core/errors.hpp"
#include "core/memory_plan.hpp"

namespace ibt {

void require_memory_on_every_host(MPI_Comm comm, double bytes_per_rank, const std::string& field) {
  MPI_Comm host = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
  int local = 1;
  MPI_Comm_size(host, &local);
  MPI_Comm_free(&host);
  std::string error;
  try {
    require_memory(bytes_per_rank, field, local);
  } catch (const UsageError& e) {
    error = e.what();
  }
  int refused = !error.empty();
  MPI_Allreduce(MPI_IN_PLACE, &refused, 1, MPI_INT, MPI_MAX, comm);
  if (refused)
    throw UsageError(error.empty() ? field + ": does not fit in another host's memory (see its rank's message)"
                                   : error);
}

}  // namespace ibt
