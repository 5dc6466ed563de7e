#include "collectives/op_in_flight.hpp"

namespace ibt {
std::string describe_op_in_flight() {
  const OpSite* site = op_in_flight_detail::current.load(std::memory_order_acquire);
  if (!site) return "";
  const int p = op_in_flight_detail::peer.load(std::memory_order_relaxed);
  std::string text = site->text;
  if (p >= 0) text += " with world rank " + std::to_string(p) + " (the peer that stopped progressing)";
  return text;
}

}  // namespace ibt
