#pragma once
// What this rank is blocked in, for the watchdog's message. A communicator publishes
// the operation it is about to enter (a pointer to a description built once, so the
// cost per op is one relaxed atomic store: nothing measurable next to an 8-byte
// all-reduce) and, for point-to-point, the peer; the watchdog thread reads them when
// a deadline passes, while the main thread is stuck inside MPI.
#include <atomic>
#include <string>

namespace ibt {

struct OpSite {
  std::string text;  // "MPI_Allreduce on the dp group (world ranks 0, 2)"
};

void set_op_in_flight(const OpSite* site, int peer_world_rank = -1);
void clear_op_in_flight();
// "" when nothing is in flight; else the site's text, and for point-to-point the peer:
// "MPI_Recv on the pp group (world ranks 0, 1) from world rank 1".
std::string describe_op_in_flight();

}  // namespace ibt
