// Rank-group algebra as pure math: every group kind partitions the world, members
// agree on color and order, and the documented order (tp fastest, EP inside DP) holds.
#include <gtest/gtest.h>

#include <vector>

#include "core/errors.hpp"
#include "models/plan/rank_groups.hpp"

namespace ibt::models {
namespace {

const Group kKinds[] = {Group::tp, Group::dp, Group::pp, Group::ep, Group::expert_dp, Group::tp_kv};

void check_partitions(const RankLayout& L) {
  const int n = L.world_size();
  for (Group g : kKinds) {
    const int size = L.group_size(g);
    ASSERT_EQ(L.group_count(g) * size, n);
    std::vector<int> seen(n, 0);
    std::vector<int> color_owner(L.group_count(g), -1);
    for (int r = 0; r < n; ++r) {
      const int color = L.group_color(g, r);
      ASSERT_GE(color, 0);
      ASSERT_LT(color, L.group_count(g));
      if (L.index_in_group(g, r) != 0) continue;  // visit each group once, via its first member
      ASSERT_EQ(color_owner[color], -1) << to_string(g) << ": two groups share color " << color;
      color_owner[color] = r;
      const std::vector<int> members = L.members(g, r);
      ASSERT_EQ(static_cast<int>(members.size()), size);
      for (int i = 0; i < size; ++i) {
        const int q = members[i];
        ASSERT_GE(q, 0);
        ASSERT_LT(q, n);
        ++seen[q];
        EXPECT_EQ(L.index_in_group(g, q), i) << to_string(g);
        EXPECT_EQ(L.group_color(g, q), color) << to_string(g);
        EXPECT_EQ(L.members(g, q), members) << to_string(g);
      }
    }
    for (int r = 0; r < n; ++r) ASSERT_EQ(seen[r], 1) << to_string(g) << " rank " << r;
  }
}

TEST(PlanRankGroups, PartitionsSmallWorlds) {
  for (int tp : {1, 2, 3})
    for (int dp : {1, 2, 4, 6})
      for (int pp : {1, 2, 3})
        for (int ep : {1, 2, 3})
          if (dp % ep == 0) check_partitions(RankLayout(tp, dp, pp, ep));
}

// Replicated KV heads: tp_kv groups of r consecutive TP ranks, with CP and DP around.
TEST(PlanRankGroups, PartitionsKvReplicaGroups) {
  for (int tp : {2, 4, 8})
    for (int replicas : {1, 2, 4})
      if (tp % replicas == 0) {
        const RankLayout L(tp, 2, 2, 1, 2, 0, replicas);
        check_partitions(L);
        EXPECT_EQ(L.group_size(Group::tp_kv), replicas);
        EXPECT_EQ(L.members(Group::tp_kv, tp - 1).front(), tp - replicas);  // the last `replicas` TP ranks share a head
      }
  EXPECT_THROW(RankLayout(4, 1, 1, 1, 1, 0, 3), UsageError);
}

TEST(PlanRankGroups, PartitionsSixteenThousandRanks) {
  // 16,384 GPUs: tp 8 x dp 128 x pp 16 with EP 64 carved out of DP.
  check_partitions(RankLayout(8, 128, 16, 64));
  check_partitions(RankLayout(4, 4096, 1, 256));
}

TEST(PlanRankGroups, DocumentedOrder) {
  const RankLayout L(2, 4, 2, 2);  // 16 ranks
  EXPECT_EQ(L.members(Group::tp, 0), (std::vector<int>{0, 1}));
  EXPECT_EQ(L.members(Group::dp, 0), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(L.members(Group::pp, 0), (std::vector<int>{0, 8}));
  // EP: consecutive DP ranks; expert_dp: same EP index across EP groups.
  EXPECT_EQ(L.members(Group::ep, 0), (std::vector<int>{0, 2}));
  EXPECT_EQ(L.members(Group::ep, 5), (std::vector<int>{5, 7}));
  EXPECT_EQ(L.members(Group::expert_dp, 0), (std::vector<int>{0, 4}));
  EXPECT_EQ(L.members(Group::expert_dp, 3), (std::vector<int>{3, 7}));
  const RankCoord c = L.coord(13);  // 13 = 1 + 2 * (2 + 4 * 1)
  EXPECT_EQ(c, (RankCoord{1, 2, 1, 0, 1}));
  EXPECT_EQ(L.rank_of(c), 13);
  EXPECT_EQ(L.next_stage_rank(5), 13);
  EXPECT_EQ(L.next_stage_rank(13), 5);  // wraps around
  EXPECT_EQ(L.prev_stage_rank(5), 13);
  EXPECT_EQ(L.rank_at_stage(5, 1), 13);
  EXPECT_EQ(L.rank_at_stage(13, 0), 5);
  EXPECT_THROW(L.rank_at_stage(5, 2), UsageError);
  EXPECT_EQ(L.members(Group::none, 6), (std::vector<int>{6}));
}

TEST(PlanRankGroups, RejectsBadLayouts) {
  EXPECT_THROW(RankLayout(1, 4, 1, 3), UsageError);
  EXPECT_THROW(RankLayout(0, 4, 1, 1), UsageError);
  EXPECT_THROW(RankLayout(2, 2, 2, 1).coord(8), UsageError);
}

}  // namespace
}  // namespace ibt::models
