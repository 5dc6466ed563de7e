#include "suites/job_guard.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "collectives/op_in_flight.hpp"
#include "core/errors.hpp"
#include "suites/job_signals.hpp"

namespace ibt::suites {
namespace {
constexpr double kGraceSeconds = 5.0;

std::string host_name() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}
}  // namespace

JobGuard::JobGuard(std::string suite_name, int world_rank, RunRecorder* recorder)
    : suite_(std::move(suite_name)), rank_(world_rank), recorder_(recorder) {
  job_signals::watch(recorder_);
  watchdog_ = std::make_unique<Watchdog>([this](const std::string& what, double seconds) {
    char text[64];
    std::snprintf(text, sizeof text, "%g", seconds);
    const std::string op = describe_op_in_flight();
    fail_and_exit("timed out after " + std::string(text) + " s in " + what + (op.empty() ? "" : ", inside " + op) +
                      ": every rank had arrived at its start and nothing completed for " + text +
                      " s, so the stall is inside the operation (noticed by rank " + std::to_string(rank_) +
                      " on host " + host_name() + "); if one call can take that long here, raise -T/--timeout",
                  kExitTimeout);
  });
}

JobGuard::~JobGuard() {
  watchdog_.reset();
  job_signals::watch(nullptr);
}

void JobGuard::set_recorder(RunRecorder* recorder) {
  recorder_ = recorder;
  job_signals::watch(recorder);
}

void JobGuard::fail_and_exit(const std::string& message, int exit_code) {
  if (rank_ != 0) {
    // Let rank 0 record the failure before the launcher tears the job down.
    std::this_thread::sleep_for(std::chrono::duration<double>(kGraceSeconds));
  }
  if (recorder_) recorder_->finish(store::RunStatus::failed, message);
  if (rank_ == 0 && on_failure_) {
    try {
      on_failure_(message);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ibt %s: error: %s\n", suite_.c_str(), e.what());
    }
  }
  std::fprintf(stderr, "ibt %s: error: rank %d: %s\n", suite_.c_str(), rank_, message.c_str());
  std::fflush(nullptr);
  _exit(exit_code);
}

}  // namespace ibt::suites
