#pragma once
// Ends a stuck or interrupted job without losing what it measured. A watchdog deadline
// marks rank 0's run failed with the reason, prints it, and ends the process; the MPI
// launcher then ends the other ranks. Ranks other than 0 wait a grace period first, so
// rank 0 gets to record the failure. Stopping signals are handled by job_signals.hpp
// (installed before MPI_Init); the guard points it at this job's run.
#include <functional>
#include <memory>
#include <string>

#include "collectives/runtime/run_recorder.hpp"
#include "collectives/watchdog.hpp"

namespace ibt::suites {

class JobGuard {
 public:
  JobGuard(std::string suite_name, int world_rank, RunRecorder* recorder);
  ~JobGuard();
  JobGuard(const JobGuard&) = delete;
  JobGuard& operator=(const JobGuard&) = delete;

  Watchdog* watchdog() { return watchdog_.get(); }
  // The run a failure or signal marks (a command that records several runs, as sweep,
  // points the guard at each in turn; nullptr between them).
  void set_recorder(RunRecorder* recorder);
  // Called (rank 0) with the message before a failure ends the process, after the run is
  // marked: accept writes its JUnit file there.
  void set_on_failure(std::function<void(const std::string& message)> hook) { on_failure_ = std::move(hook); }
  // Records a failure (rank 0), prints it and ends the process with `exit_code`.
  [[noreturn]] void fail_and_exit(const std::string& message, int exit_code);

 private:
  std::string suite_;
  int rank_;
  RunRecorder* recorder_;
  std::function<void(const std::string&)> on_failure_;
  std::unique_ptr<Watchdog> watchdog_;
};

}  // namespace ibt::suites
