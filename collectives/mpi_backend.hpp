#pragma once
// The MPI backend: host buffers, MPI_Comm_split groups, MPI_Wtime timing.
#include <mpi.h>

#include <memory>

#include "collectives/backend.hpp"
#include "collectives/mpi_communicator.hpp"

namespace ibt {

class MpiBackend final : public Backend {
 public:
  MpiBackend();  // MPI must be initialised
  std::string name() const override { return "mpi"; }
  Communicator& world() override { return *world_; }
  std::unique_ptr<Communicator> split(int color, int key) override;
  void* allocate(std::size_t bytes) override;
  void release(void* buffer) override;
  void upload(void* buffer, const void* host, std::size_t bytes) override;
  void download(void* host, const void* buffer, std::size_t bytes) override;
  std::unique_ptr<IterationTimer> make_timer(Communicator& comm, int iterations) override;
  bool supports(DType t) const override { return mpi_supports(t); }
  std::vector<std::pair<std::string, std::string>> provenance() const override;

 private:
  std::unique_ptr<MpiCommunicator> world_;
};

// "MPICH Version: 4.0.2 ..." first line of MPI_Get_library_version, and "3.1" standard.
std::string mpi_library_version();
std::string mpi_standard_version();

}  // namespace ibt
