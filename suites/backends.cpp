#include "suites/backends.hpp"

#include "collectives/errors.hpp"
#include "collectives/mpi_backend.hpp"

namespace ibt::suites {

std::unique_ptr<Backend> make_backend(const std::string& name, MPI_Comm) {
  if (name == "mpi") return std::make_unique<MpiBackend>();
  if (name == "nccl")
    throw UsageError("--backend nccl: this ibt was built without CUDA and NCCL (configure with the CUDA "
                     "toolkit present and IBT_WITH_CUDA=ON)");
  throw UsageError("unknown backend '" + name + "' (expected mpi or nccl)");
}

}  // namespace ibt::suites
