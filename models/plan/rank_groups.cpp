#include "models/plan/rank_groups.hpp"

#include <string>

#include "core/errors.hpp"

namespace ibt::models {

std::string_view to_string(Group g) {
  switch (g) {
    case Group::none: return "none";
    case Group::tp: return "tp";
    case Group::dp: return "dp";
    case Group::pp: return "pp";
    case Group::ep: return "ep";
    case Group::expert_dp: return "expert_dp";
    case Group::dp_shard: return "dp_shard";
    case Group::dp_replica: return "dp_replica";
    case Group::expert_dp_shard: return "expert_dp_shard";
    case Group::cp: return "cp";
    case Group::dp_cp: return "dp_cp";
    case Group::expert_dp_cp: return "expert_dp_cp";
    case Group::tp_kv: return "tp_kv";
  }
  return "?";
}

RankLayout::RankLayout(int tp, int dp, int pp, int ep, int cp, int shard_group, int kv_replicas)
    : tp_(tp), dp_(dp), pp_(pp), ep_(ep), cp_(cp), shard_(shard_group > 0 ? shard_group : dp), kv_(kv_replicas) {
  if (kv_replicas < 1 || tp % kv_replicas != 0)
    throw UsageError("rank layout: tp (" + std::to_string(tp) + ") not divisible by the KV-head replicas (" +
                     std::to_string(kv_replicas) + ")");
  if (tp < 1 || dp < 1 || pp < 1 || ep < 1 || cp < 1)
    throw UsageError("rank layout: tp, dp, pp, ep and cp must be >= 1");
  if (dp % ep != 0)
    throw UsageError("rank layout: dp (" + std::to_string(dp) + ") not divisible by ep (" + std::to_string(ep) +
                     ") (EP is drawn from DP)");
  if (shard_group < 0 || dp % shard_ != 0)
    throw UsageError("rank layout: dp (" + std::to_string(dp) + ") not divisible by shard_group (" +
                     std::to_string(shard_group) + ")");
  if (shard_ % ep != 0)
    throw UsageError("rank layout: shard_group (" + std::to_string(shard_group) + ") not divisible by ep (" +
                     std::to_string(ep) + ") (a shard group holds whole EP groups)");
}

int RankLayout::group_size(Group g) const {
  switch (g) {
    case Group::none: return 1;
    case Group::tp: return tp_;
    case Group::dp: return dp_;
    case Group::pp: return pp_;
    case Group::ep: return ep_;
    case Group::expert_dp: return dp_ / ep_;
    case Group::dp_shard: return shard_ * cp_;
    case Group::dp_replica: return dp_ / shard_;
    case Group::expert_dp_shard: return shard_ / ep_ * cp_;
    case Group::cp: return cp_;
    case Group::dp_cp: return dp_ * cp_;
    case Group::expert_dp_cp: return dp_ / ep_ * cp_;
    case Group::tp_kv: return kv_;
  }
  return 1;
}

int RankLayout::group_count(Group g) const { return world_size() / group_size(g); }

RankCoord RankLayout::coord(int rank) const {
  if (rank < 0 || rank >= world_size())
    throw UsageError("rank " + std::to_string(rank) + " out of range for world size " + std::to_string(world_size()));
  RankCoord c;
  c.tp = rank % tp_;
  c.cp = (rank / tp_) % cp_;
  c.dp = (rank / (tp_ * cp_)) % dp_;
  c.pp = rank / (tp_ * cp_ * dp_);
  c.ep = c.dp % ep_;
  c.expert_dp = c.dp / ep_;
  return c;
}

int RankLayout::rank_of(const RankCoord& c) const { return c.tp + tp_ * (c.cp + cp_ * (c.dp + dp_ * c.pp)); }

int RankLayout::index_in_group(Group g, int rank) const {
  const RankCoord c = coord(rank);
  switch (g) {
    case Group::none: return 0;
    case Group::tp: return c.tp;
    case Group::dp: return c.dp;
    case Group::pp: return c.pp;
    case Group::ep: return c.ep;
    case Group::expert_dp: return c.expert_dp;
    case Group::dp_shard: return c.cp + cp_ * (c.dp % shard_);
    case Group::dp_replica: return c.dp / shard_;
    case Group::expert_dp_shard: return c.cp + cp_ * ((c.dp % shard_) / ep_);
    case Group::cp: return c.cp;
    case Group::dp_cp: return c.cp + cp_ * c.dp;
    case Group::expert_dp_cp: return c.cp + cp_ * c.expert_dp;
    case Group::tp_kv: return c.tp % kv_;
  }
  return 0;
}

// The color enumerates the coordinates the group does NOT vary, densely.
int RankLayout::group_color(Group g, int rank) const {
  const RankCoord c = coord(rank);
  switch (g) {
    case Group::none: return rank;
    case Group::tp: return c.cp + cp_ * (c.dp + dp_ * c.pp);
    case Group::dp: return c.tp + tp_ * (c.cp + cp_ * c.pp);
    case Group::pp: return c.tp + tp_ * (c.cp + cp_ * c.dp);
    case Group::ep: return c.tp + tp_ * (c.cp + cp_ * (c.expert_dp + (dp_ / ep_) * c.pp));
    case Group::expert_dp: return c.tp + tp_ * (c.cp + cp_ * (c.ep + ep_ * c.pp));
    case Group::cp: return c.tp + tp_ * (c.dp + dp_ * c.pp);
    case Group::dp_cp: return c.tp + tp_ * c.pp;
    case Group::expert_dp_cp: return c.tp + tp_ * (c.ep + ep_ * c.pp);
    case Group::dp_shard: return c.tp + tp_ * (c.dp / shard_ + (dp_ / shard_) * c.pp);
    case Group::dp_replica: return c.tp + tp_ * (c.cp + cp_ * (c.dp % shard_ + shard_ * c.pp));
    case Group::tp_kv: return c.tp / kv_ + (tp_ / kv_) * (c.cp + cp_ * (c.dp + dp_ * c.pp));
    case Group::expert_dp_shard: return c.tp + tp_ * (c.ep + ep_ * (c.dp / shard_ + (dp_ / shard_) * c.pp));
  }
  return 0;
}

std::vector<int> RankLayout::members(Group g, int rank) const {
  const RankCoord c = coord(rank);
  const int n = group_size(g);
  std::vector<int> out;
  out.reserve(n);
  for (int i = 0; i < n; ++i) {
    RankCoord m = c;
    switch (g) {
      case Group::none: return {rank};
      case Group::tp: m.tp = i; break;
      case Group::dp: m.dp = i; break;
      case Group::pp: m.pp = i; break;
      case Group::ep: m.dp = c.expert_dp * ep_ + i; break;
      case Group::expert_dp: m.dp = i * ep_ + c.ep; break;
      case Group::dp_shard: m.cp = i % cp_, m.dp = (c.dp / shard_) * shard_ + i / cp_; break;
      case Group::dp_replica: m.dp = i * shard_ + c.dp % shard_; break;
      case Group::expert_dp_shard: m.cp = i % cp_, m.dp = (c.dp / shard_) * shard_ + (i / cp_) * ep_ + c.ep; break;
      case Group::cp: m.cp = i; break;
      case Group::dp_cp: m.cp = i % cp_, m.dp = i / cp_; break;
      case Group::expert_dp_cp: m.cp = i % cp_, m.dp = (i / cp_) * ep_ + c.ep; break;
      case Group::tp_kv: m.tp = (c.tp / kv_) * kv_ + i; break;
    }
    out.push_back(rank_of(m));
  }
  return out;
}

int RankLayout::next_stage_rank(int rank) const {
  RankCoord c = coord(rank);
  c.pp = (c.pp + 1) % pp_;
  return rank_of(c);
}

int RankLayout::rank_at_stage(int rank, int stage) const {
  if (stage < 0 || stage >= pp_)
    throw UsageError("pipeline stage " + std::to_string(stage) + " out of range for pp " + std::to_string(pp_));
  RankCoord c = coord(rank);
  c.pp = stage;
  return rank_of(c);
}

int RankLayout::prev_stage_rank(int rank) const {
  RankCoord c = coord(rank);
  c.pp = (c.pp + pp_ - 1) % pp_;
  return rank_of(c);
}

}  // namespace ibt::models
