#pragma once
// MPI for the lifetime of a suite. MPI_THREAD_FUNNELED: only the main thread calls MPI;
// the watchdog thread never does.
#include <mpi.h>

#include "collectives/mpi_types.hpp"

namespace ibt::suites {

class MpiSession {
 public:
  MpiSession(int* argc, char*** argv) {
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiSession() {
    free_mpi_ops();
    MPI_Finalize();
  }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace ibt::suites
