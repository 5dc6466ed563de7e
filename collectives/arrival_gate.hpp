#pragma once
// A barrier with a deadline that names who is missing. Every rank reports its arrival
// to rank 0 and waits for rank 0's release; if some rank has not arrived when the
// deadline passes, rank 0 throws a TimeoutError listing exactly those ranks, each with
// its pid and host (rank_identity.hpp, gathered when the gate is made). A rank other than
// 0 waits for the release T + 5 s: past it rank 0 itself stopped (or is stuck), and that
// rank throws naming rank 0, so a stopped rank 0 ends the job too. Used before
// every measurement and training step, outside any timed region, on its own duplicate
// of the world communicator so it never matches the work's messages.
#include <mpi.h>

#include <string>
#include <vector>

#include "core/errors.hpp"

namespace ibt {

struct TimeoutError : RuntimeError {
  TimeoutError(const std::string& message, std::vector<int> missing_ranks)
      : RuntimeError(message), missing(std::move(missing_ranks)) {}
  std::vector<int> missing;  // world ranks that did not arrive (rank 0); {0} when rank 0 did not release
};

class ArrivalGate {
 public:
  explicit ArrivalGate(MPI_Comm world);
  ~ArrivalGate();
  ArrivalGate(const ArrivalGate&) = delete;
  ArrivalGate& operator=(const ArrivalGate&) = delete;

  // Collective. `where` names the work about to start, for the message.
  void pass(const std::string& where, double timeout_seconds);

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  long sequence_ = 0;
};

// Formats "1, 3 and 4".
std::string join_ranks(const std::vector<int>& ranks);

}  // namespace ibt
