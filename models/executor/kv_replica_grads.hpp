#pragma once
// Replicated KV heads (tp > kv_heads; model_config.hpp kv_replicas()): the tp/kv_heads
// TP ranks of a tp_kv group hold copies of one KV head's Wk and Wv, and each computes
// only its own query heads' share of their gradients. Summing the shares over tp_kv
// gives every copy the full gradient, so the copies stay identical after the update;
// for norms and sums of squares the copy of tp_kv rank 0 is the one counted.
// Shared by the replicated-gradient path (cpu_executor.cpp) and ZeRO-2/3 (zero_units.cpp).
#include <algorithm>
#include <string>
#include <vector>

#include "collectives/communicator.hpp"
#include "models/engine/tensor.hpp"

namespace ibt::models {

inline bool is_kv_weight(const Param& p) {
  const auto ends = [&p](const std::string& tail) {
    return p.name.size() >= tail.size() && p.name.compare(p.name.size() - tail.size(), tail.size(), tail) == 0;
  };
  return ends(".attention.wk") || ends(".attention.wv");
}

// False for the copies that tp_kv ranks other than 0 hold (they equal rank 0's).
inline bool kv_copy_counted(const Param& p, const Communicator& tp_kv) { return tp_kv.rank() == 0 || !is_kv_weight(p); }

// Sums the K/V weight gradients among `params` over tp_kv (one all-reduce of a flat
// buffer); nothing without replication.
inline void sum_kv_replica_grads(const std::vector<Param*>& params, Communicator& tp_kv) {
  if (tp_kv.size() == 1) return;
  std::vector<Param*> kv;
  size_t total = 0;
  for (Param* p : params)
    if (is_kv_weight(*p)) {
      kv.push_back(p);
      total += p->grad.data.size();
    }
  if (kv.empty()) return;
  std::vector<float> flat(total);
  size_t at = 0;
  for (Param* p : kv) {
    std::copy(p->grad.data.begin(), p->grad.data.end(), flat.begin() + static_cast<std::ptrdiff_t>(at));
    at += p->grad.data.size();
  }
  tp_kv.all_reduce(flat.data(), flat.data(), flat.size(), DType::float32, ReduceOp::sum);
  at = 0;
  for (Param* p : kv) {
    std::copy_n(flat.begin() + static_cast<std::ptrdiff_t>(at), p->grad.data.size(), p->grad.data.begin());
    at += p->grad.data.size();
  }
}

}  // namespace ibt::models
