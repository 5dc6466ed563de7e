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

namespace op_in_flight_detail {
inline std::atomic<const OpSite*> current{nullptr};
inline std::atomic<int> peer{-1};
}  // namespace op_in_flight_detail

// Inline: they run around every timed call, so they cost two stores, not two calls.
inline void set_op_in_flight(const OpSite* site, int peer_world_rank = -1) {
  op_in_flight_detail::peer.store(peer_world_rank, std::memory_order_relaxed);
  op_in_flight_detail::current.store(site, std::memory_order_release);
}
inline void clear_op_in_flight() { op_in_flight_detail::current.store(nullptr, std::memory_order_release); }
// "" when nothing is in flight; else the site's text, and for point-to-point the peer:
// "MPI_Recv on the pp group (world ranks 0, 1) from world rank 1".
std::string describe_op_in_flight();

}  // namespace ibt
