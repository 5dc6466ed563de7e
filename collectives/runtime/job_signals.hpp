#pragma once
// Every way a job is told to stop ends its run honestly. install() blocks the stopping
// signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGXCPU: what people,
// mpiexec and Slurm send) in the calling thread before MPI_Init, so every thread created
// later -- the MPI transport's progress threads included -- inherits the mask. Threads
// that started before (OpenBLAS's pool starts before main) may still receive them, so
// a handler passes any of them through a pipe to one watcher thread of ours, which
// marks the watched run `partial` with the
// signal, the rank and the host, prints the reason and ends the process with 128 +
// the signal number; rows already appended stay in the file.
// SIGXFSZ (a file-size limit reached) is ignored instead, so a write past the limit
// fails with EFBIG and the store recovers (reports/store/store_undo.hpp) rather than the
// process dying mid-write.
#include <string>

namespace ibt::suites {

class RunRecorder;

namespace job_signals {

// Call once, first thing, before MPI_Init and before any thread starts.
void install(const std::string& suite_name);
// The rank and host named in messages (after MPI_Init).
void set_rank(int world_rank);
// The run a signal marks partial (rank 0's; nullptr: none). The recorder must stay
// alive until watch(nullptr) or the end of the process.
void watch(RunRecorder* recorder);
// "SIGTERM", "SIGINT", ... ("signal N" for others).
std::string signal_name(int sig);

}  // namespace job_signals
}  // namespace ibt::suites
