#pragma once
// Which ranks form the tp, dp, pp, ep and expert_dp groups: pure arithmetic, no MPI,
// so it is tested for 16,384 ranks on a laptop and shared by every executor.
//
// Rank order (Megatron's RankGenerator order tp-cp-ep-dp-pp; tp varies fastest, pp
// slowest):
//
//     rank = tp_rank + tp * (cp_rank + cp * (dp_rank + dp * pp_rank))
//     dp_rank = ep_rank + ep * expert_dp_rank
//
// so TP peers are consecutive ranks (they land in one node / NVLink domain first),
// then CP peers (next to TP: ring attention's K/V passes stay inside the domain
// first), then DP replicas, then pipeline stages. EP nests inside DP: an EP group is ep
// *consecutive* DP ranks (same tp_rank, same pp_rank, same expert_dp_rank), and the
// expert_dp group joins the ranks holding the same experts (same ep_rank) across
// the dp/ep EP groups. Gradients of expert weights are reduced over expert_dp;
// gradients of all other weights over dp. With cp > 1 the CP peers hold the same
// weights too, so gradients are reduced over dp_cp (dp x cp: the ranks with the same
// tp and pp coordinates) and expert_dp_cp (expert_dp x cp); at cp == 1 these are the
// dp and expert_dp groups.
//
// Sharded states (ZeRO, hybrid sharding with shard_group g > 0, ParallelSplit):
// dp_shard is the ranks that hold one copy of the sharded states between them: g
// *consecutive* DP ranks (consecutive so that they land in one scale-up domain first)
// times all cp ranks, since CP ranks are gradient replicas like DP ranks (member index
// cp + cp_size * (dp % g): CP fastest, as in dp_cp). dp_replica joins the ranks with the
// same index inside their shard group (same cp rank) across the dp/g groups (each holds
// the same slice). Without a shard group dp_shard is dp_cp (dp x cp, the same members
// in the same order) and dp_replica a single rank.
// Expert weights under hybrid sharding (ep | g: a shard group holds whole EP groups):
// expert_dp_shard is the ranks of one shard group that hold the same experts (same
// ep_rank), g/ep of them, times all cp ranks (member index cp + cp_size * ((dp % g) /
// ep)); they shard the expert states, and dp_replica (same dp % g, hence same ep_rank)
// replicates them across the shard groups like the dense ones. Without a shard group
// expert_dp_shard is expert_dp_cp, member for member.
//
// Replicated KV heads (tp > kv_heads, model_config.hpp kv_replicas() = r > 1): tp_kv is
// the r *consecutive* TP ranks holding the same KV head (rank tp holds head tp / r);
// their K/V weight gradients are summed over it. Without replication it is one rank.
//
// Groups are identified, for MPI_Comm_split, by group_color() (the same for all
// members, distinct between groups of one kind, in 0..group_count()-1) and ordered by
// index_in_group() (the member's coordinate along that axis).
#include <string_view>
#include <vector>

#include "models/plan/parallel_split.hpp"

namespace ibt::models {

// A communicating group in the step program. none = a local op (compute).
enum class Group {
  none,
  tp,
  dp,
  pp,
  ep,
  expert_dp,
  cp,
  dp_cp,
  expert_dp_cp,
  dp_shard,
  dp_replica,
  expert_dp_shard,
  tp_kv
};
inline constexpr int kGroupKinds = 13;
// "none", "tp", "dp", "pp", "ep", "expert_dp", "cp", "dp_cp", "expert_dp_cp", "dp_shard",
// "dp_replica", "expert_dp_shard", "tp_kv"
std::string_view to_string(Group g);

struct RankCoord {
  int tp = 0;
  int dp = 0;
  int pp = 0;
  int ep = 0;         // dp % ep_size
  int expert_dp = 0;  // dp / ep_size
  int cp = 0;
  bool operator==(const RankCoord&) const = default;
};

class RankLayout {
 public:
  // Sizes must be >= 1, ep and shard_group (0 = dp) must divide dp, kv_replicas tp
  // (throws UsageError otherwise).
  RankLayout(int tp, int dp, int pp, int ep = 1, int cp = 1, int shard_group = 0, int kv_replicas = 1);
  explicit RankLayout(const ParallelSplit& s, int kv_replicas = 1)
      : RankLayout(s.tp, s.dp, s.pp, s.ep, s.cp, s.shard_group, kv_replicas) {}

  int world_size() const { return tp_ * cp_ * dp_ * pp_; }
  int group_size(Group g) const;   // none: 1
  int group_count(Group g) const;  // world_size() / group_size(g)

  RankCoord coord(int rank) const;        // throws UsageError when out of range
  int rank_of(const RankCoord& c) const;  // uses tp, cp, dp, pp (ep/expert_dp ignored)

  // Members of rank's group of kind g, ordered by index_in_group (none: {rank}).
  std::vector<int> members(Group g, int rank) const;
  int index_in_group(Group g, int rank) const;
  int group_color(Group g, int rank) const;

  // The pipeline neighbours of a rank (same tp/cp/dp coordinates), wrapping around
  // (interleaved schedules send from the last stage to the first).
  int next_stage_rank(int rank) const;
  int prev_stage_rank(int rank) const;
  // The rank with the same tp/dp coordinates on pipeline stage `stage`: the peer of a
  // Transfer (schedule.hpp) is rank_at_stage(my_rank, transfer.peer_stage).
  int rank_at_stage(int rank, int stage) const;

 private:
  int tp_, dp_, pp_, ep_, cp_, shard_;  // shard_: DP ranks per dp_shard group
  int kv_;                              // TP ranks per tp_kv group
};

}  // namespace ibt::models
