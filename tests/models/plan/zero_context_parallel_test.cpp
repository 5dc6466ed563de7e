// ZeRO-2/3 (FSDP) and hybrid sharding composed with context parallelism in the plan:
// CP ranks are gradient replicas, so the states shard over dp x cp (a shard group x cp
// with HSDP). The split's rules, the groups, the step program's collectives, the
// memory plan, the search and the labels. The engine side runs under mpiexec
// (engine_conformance_cp2_dp2_zero*, engine_conformance_hsdp_2x2_cp2*).
#include <gtest/gtest.h>

#include <algorithm>

#include "models/plan/accounting.hpp"
#include "models/plan/model_file.hpp"
#include "models/plan/rank_groups.hpp"
#include "models/plan/step_program.hpp"

namespace ibt::models {
namespace {

ParallelSplit zero_cp(int dp, int cp, int zero, int shard_group = 0) {
  ParallelSplit s;
  s.dp = dp;
  s.cp = cp;
  s.zero = zero;
  s.shard_group = shard_group;
  s.microbatches = 2;
  return s;
}

int count(const StepProgram& p, OpKind k, Phase ph, Group g) {
  return static_cast<int>(std::count_if(p.ops.begin(), p.ops.end(),
                                        [&](const Op& op) { return op.kind == k && op.phase == ph && op.group == g; }));
}

TEST(PlanZeroContextParallel, ValidAndLabelled) {
  const ModelConfig m = load_model("tiny-dense");
  EXPECT_EQ(check(zero_cp(2, 2, 3), m, 4), "");
  EXPECT_EQ(check(zero_cp(2, 2, 2), m, 4), "");
  EXPECT_EQ(check(zero_cp(4, 2, 3, 2), m, 8), "");
  EXPECT_EQ(check(zero_cp(1, 2, 3), m, 2), "");  // sharded over the CP pair alone
  EXPECT_NE(check(zero_cp(1, 1, 3), m, 1).find("zero3 needs dp > 1 (or cp > 1)"), std::string::npos);
  EXPECT_EQ(strategy_label(zero_cp(2, 2, 3)), "fsdp cp2");
  EXPECT_EQ(strategy_label(zero_cp(1, 4, 3)), "fsdp cp4");
  EXPECT_EQ(strategy_label(zero_cp(1, 4, 1)), "zero1 cp4");
  EXPECT_EQ(strategy_label(zero_cp(4, 2, 3, 2)), "hsdp2 cp2");
  EXPECT_EQ(strategy_label(zero_cp(1, 4, 0)), "cp4");
}

TEST(PlanZeroContextParallel, ShardGroupSpansTheCpRanks) {
  // tp2 cp2 dp4 shard 2: rank = tp + 2 * (cp + 2 * dp).
  ParallelSplit s = zero_cp(4, 2, 3, 2);
  s.tp = 2;
  const RankLayout L(s);
  EXPECT_EQ(L.group_size(Group::dp_shard), 4);
  EXPECT_EQ(L.group_size(Group::dp_replica), 2);
  EXPECT_EQ(L.members(Group::dp_shard, 0), (std::vector<int>{0, 2, 4, 6}));     // dp 0-1, cp 0-1
  EXPECT_EQ(L.members(Group::dp_shard, 9), (std::vector<int>{9, 11, 13, 15}));  // dp 2-3
  EXPECT_EQ(L.members(Group::dp_replica, 2), (std::vector<int>{2, 10}));        // cp 1 dp 0, dp 2
  for (Group g : {Group::dp_shard, Group::dp_replica})
    for (int r = 0; r < L.world_size(); ++r) {
      const auto m = L.members(g, r);
      EXPECT_EQ(m[L.index_in_group(g, r)], r);
      for (int peer : m) EXPECT_EQ(L.group_color(g, peer), L.group_color(g, r));
      EXPECT_LT(L.group_color(g, r), L.group_count(g));
    }
  // Without a shard group dp_shard is dp_cp, member for member.
  ParallelSplit plain = zero_cp(4, 2, 3);
  plain.tp = 2;
  const RankLayout P(plain);
  for (int r = 0; r < P.world_size(); ++r) {
    EXPECT_EQ(P.members(Group::dp_shard, r), P.members(Group::dp_cp, r));
    EXPECT_EQ(P.index_in_group(Group::dp_shard, r), P.index_in_group(Group::dp_cp, r));
  }
}

TEST(PlanZeroContextParallel, StepProgramShardsOverDpTimesCp) {
  const ModelConfig m = load_model("tiny-dense");
  const int units = m.layers + 2;
  const ParallelSplit fsdp = zero_cp(2, 2, 3);
  const StepProgram p = build_step_program(m, fsdp, 0);
  EXPECT_EQ(count(p, OpKind::param_all_gather, Phase::forward, Group::dp_cp), units * fsdp.microbatches);
  EXPECT_EQ(count(p, OpKind::param_all_gather, Phase::backward, Group::dp_cp), units * fsdp.microbatches);
  EXPECT_EQ(count(p, OpKind::grad_reduce_scatter, Phase::optimizer, Group::dp_cp), units * fsdp.microbatches);
  EXPECT_EQ(count(p, OpKind::grad_all_reduce, Phase::optimizer, Group::dp_cp), 0);
  // HSDP with CP: gathers and reduce-scatters inside the g x cp shard group, then the
  // replica all-reduce of a 1/(g*cp) shard.
  const ParallelSplit hsdp = zero_cp(4, 2, 3, 2);
  const StepProgram h = build_step_program(m, hsdp, 0);
  EXPECT_EQ(count(h, OpKind::param_all_gather, Phase::forward, Group::dp_shard), units * hsdp.microbatches);
  EXPECT_EQ(count(h, OpKind::grad_all_reduce, Phase::optimizer, Group::dp_replica), units);
  double rs = 0, ar = 0;
  for (const Op& op : h.ops) {
    if (op.kind == OpKind::grad_reduce_scatter && op.group == Group::dp_shard) rs += op.bytes;
    if (op.kind == OpKind::grad_all_reduce && op.group == Group::dp_replica) ar += op.bytes;
  }
  // The reduce-scatter runs after each of the 2 microbatches' backwards, the replica
  // all-reduce once, on 1/(2*2) of a unit.
  EXPECT_DOUBLE_EQ(ar * 4 * hsdp.microbatches, rs);
}

TEST(PlanZeroContextParallel, MemoryShardsOverDpTimesCp) {
  const ModelConfig m = load_model("llama3-8b");
  const Precision p = bf16_mixed_adam();
  const double P = memory_per_rank(m, zero_cp(64, 1, 0), p, 0).params;
  auto state = [&](int dp, int cp, int zero, int shard = 0) {
    return memory_per_rank(m, zero_cp(dp, cp, zero, shard), p, 0).model_state();
  };
  EXPECT_NEAR(state(8, 8, 3), 16 / 64.0 * P, 1);
  EXPECT_NEAR(state(8, 8, 2), (2 + 14 / 64.0) * P, 1);
  EXPECT_NEAR(state(8, 4, 3, 2), 16 / 8.0 * P, 1);  // HSDP: shard group 2 x cp 4
  EXPECT_EQ(state(8, 8, 3), state(64, 1, 3));
}

TEST(PlanZeroContextParallel, SearchOffersShardedSplitsWithCp) {
  const ModelConfig m = load_model("tiny-dense");
  SplitSearch q;
  q.microbatch_counts = {2};
  q.schedules = {ScheduleKind::one_f_one_b};
  q.zero_stages = {1, 2, 3};
  q.shard_domains = {8};
  q.sharded_with_pp = false;
  q.try_sequence_parallel = false;
  q.max_cp = 0;
  bool fsdp_cp = false, zero2_cp = false, hsdp_cp = false;
  for (const auto& s : enumerate_splits(m, 16, q)) {
    EXPECT_EQ(check(s, m, 16), "");
    if (s.cp < 2) continue;
    fsdp_cp = fsdp_cp || (s.zero == 3 && s.shard_group == 0);
    zero2_cp = zero2_cp || s.zero == 2;
    // shard domain 8 at tp 1, cp 2, dp 8: the largest g with g*cp <= 8 is 4.
    if (s.zero == 3 && s.shard_group > 0 && s.tp == 1 && s.cp == 2) {
      EXPECT_EQ(s.shard_group, 4);
      hsdp_cp = true;
    }
  }
  EXPECT_TRUE(fsdp_cp);
  EXPECT_TRUE(zero2_cp);
  EXPECT_TRUE(hsdp_cp);
}

}  // namespace
}  // namespace ibt::models
