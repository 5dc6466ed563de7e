#pragma once
// MPI for the lifetime of a suite. MPI_THREAD_FUNNELED: only the main thread calls MPI;
// the watchdog thread never does.
#include <mpi.h>

#include <string>

#include "collectives/mpi_types.hpp"
#include "collectives/runtime/job_signals.hpp"

namespace ibt::suites {

class MpiSession {
 public:
  MpiSession(int* argc, char*** argv) {
    int provided = 0;
    // Before MPI_Init: the transport's threads must inherit the blocked stopping signals.
    job_signals::install(argc && *argc > 0 ? (*argv)[0] : "ibt");
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    job_signals::set_rank(rank_);
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

// Runs an MPI suite's body with the error handling every MPI suite shares: bad input is
// reported once (rank 0) with exit status 2; any other failure on a rank ends the whole
// job, since the other ranks may be waiting for it in a collective (a run being recorded
// is marked failed while unwinding); every rank leaves with the same status.
int run_mpi_suite(const std::string& name, int argc, char** argv, int (*body)(int argc, char** argv, MpiSession& mpi));

}  // namespace ibt::suites
