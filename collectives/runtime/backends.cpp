#include "collectives/runtime/backends.hpp"

#include "collectives/mpi_backend.hpp"
#include "core/errors.hpp"
#include "core/no_gpu.hpp"
#ifdef IBT_HAVE_CUDA
#include "collectives/nccl/nccl_backend.hpp"
#endif

namespace ibt::suites {

std::unique_ptr<Backend> make_backend(const std::string& name, MPI_Comm world, const BackendOptions& options) {
  if (name == "mpi") {
    if (options.cuda_graph) throw UsageError("--cuda-graph needs --backend nccl");
    return std::make_unique<MpiBackend>();
  }
  if (name == "nccl") {
    if (options.nccl_comm != "split" && options.nccl_comm != "init")
      throw UsageError("--nccl-comm must be split or init (got '" + options.nccl_comm + "')");
#ifdef IBT_HAVE_CUDA
    gpu::NcclOptions nccl;
    nccl.timeout_s = options.timeout_s;
    nccl.cuda_graph = options.cuda_graph;
    nccl.use_comm_split = options.nccl_comm == "split";
    return gpu::make_nccl_backend(world, nccl);
#else
    (void)world;
    throw UsageError(built_without_cuda_message("--backend nccl"));
#endif
  }
  throw UsageError("unknown backend '" + name + "' (expected mpi or nccl)");
}

}  // namespace ibt::suites
