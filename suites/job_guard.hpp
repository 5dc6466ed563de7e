#pragma once
// Ends a stuck or interrupted job without losing what it measured. A watchdog deadline
// or SIGINT/SIGTERM marks rank 0's run (failed or partial, with the reason), prints the
// reason, and ends the process; the MPI launcher then ends the other ranks. Ranks other
// than 0 wait a grace period first, so rank 0 gets to record the failure.
#include <csignal>
#include <memory>
#include <string>
#include <thread>

#include "collectives/watchdog.hpp"
#include "suites/run_recorder.hpp"

namespace ibt::suites {

class JobGuard {
 public:
  // Call before any other thread starts: it blocks SIGINT/SIGTERM in this thread, and
  // so in every thread created later, and handles them on its own thread.
  JobGuard(std::string suite_name, int world_rank, RunRecorder* recorder);
  ~JobGuard();
  JobGuard(const JobGuard&) = delete;
  JobGuard& operator=(const JobGuard&) = delete;

  Watchdog* watchdog() { return watchdog_.get(); }
  // Records a failure (rank 0), prints it and ends the process with `exit_code`.
  [[noreturn]] void fail_and_exit(const std::string& message, int exit_code);

 private:
  void handle_signals();

  std::string suite_;
  int rank_;
  RunRecorder* recorder_;
  sigset_t signals_{};
  std::unique_ptr<Watchdog> watchdog_;
  std::thread signal_thread_;
};

}  // namespace ibt::suites
