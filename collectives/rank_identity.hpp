#pragma once
// Which process and host every rank of the job is, so that a message about a rank that
// stopped or died names something a person can find: its pid on its host, the numbers
// MPICH's launcher prints ("PID 4711 RUNNING AT node-3") when a rank is killed. Gathered
// once, collectively, with the job facts (provenance.hpp) or when the first arrival gate is
// made (arrival_gate.hpp), whichever comes first; read by the
// gate's messages and by the watchdog's (collectives/runtime/job_guard.cpp), on any
// thread, without MPI.
#include <mpi.h>

#include <string>
#include <vector>

namespace ibt {

struct RankIdentity {
  long pid = 0;
  std::string host;
};

// Collective over `world`: every rank's pid and host, kept for the rest of the process.
void gather_rank_identities(MPI_Comm world);
// The rank's pid; 0 when not gathered (or no such rank).
long rank_pid(int world_rank);
// The rank's host; "" when not gathered (or no such rank).
std::string rank_host(int world_rank);
// "pid 4711 on host node-3", or "" when rank identities were not gathered (or no such rank).
std::string describe_rank_process(int world_rank);
// " (rank 1: pid 4711 on host node-3; rank 2: ...)", or "" when nothing is known: the
// suffix a message naming `ranks` carries (one rank: " (pid 4711 on host node-3)").
std::string rank_processes_suffix(const std::vector<int>& ranks);
// Every rank of the job but `self` (empty before the gather).
std::vector<int> other_ranks(int self);

}  // namespace ibt
