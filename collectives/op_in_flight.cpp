#include "collectives/op_in_flight.hpp"

namespace ibt {
namespace {
std::atomic<const OpSite*> current{nullptr};
std::atomic<int> peer{-1};
}  // namespace

void set_op_in_flight(const OpSite* site, int peer_world_rank) {
  peer.store(peer_world_rank, std::memory_order_relaxed);
  current.store(site, std::memory_order_release);
}

void clear_op_in_flight() { current.store(nullptr, std::memory_order_release); }

std::string describe_op_in_flight() {
  const OpSite* site = current.load(std::memory_order_acquire);
  if (!site) return "";
  const int p = peer.load(std::memory_order_relaxed);
  std::string text = site->text;
  if (p >= 0) text += " with world rank " + std::to_string(p) + " (the peer that stopped progressing)";
  return text;
}

}  // namespace ibt
