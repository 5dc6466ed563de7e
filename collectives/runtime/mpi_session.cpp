#include "collectives/runtime/mpi_session.hpp"

#include <boost/program_options/errors.hpp>
#include <cstdio>

#include "core/errors.hpp"

namespace ibt::suites {

int run_mpi_suite(const std::string& name, int argc, char** argv, int (*body)(int argc, char** argv, MpiSession& mpi)) {
  MpiSession mpi(&argc, &argv);
  int status = kExitOk;
  try {
    status = body(argc, argv, mpi);
  } catch (const UsageError& e) {
    if (mpi.rank() == 0) std::fprintf(stderr, "ibt %s: error: %s\n", name.c_str(), e.what());
    status = kExitUsage;
  } catch (const boost::program_options::error& e) {
    if (mpi.rank() == 0) std::fprintf(stderr, "ibt %s: error: %s (see --help)\n", name.c_str(), e.what());
    status = kExitUsage;
  } catch (const StorageError& e) {
    // The store has undone the append and recorded the run as failed (rank 0 writes).
    std::fprintf(stderr, "ibt %s: error: rank %d: %s\n", name.c_str(), mpi.rank(), e.what());
    std::fflush(nullptr);
    MPI_Abort(MPI_COMM_WORLD, kExitStorage);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ibt %s: error: rank %d: %s\n", name.c_str(), mpi.rank(), e.what());
    std::fflush(nullptr);
    MPI_Abort(MPI_COMM_WORLD, kExitFailure);
  }
  // A wrong value seen by one rank is a failure of all.
  MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return status;
}

}  // namespace ibt::suites
