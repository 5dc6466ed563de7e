#include "collectives/arrival_gate.hpp"

#include <unistd.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "collectives/rank_identity.hpp"

namespace ibt {
namespace {

constexpr int kArriveTag = 9101;
constexpr int kReleaseTag = 9102;
// How much longer than rank 0 the others wait for its release: rank 0 arrives a little
// after them (it stores and prints each measurement's rows first), decides T s after its
// own arrival and records the verdict. Small, so a stopped rank 0 is noticed at T + 5 s.
constexpr double kReleaseMarginSeconds = 5.0;

// Polls a request until it completes or the deadline passes. Sleeps between polls so
// oversubscribed ranks leave the cores to the ranks doing work.
bool wait_until(MPI_Request* request, std::chrono::steady_clock::time_point deadline) {
  int done = 0;
  for (int spins = 0;; ++spins) {
    MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (done) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    if (spins > 100) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

std::chrono::steady_clock::time_point after(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

std::string join_ranks(const std::vector<int>& ranks) {
  std::ostringstream out;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) out << (i + 1 == ranks.size() ? " and " : ", ");
    out << ranks[i];
  }
  return out.str();
}

ArrivalGate::ArrivalGate(MPI_Comm world) {
  MPI_Comm_dup(world, &comm_);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  gather_rank_identities(comm_);
}

ArrivalGate::~ArrivalGate() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm_);
}

void ArrivalGate::pass(const std::string& where, double timeout_seconds) {
  ++sequence_;
  if (rank_ != 0) {
    MPI_Request arrive, release;
    long go = 0;
    MPI_Isend(&sequence_, 1, MPI_LONG, 0, kArriveTag, comm_, &arrive);
    MPI_Irecv(&go, 1, MPI_LONG, 0, kReleaseTag, comm_, &release);
    // Rank 0 decides and reports; the others wait a little longer so that it can.
    if (!wait_until(&release, after(timeout_seconds + kReleaseMarginSeconds))) {
      char host[256] = {};
      gethostname(host, sizeof host - 1);
      std::ostringstream msg;
      msg << "timed out after " << timeout_seconds + kReleaseMarginSeconds << " s waiting for rank 0"
          << rank_processes_suffix({0}) << " to release the start of " << where
          << ": rank 0 stopped progressing or died (noticed by rank " << rank_ << " on host " << host << ")";
      throw TimeoutError(msg.str(), {0});
    }
    MPI_Wait(&arrive, MPI_STATUS_IGNORE);
    return;
  }
  std::vector<long> seen(size_, 0);
  std::vector<MPI_Request> requests(size_, MPI_REQUEST_NULL);
  for (int r = 1; r < size_; ++r) MPI_Irecv(&seen[r], 1, MPI_LONG, r, kArriveTag, comm_, &requests[r]);
  const auto deadline = after(timeout_seconds);
  std::vector<int> missing;
  for (int r = 1; r < size_; ++r)
    if (!wait_until(&requests[r], deadline)) missing.push_back(r);
  if (!missing.empty()) {
    std::ostringstream msg;
    msg << "timed out after " << timeout_seconds << " s before " << where << ": rank"
        << (missing.size() > 1 ? "s " : " ") << join_ranks(missing) << " did not arrive"
        << rank_processes_suffix(missing);
    throw TimeoutError(msg.str(), missing);  // requests stay pending: the job is ending
  }
  std::vector<MPI_Request> releases(size_, MPI_REQUEST_NULL);
  for (int r = 1; r < size_; ++r) MPI_Isend(&sequence_, 1, MPI_LONG, r, kReleaseTag, comm_, &releases[r]);
  MPI_Waitall(size_, releases.data(), MPI_STATUSES_IGNORE);
}

}  // namespace ibt
