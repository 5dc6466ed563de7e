#include "suites/job_guard.hpp"

#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "core/errors.hpp"

namespace ibt::suites {
namespace {
constexpr double kGraceSeconds = 5.0;
}

JobGuard::JobGuard(std::string suite_name, int world_rank, RunRecorder* recorder)
    : suite_(std::move(suite_name)), rank_(world_rank), recorder_(recorder) {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGINT);
  sigaddset(&signals_, SIGTERM);
  sigaddset(&signals_, SIGUSR1);  // used only to wake the signal thread at shutdown
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
  signal_thread_ = std::thread([this] { handle_signals(); });
  watchdog_ = std::make_unique<Watchdog>([this](const std::string& what, double seconds) {
    char text[64];
    std::snprintf(text, sizeof text, "%g", seconds);
    fail_and_exit("timed out after " + std::string(text) + " s in " + what +
                      ": every rank had arrived at its start, so the stall is inside the operation",
                  kExitTimeout);
  });
}

JobGuard::~JobGuard() {
  watchdog_.reset();
  pthread_kill(signal_thread_.native_handle(), SIGUSR1);
  signal_thread_.join();
}

void JobGuard::handle_signals() {
  int sig = 0;
  sigwait(&signals_, &sig);
  if (sig == SIGUSR1) return;  // shutdown
  const std::string reason = std::string("interrupted by ") + (sig == SIGINT ? "SIGINT" : "SIGTERM");
  if (recorder_) recorder_->finish(store::RunStatus::partial, reason);
  std::fprintf(stderr, "ibt %s: rank %d: %s; rows measured so far are kept\n", suite_.c_str(), rank_, reason.c_str());
  std::fflush(nullptr);
  _exit(128 + sig);
}

void JobGuard::fail_and_exit(const std::string& message, int exit_code) {
  if (rank_ != 0) {
    // Let rank 0 record the failure before the launcher tears the job down.
    std::this_thread::sleep_for(std::chrono::duration<double>(kGraceSeconds));
  }
  if (recorder_) recorder_->finish(store::RunStatus::failed, message);
  std::fprintf(stderr, "ibt %s: error: rank %d: %s\n", suite_.c_str(), rank_, message.c_str());
  std::fflush(nullptr);
  _exit(exit_code);
}

}  // namespace ibt::suites
