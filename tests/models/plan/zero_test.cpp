// ZeRO stages and hybrid sharding in the plan: the split's rules and spellings, the
// dp_shard/dp_replica groups, the step program's FSDP gathers and reduce-scatters,
// the search, and the memory plan per stage.
#include <gtest/gtest.h>

#include <algorithm>

#include "models/plan/accounting.hpp"
#include "models/plan/model_file.hpp"
#include "models/plan/rank_groups.hpp"
#include "models/plan/step_program.hpp"

namespace ibt::models {
namespace {

ParallelSplit dp_split(int dp, int zero, int shard_group = 0, int microbatches = 2) {
  ParallelSplit s;
  s.dp = dp;
  s.microbatches = microbatches;
  s.zero = zero;
  s.shard_group = shard_group;
  return s;
}

TEST(PlanZero, ValidateNamesEachRule) {
  const ModelConfig dense = load_model("tiny-dense");
  const ModelConfig moe = load_model("tiny-moe");
  EXPECT_EQ(check(dp_split(4, 3), dense, 4), "");
  EXPECT_EQ(check(dp_split(4, 3, 2), dense, 4), "");
  EXPECT_EQ(check(dp_split(4, 1, 2), dense, 4), "");
  EXPECT_NE(check(dp_split(1, 2), dense, 1).find("zero2 needs dp > 1"), std::string::npos);
  EXPECT_NE(check(dp_split(4, 4), dense, 4).find("zero stage must be 0, 1, 2 or 3 (got 4)"), std::string::npos);
  EXPECT_NE(check(dp_split(4, 0, 2), dense, 4).find("needs a ZeRO stage"), std::string::npos);
  EXPECT_NE(check(dp_split(4, 3, 4), dense, 4).find("must be > 1 and < dp (4)"), std::string::npos);
  EXPECT_NE(check(dp_split(6, 3, 4), dense, 6).find("dp (6) not divisible by shard_group (4)"), std::string::npos);
  ParallelSplit ep = dp_split(4, 3, 2);
  ep.ep = 2;
  EXPECT_EQ(check(ep, moe, 4), "");  // HSDP x EP: the shard group holds whole EP groups
  ep.ep = 4;
  EXPECT_NE(check(ep, moe, 4).find("shard_group (2) not divisible by ep (4)"), std::string::npos);
}

TEST(PlanZero, SpellingsAndStrategyLabels) {
  ParallelSplit s = dp_split(8, 3, 4);
  s.tp = 4;
  s.sequence_parallel = true;
  EXPECT_EQ(describe(s), "dp8 tp4 pp1 ep1 vpp1 m2 b1 1f1b sp zero3 shard4 recompute=none");
  EXPECT_EQ(strategy_label(s), "hsdp4 tp4 sp");
  s.shard_group = 0;
  EXPECT_EQ(strategy_label(s), "fsdp tp4 sp");
  s.zero = 2;
  EXPECT_EQ(strategy_label(s), "zero2 tp4 sp");
  s.zero = 1;
  s.pp = 16;
  s.vpp = 2;
  EXPECT_EQ(strategy_label(s), "zero1 tp4 sp pp16 v2");
  s.zero = 0;
  EXPECT_EQ(strategy_label(s), "ddp tp4 sp pp16 v2");
  s.dp = 1;
  EXPECT_EQ(strategy_label(s), "tp4 sp pp16 v2");
  EXPECT_EQ(strategy_label(ParallelSplit{}), "single");
}

TEST(PlanZero, ShardAndReplicaGroups) {
  // tp2 dp8 shard 4: shard groups are 4 consecutive dp ranks, replicas stride 4.
  ParallelSplit s = dp_split(8, 3, 4);
  s.tp = 2;
  const RankLayout L(s);
  EXPECT_EQ(L.group_size(Group::dp_shard), 4);
  EXPECT_EQ(L.group_size(Group::dp_replica), 2);
  // rank = tp + 2 * dp
  EXPECT_EQ(L.members(Group::dp_shard, 0), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(L.members(Group::dp_shard, 9), (std::vector<int>{9, 11, 13, 15}));
  EXPECT_EQ(L.members(Group::dp_replica, 2), (std::vector<int>{2, 10}));
  // Every rank is in exactly one group of each kind, colours dense and consistent.
  for (Group g : {Group::dp_shard, Group::dp_replica})
    for (int r = 0; r < L.world_size(); ++r) {
      const auto m = L.members(g, r);
      EXPECT_EQ(m[L.index_in_group(g, r)], r);
      for (int peer : m) EXPECT_EQ(L.group_color(g, peer), L.group_color(g, r));
      EXPECT_LT(L.group_color(g, r), L.group_count(g));
    }
  // Without a shard group: dp_shard is dp, dp_replica a single rank.
  const RankLayout plain(dp_split(8, 3));
  EXPECT_EQ(plain.members(Group::dp_shard, 3), plain.members(Group::dp, 3));
  EXPECT_EQ(plain.group_size(Group::dp_replica), 1);
}

int count(const StepProgram& p, OpKind k, Phase ph, Group g) {
  return static_cast<int>(std::count_if(p.ops.begin(), p.ops.end(),
                                        [&](const Op& op) { return op.kind == k && op.phase == ph && op.group == g; }));
}

TEST(PlanZero, FsdpGathersEveryUnitBeforeForwardAndBackward) {
  const ModelConfig m = load_model("tiny-dense");
  const ParallelSplit s = dp_split(4, 3, 0, 3);
  const StepProgram p = build_step_program(m, s, 0);
  const int units = m.layers + 2;  // embedding, layers, head
  EXPECT_EQ(count(p, OpKind::param_all_gather, Phase::forward, Group::dp), units * s.microbatches);
  EXPECT_EQ(count(p, OpKind::param_all_gather, Phase::backward, Group::dp), units * s.microbatches);
  // Reduce-scatter after every backward of every unit; no gather after the optimizer.
  EXPECT_EQ(count(p, OpKind::grad_reduce_scatter, Phase::optimizer, Group::dp), units * s.microbatches);
  EXPECT_EQ(count(p, OpKind::param_all_gather, Phase::optimizer, Group::dp), 0);
  EXPECT_EQ(count(p, OpKind::grad_all_reduce, Phase::optimizer, Group::dp), 0);
  // Gathers bytes: a whole layer's weights (all_gather counts the gathered output).
  const ParamCounts c = count_parameters(m);
  for (const Op& op : p.ops)
    if (op.kind == OpKind::param_all_gather && op.layer >= 0 && op.layer < m.layers) {
      EXPECT_DOUBLE_EQ(op.bytes, 4.0 * (c.attention_per_layer + c.norms_per_layer + c.dense_mlp_per_layer));
      EXPECT_EQ(op.stream, Stream::param_comm);
    }
  // Prefetch: the first gather of the step waits for nothing (it is exposed); every
  // later one waits for the end of the unit two before it, a compute op, and the
  // unit's first compute op waits for its gather.
  std::vector<int> gathers;
  for (int i = 0; i < static_cast<int>(p.ops.size()); ++i)
    if (p.ops[i].kind == OpKind::param_all_gather) gathers.push_back(i);
  EXPECT_EQ(p.ops[gathers[0]].waits[0], -1);
  for (size_t k = 2; k < gathers.size(); ++k) {
    const int w = p.ops[gathers[k]].waits[0];
    ASSERT_GE(w, 0);
    EXPECT_EQ(p.ops[w].stream, Stream::compute);
    EXPECT_LT(w, gathers[k - 1]) << "gather " << k << " waits for a unit before the previous one";
  }
  for (int g : gathers) {
    int first_compute = g + 1;
    while (p.ops[first_compute].stream != Stream::compute) ++first_compute;
    EXPECT_EQ(p.ops[first_compute].waits[1], g);
  }
}

TEST(PlanZero, HsdpReducesInsideTheShardGroupThenAcrossReplicas) {
  const ModelConfig m = load_model("tiny-dense");
  const ParallelSplit s = dp_split(8, 3, 4, 1);
  const StepProgram p = build_step_program(m, s, 0);
  const int units = m.layers + 2;
  EXPECT_EQ(count(p, OpKind::param_all_gather, Phase::forward, Group::dp_shard), units);
  EXPECT_EQ(count(p, OpKind::grad_reduce_scatter, Phase::optimizer, Group::dp_shard), units);
  EXPECT_EQ(count(p, OpKind::grad_all_reduce, Phase::optimizer, Group::dp_replica), units);
  // The replica all-reduce moves the 1/4 shard of what the reduce-scatter took in.
  double rs = 0, ar = 0;
  for (const Op& op : p.ops) {
    if (op.kind == OpKind::grad_reduce_scatter) rs += op.bytes;
    if (op.kind == OpKind::grad_all_reduce && op.group == Group::dp_replica) ar += op.bytes;
  }
  EXPECT_DOUBLE_EQ(ar * 4, rs);
}

TEST(PlanZero, Zero2ReduceScattersEveryBackwardAndGathersAfterTheUpdate) {
  const ModelConfig m = load_model("tiny-dense");
  const ParallelSplit s = dp_split(2, 2, 0, 3);
  const StepProgram p = build_step_program(m, s, 0);
  const int units = m.layers + 2;
  EXPECT_EQ(count(p, OpKind::grad_reduce_scatter, Phase::optimizer, Group::dp), units * s.microbatches);
  EXPECT_EQ(count(p, OpKind::param_all_gather, Phase::optimizer, Group::dp), units);
  EXPECT_EQ(count(p, OpKind::param_all_gather, Phase::forward, Group::dp), 0);
  // ZeRO-1: one reduce-scatter per unit per step.
  const StepProgram z1 = build_step_program(m, dp_split(2, 1, 0, 3), 0);
  EXPECT_EQ(count(z1, OpKind::grad_reduce_scatter, Phase::optimizer, Group::dp), units);
}

TEST(PlanZero, MemoryPerStageFollowsTheZeroFormulas) {
  // bf16 mixed precision: 16 bytes per parameter, 1: 4 + 12/d, 2: 2 + 14/d, 3: 16/d.
  const ModelConfig m = load_model("llama3-8b");
  const Precision p = bf16_mixed_adam();
  const double P = memory_per_rank(m, dp_split(64, 0), p, 0).params;
  const double d = 64;
  auto state = [&](int zero, int shard = 0) {
    return memory_per_rank(m, dp_split(64, zero, shard), p, 0).model_state();
  };
  EXPECT_NEAR(state(0), 16 * P, 1);
  EXPECT_NEAR(state(1), (4 + 12 / d) * P, 1);
  EXPECT_NEAR(state(2), (2 + 14 / d) * P, 1);
  EXPECT_NEAR(state(3), 16 / d * P, 1);
  EXPECT_NEAR(state(3, 8), 16 / 8.0 * P, 1);  // HSDP: sharded over the group of 8 only
  EXPECT_EQ(memory_per_rank(m, dp_split(64, 1), p, 0).buffers, 0.0);
  // ZeRO-2 holds one unit's gradients, ZeRO-3 at least two units' weights as well.
  const ParamCounts c = count_parameters(m);
  const double layer = c.attention_per_layer + c.norms_per_layer + c.dense_mlp_per_layer;
  const double largest = std::max({layer, c.embedding, c.lm_head + c.final_norm});
  EXPECT_DOUBLE_EQ(memory_per_rank(m, dp_split(64, 2), p, 0).buffers, 2 * largest);
  EXPECT_GE(memory_per_rank(m, dp_split(64, 3), p, 0).buffers, 2 * (2 * layer) + 2 * layer);
}

TEST(PlanZero, SearchTriesStagesAndShardGroupsWithoutPpOnly) {
  const ModelConfig m = load_model("tiny-dense");
  SplitSearch q;
  q.microbatch_counts = {2};
  q.schedules = {ScheduleKind::one_f_one_b};
  q.zero_stages = {1, 2, 3};
  q.shard_domains = {4};
  q.sharded_with_pp = false;
  q.try_sequence_parallel = false;
  const auto splits = enumerate_splits(m, 8, q);
  bool fsdp = false, hsdp4 = false;
  for (const auto& s : splits) {
    if (s.zero >= 2) {
      EXPECT_EQ(s.pp, 1) << describe(s);
    }
    fsdp = fsdp || (s.zero == 3 && s.shard_group == 0 && s.dp == 8);
    hsdp4 = hsdp4 || (s.zero == 3 && s.shard_group == 4 && s.dp == 8 && s.tp == 1);
    EXPECT_EQ(check(s, m, 8), "");
  }
  EXPECT_TRUE(fsdp);
  EXPECT_TRUE(hsdp4);
  // Deterministic: the same list twice.
  EXPECT_EQ(enumerate_splits(m, 8, q), splits);
}

}  // namespace
}  // namespace ibt::models
