#pragma once
// What a weight is to the splits, from its name: shared by the cpu executor, its ZeRO
// units and its per-tensor sums, so all count each element once over the world alike.
#include <string>

#include "models/engine/layers/transformer.hpp"
#include "models/executor/kv_replica_grads.hpp"
#include "models/executor/process_groups.hpp"

namespace ibt::models {

// Weights whose TP shards are identical copies (norms, the MoE router): counted once
// in norms, and never sliced.
inline bool tp_replicated(const Param& p) {
  return p.name.find("norm.") != std::string::npos || p.name.find("router") != std::string::npos;
}
// Routed-expert weights: sharded over ep, replicated (and reduced) over expert_dp.
inline bool is_expert(const Param& p) { return p.name.find(".experts.") != std::string::npos; }

// Whether the norms count this rank's copy of a weight: each weight is counted once.
// DP replicas hold identical copies (expert weights: the expert_dp replicas; EP peers
// hold different experts), so do CP peers, and TP peers of the replicated weights.
inline bool counted_in_norms(const Param& p, const RankCoord& me, const Communicator& tp_kv) {
  if (is_expert(p) ? me.expert_dp != 0 : me.dp != 0) return false;
  if (me.cp != 0) return false;
  if (tp_replicated(p) && me.tp != 0) return false;
  return kv_copy_counted(p, tp_kv);  // replicated KV heads: one copy
}

}  // namespace ibt::models
