#include "collectives/runtime/job_guard.hpp"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "collectives/arrival_gate.hpp"
#include "collectives/op_in_flight.hpp"
#include "collectives/rank_identity.hpp"
#include "collectives/runtime/job_signals.hpp"
#include "core/errors.hpp"

namespace ibt::suites {
namespace {
constexpr double kGraceSeconds = 5.0;
// Rank 0 waits this long before leaving, so that every other rank's watchdog (armed within
// moments of its own at the same operation) has fired and set its exit status first.
constexpr double kLeaveAfterSeconds = 0.5;

volatile std::sig_atomic_t g_decided_exit = 0;

extern "C" void exit_as_decided(int) { _exit(g_decided_exit); }

// Once a rank has decided how the job ends, a peer leaving can make the transport fail
// inside the operation still in flight (UCX's shared-memory copy aborts with "No such
// process" when rank 0 has exited): that abort or fault is part of the same end, so it
// exits with the decided status instead of the signal's (6 for an abort).
void end_transport_failures_as(int exit_code) {
  g_decided_exit = exit_code;
  struct sigaction action {};
  action.sa_handler = exit_as_decided;
  sigemptyset(&action.sa_mask);
  for (const int sig : {SIGABRT, SIGSEGV, SIGBUS}) sigaction(sig, &action, nullptr);
}

std::string host_name() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

// Who a stall inside an operation points at, as far as this rank can tell: it is alive
// and every rank had arrived at the start, so one of the others stopped (or a link to it
// did). In a 2-rank job that is the other rank; in a large one the list is cut short.
std::string suspects(int self) {
  constexpr std::size_t kNamedAtMost = 8;
  const std::vector<int> others = other_ranks(self);
  if (others.empty()) return "another rank stopped progressing, or a link to it did";
  if (others.size() == 1)
    return "rank " + std::to_string(others[0]) + rank_processes_suffix(others) +
           " stopped progressing, or the link to it did";
  if (others.size() > kNamedAtMost)
    return "one of the other " + std::to_string(others.size()) + " ranks stopped progressing, or a link did";
  return "one of ranks " + join_ranks(others) + rank_processes_suffix(others) +
         " stopped progressing, or a link between them did";
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
                      " s, so the stall is inside the operation: " + suspects(rank_) + " (noticed by rank " +
                      std::to_string(rank_) + " on host " + host_name() +
                      "); if one call can take that long here, raise -T/--timeout",
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
    // Rank 0 sets this only after recording: a fault while recording is a bug to see.
    end_transport_failures_as(exit_code);
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
  if (rank_ == 0) {
    end_transport_failures_as(exit_code);
    std::this_thread::sleep_for(std::chrono::duration<double>(kLeaveAfterSeconds));
  }
  _exit(exit_code);
}

}  // namespace ibt::suites
