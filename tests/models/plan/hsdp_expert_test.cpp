// Hybrid sharding with expert parallelism in the plan: a shard group of g DP ranks
// holds g/ep whole EP groups; the expert states shard over its g/ep ranks with the
// same experts (x cp: expert_dp_shard) and are all-reduced across the dp/g replicas
// (dp_replica), like the dense ones. The engine side runs under mpiexec
// (engine_conformance_moe_hsdp_*).
#include <gtest/gtest.h>

#include <algorithm>

#include "models/plan/accounting.hpp"
#include "models/plan/model_file.hpp"
#include "models/plan/rank_groups.hpp"
#include "models/plan/step_program.hpp"

namespace ibt::models {
namespace {

ParallelSplit hsdp_ep(int dp, int ep, int shard_group, int zero = 3, int cp = 1) {
  ParallelSplit s;
  s.dp = dp;
  s.ep = ep;
  s.cp = cp;
  s.zero = zero;
  s.shard_group = shard_group;
  s.microbatches = 2;
  return s;
}

TEST(PlanHsdpExpert, ValidWhereTheShardGroupHoldsWholeEpGroups) {
  const ModelConfig moe = load_model("tiny-moe");  // 8 experts
  EXPECT_EQ(check(hsdp_ep(8, 2, 4), moe, 8), "");
  EXPECT_EQ(check(hsdp_ep(8, 4, 4, 1), moe, 8), "");
  EXPECT_EQ(check(hsdp_ep(8, 2, 4, 3, 2), moe, 16), "");
  EXPECT_NE(check(hsdp_ep(8, 4, 2), moe, 8).find("shard_group (2) not divisible by ep (4)"), std::string::npos);
  EXPECT_EQ(strategy_label(hsdp_ep(8, 2, 4)), "hsdp4 ep2");
}

TEST(PlanHsdpExpert, ExpertShardGroupIsTheSameExpertsInsideTheShardGroup) {
  // dp8 ep2 shard4 cp2: rank = cp + 2 * dp; ep_rank = dp % 2.
  const RankLayout L(hsdp_ep(8, 2, 4, 3, 2));
  EXPECT_EQ(L.group_size(Group::expert_dp_shard), 4);                                 // 4/2 DP ranks x 2 CP ranks
  EXPECT_EQ(L.members(Group::expert_dp_shard, 0), (std::vector<int>{0, 1, 4, 5}));    // dp 0, 2
  EXPECT_EQ(L.members(Group::expert_dp_shard, 3), (std::vector<int>{2, 3, 6, 7}));    // dp 1, 3
  EXPECT_EQ(L.members(Group::expert_dp_shard, 9), (std::vector<int>{8, 9, 12, 13}));  // dp 4, 6
  EXPECT_EQ(L.members(Group::dp_replica, 3), (std::vector<int>{3, 11}));              // dp 1, 5
  for (int r = 0; r < L.world_size(); ++r) {
    const auto m = L.members(Group::expert_dp_shard, r);
    EXPECT_EQ(m[L.index_in_group(Group::expert_dp_shard, r)], r);
    for (int peer : m) {
      EXPECT_EQ(L.group_color(Group::expert_dp_shard, peer), L.group_color(Group::expert_dp_shard, r));
      EXPECT_EQ(L.coord(peer).ep, L.coord(r).ep);  // the same experts
    }
    EXPECT_LT(L.group_color(Group::expert_dp_shard, r), L.group_count(Group::expert_dp_shard));
  }
  // Without a shard group it is expert_dp_cp, member for member.
  const RankLayout P(hsdp_ep(8, 2, 0, 3, 2));
  for (int r = 0; r < P.world_size(); ++r)
    EXPECT_EQ(P.members(Group::expert_dp_shard, r), P.members(Group::expert_dp_cp, r));
}

TEST(PlanHsdpExpert, StepProgramShardsExpertsInsideAndReducesAcross) {
  const ModelConfig moe = load_model("tiny-moe");
  const ParallelSplit s = hsdp_ep(8, 2, 4);
  const StepProgram p = build_step_program(moe, s, 0);
  double expert_rs = 0, expert_ar = 0;
  int expert_gathers = 0;
  for (const Op& op : p.ops) {
    if (!op.expert) continue;
    EXPECT_NE(op.group, Group::expert_dp) << "HSDP keeps expert states inside the shard group";
    if (op.kind == OpKind::grad_reduce_scatter && op.group == Group::expert_dp_shard) expert_rs += op.bytes;
    if (op.kind == OpKind::grad_all_reduce && op.group == Group::dp_replica) expert_ar += op.bytes;
    if (op.kind == OpKind::param_all_gather && op.group == Group::expert_dp_shard) ++expert_gathers;
  }
  EXPECT_GT(expert_gathers, 0);
  // Reduce-scatter after each of the 2 microbatches' backwards over 2 ranks, the
  // replica all-reduce once on the 1/2 shard.
  EXPECT_GT(expert_ar, 0.0);
  EXPECT_DOUBLE_EQ(expert_ar * 2 * s.microbatches, expert_rs);
}

TEST(PlanHsdpExpert, MemoryShardsExpertsOverTheShardGroupsSameExpertRanks) {
  const ModelConfig m = load_model("deepseek-v3");
  const Precision p = bf16_mixed_adam();
  const RankMemory full = memory_per_rank(m, hsdp_ep(64, 8, 0, 0), p, 0);
  const RankMemory hsdp = memory_per_rank(m, hsdp_ep(64, 8, 32, 3), p, 0);
  const double dense = full.params - full.expert_params;
  // ZeRO-3: 16 bytes per parameter over the shard (dense: 32 ranks, experts: 32/8).
  EXPECT_NEAR(hsdp.model_state(), 16.0 * (dense / 32 + full.expert_params / 4), 1e-6 * hsdp.model_state());
}

}  // namespace
}  // namespace ibt::models
