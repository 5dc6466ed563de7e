#pragma once
// Memory planned across a job: each rank's request counted once per rank on its host
// (ranks of one host share its memory), and every rank refuses together when any host
// falls short, so no rank allocates while another has already given up.
#include <mpi.h>

#include <string>

namespace ibt {

// Collective over `comm`. Throws UsageError on every rank when `bytes_per_rank` times the
// ranks of `comm` on some rank's host exceeds that host's available memory
// (core/memory_plan.hpp); the message names `field` and the bytes needed and available.
void require_memory_on_every_host(MPI_Comm comm, double bytes_per_rank, const std::string& field);

}  // namespace ibt
