// Context parallelism in the plan: the split's rules, the rank groups (CP next to TP,
// gradients over dp x cp), the step program's CP ops for both variants (all_gather and
// ring), its FLOPs identity, and the memory plan.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/errors.hpp"
#include "models/plan/accounting.hpp"
#include "models/plan/model_file.hpp"
#include "models/plan/parallel_split.hpp"
#include "models/plan/rank_groups.hpp"
#include "models/plan/step_program.hpp"

namespace ibt::models {
namespace {

ParallelSplit cp_split(int cp, int dp = 1, int tp = 1, int pp = 1, int microbatches = 1) {
  ParallelSplit s;
  s.cp = cp;
  s.dp = dp;
  s.tp = tp;
  s.pp = pp;
  s.microbatches = microbatches;
  return s;
}

TEST(PlanContextParallel, ValidateNamesEachRule) {
  const ModelConfig m = load_model("tiny-dense");  // seq_len 32
  EXPECT_EQ(check(cp_split(2), m, 2), "");
  EXPECT_EQ(check(cp_split(16), m, 16), "");
  EXPECT_NE(check(cp_split(3), m, 3).find("seq_len (32) not divisible by 2*cp (6)"), std::string::npos);
  EXPECT_NE(check(cp_split(32), m, 32).find("seq_len (32) not divisible by 2*cp (64)"), std::string::npos);
  EXPECT_NE(check(cp_split(2), m, 4).find("dp*tp*pp*cp (2) != world size (4)"), std::string::npos);
  EXPECT_NE(check(cp_split(0), m, 0).find("cp must be >= 1"), std::string::npos);
  ParallelSplit ring = cp_split(1);
  ring.cp_comm = CpComm::ring;
  EXPECT_EQ(check(ring, m, 1), "cp_comm ring needs cp > 1");
  // With SP each TP rank holds 1/tp of the CP rank's tokens: cp*tp must divide seq_len.
  ModelConfig mha = m;
  mha.kv_heads = 4;
  ParallelSplit sp = cp_split(8, 1, 4);
  sp.sequence_parallel = true;
  EXPECT_EQ(check(sp, mha, 32), "");
  sp.cp = 16;  // 2*cp = 32 divides 32, cp*tp = 64 does not
  EXPECT_EQ(check(sp, mha, 64), "seq_len (32) not divisible by cp*tp (64) (context and sequence parallel)");
  // ZeRO-1 over the CP replicas alone is meaningful (dp 1, cp 2).
  ParallelSplit z = cp_split(2);
  z.zero = 1;
  EXPECT_EQ(check(z, m, 2), "");
  EXPECT_THROW(validate(cp_split(3), m, 3), UsageError);
}

TEST(PlanContextParallel, DescribeAndParseCpComm) {
  ParallelSplit s = cp_split(4, 2);
  EXPECT_EQ(describe(s), "dp2 tp1 pp1 cp4 ep1 vpp1 m1 b1 1f1b recompute=none");
  s.cp_comm = CpComm::ring;
  EXPECT_EQ(describe(s), "dp2 tp1 pp1 cp4 ring ep1 vpp1 m1 b1 1f1b recompute=none");
  EXPECT_EQ(describe(cp_split(1, 2)), "dp2 tp1 pp1 ep1 vpp1 m1 b1 1f1b recompute=none");  // unchanged at cp 1
  EXPECT_EQ(parse_cp_comm("ring"), CpComm::ring);
  EXPECT_EQ(parse_cp_comm("all_gather"), CpComm::all_gather);
  EXPECT_THROW(parse_cp_comm("allgather"), UsageError);
}

TEST(PlanContextParallel, EnumerateSearchesCpDegreesTheSequenceAllows) {
  const ModelConfig m = load_model("tiny-dense");  // seq_len 32: cp <= 16
  SplitSearch q;
  q.microbatch_counts = {1};
  q.schedules = {ScheduleKind::one_f_one_b};
  q.try_sequence_parallel = false;
  q.max_pp = 1;
  q.max_tp = 1;
  q.max_cp = 0;  // no limit
  std::map<int, std::set<CpComm>> found;
  for (const ParallelSplit& s : enumerate_splits(m, 64, q)) {
    EXPECT_EQ(check(s, m, 64), "");
    found[s.cp].insert(s.cp_comm);
  }
  EXPECT_EQ(found.size(), 5u);  // 1, 2, 4, 8, 16 (not 32, 64: 2*cp must divide 32)
  EXPECT_EQ(found[1], std::set<CpComm>{CpComm::all_gather});
  EXPECT_EQ(found[16], (std::set<CpComm>{CpComm::all_gather, CpComm::ring}));
  q.max_cp = 4;
  for (const ParallelSplit& s : enumerate_splits(m, 64, q)) EXPECT_LE(s.cp, 4);
  q.max_cp = 1;  // the default: no CP
  for (const ParallelSplit& s : enumerate_splits(m, 64, q)) EXPECT_EQ(s.cp, 1);
}

TEST(PlanContextParallel, RankOrderPutsCpNextToTp) {
  const RankLayout L(2, 2, 2, 1, 2);  // tp2 dp2 pp2 cp2: 16 ranks
  for (int r = 0; r < 16; ++r) {
    const RankCoord c = L.coord(r);
    EXPECT_EQ(r, c.tp + 2 * (c.cp + 2 * (c.dp + 2 * c.pp)));
    EXPECT_EQ(L.rank_of(c), r);
  }
  EXPECT_EQ(L.members(Group::cp, 0), (std::vector<int>{0, 2}));
  EXPECT_EQ(L.members(Group::dp, 0), (std::vector<int>{0, 4}));
  EXPECT_EQ(L.members(Group::dp_cp, 0), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(L.members(Group::pp, 1), (std::vector<int>{1, 9}));
}

TEST(PlanContextParallel, GroupsPartitionTheWorld) {
  const Group kinds[] = {Group::tp,        Group::dp, Group::pp,    Group::ep,
                         Group::expert_dp, Group::cp, Group::dp_cp, Group::expert_dp_cp};
  for (int cp : {1, 2, 3})
    for (int ep : {1, 2}) {
      const RankLayout L(2, 4, 2, ep, cp);
      const int n = L.world_size();
      for (Group g : kinds) {
        std::vector<int> seen(n, 0);
        std::set<int> colors;
        for (int r = 0; r < n; ++r) {
          const auto members = L.members(g, r);
          ASSERT_EQ(static_cast<int>(members.size()), L.group_size(g));
          EXPECT_EQ(members[L.index_in_group(g, r)], r) << to_string(g);
          for (int q : members) EXPECT_EQ(L.group_color(g, q), L.group_color(g, r)) << to_string(g);
          if (L.index_in_group(g, r) == 0)
            for (int q : members) ++seen[q];
          colors.insert(L.group_color(g, r));
        }
        for (int r = 0; r < n; ++r) EXPECT_EQ(seen[r], 1) << to_string(g) << " rank " << r;
        EXPECT_EQ(static_cast<int>(colors.size()), L.group_count(g)) << to_string(g);
        EXPECT_EQ(*colors.rbegin(), L.group_count(g) - 1) << to_string(g);
      }
      // expert_dp_cp = the ranks with the same tp, pp and ep coordinates.
      for (int r = 0; r < n; ++r)
        for (int q : L.members(Group::expert_dp_cp, r)) {
          EXPECT_EQ(L.coord(q).tp, L.coord(r).tp);
          EXPECT_EQ(L.coord(q).pp, L.coord(r).pp);
          EXPECT_EQ(L.coord(q).ep, L.coord(r).ep);
        }
    }
}

// One model replica's FLOPs over (forward, backward): TP-sharded ops x tp, CP ranks
// summed (each does its 1/cp of the tokens).
double replica_flops(const ModelConfig& m, const ParallelSplit& s) {
  RankLayout layout(s);
  double total = 0;
  for (int stage = 0; stage < s.pp; ++stage)
    for (int c = 0; c < s.cp; ++c) {
      RankCoord rc;
      rc.pp = stage;
      rc.cp = c;
      const StepProgram p = build_step_program(m, s, layout.rank_of(rc));
      for (const Op& op : p.ops)
        if (op.phase == Phase::forward || op.phase == Phase::backward)
          total += op.tp_sharded ? op.flops * s.tp : op.flops;
    }
  return total;
}

TEST(PlanContextParallel, FlopsMatchAccounting) {
  for (const char* name : {"tiny-dense", "tiny-moe", "llama3-8b", "deepseek-v3"}) {
    const ModelConfig m = load_model(name);
    for (CpComm cc : {CpComm::all_gather, CpComm::ring}) {
      ParallelSplit s = cp_split(4, 1, 2, 2, 2);
      s.cp_comm = cc;
      s.sequence_parallel = true;
      const double want = model_flops_per_step(m, s.microbatches * s.micro_batch_size);
      EXPECT_NEAR(replica_flops(m, s) / want, 1.0, 1e-12) << name << " " << describe(s);
    }
  }
}

std::map<OpKind, int> count_kinds(const StepProgram& p, Phase phase, int layer) {
  std::map<OpKind, int> n;
  for (const Op& op : p.ops)
    if (op.phase == phase && op.layer == layer && op.microbatch == 0) ++n[op.kind];
  return n;
}

TEST(PlanContextParallel, AllGatherVariantGathersKvOncePerLayer) {
  const ModelConfig m = load_model("tiny-dense");
  const ParallelSplit s = cp_split(4, 1, 2);
  const StepProgram p = build_step_program(m, s, 0);
  auto fwd = count_kinds(p, Phase::forward, 1), bwd = count_kinds(p, Phase::backward, 1);
  EXPECT_EQ(fwd[OpKind::cp_kv_all_gather], 1);
  EXPECT_EQ(fwd[OpKind::cp_kv_reduce_scatter], 0);
  EXPECT_EQ(bwd[OpKind::cp_kv_reduce_scatter], 1);
  EXPECT_EQ(bwd[OpKind::cp_kv_all_gather], 0);
  EXPECT_EQ(fwd[OpKind::attention_core], 1);
  for (const Op& op : p.ops)
    if (op.kind == OpKind::cp_kv_all_gather) {
      EXPECT_EQ(op.group, Group::cp);
      // K and V of the whole sequence: seq 32 x 2 KV heads x 16 x 2 / tp 2, fp32.
      EXPECT_DOUBLE_EQ(op.bytes, 32.0 * 2 * 2 * 16 / 2 * 4);
    }
  // Gradients are reduced over dp x cp.
  bool any = false;
  for (const Op& op : p.ops)
    if (op.kind == OpKind::grad_all_reduce && op.group != Group::tp) {
      EXPECT_EQ(op.group, Group::dp_cp);
      any = true;
    }
  EXPECT_TRUE(any);
}

TEST(PlanContextParallel, RingVariantPassesBlocksAroundTheRing) {
  const ModelConfig m = load_model("tiny-dense");
  ParallelSplit s = cp_split(4);
  s.cp_comm = CpComm::ring;
  const StepProgram p = build_step_program(m, s, 0);
  auto fwd = count_kinds(p, Phase::forward, 1), bwd = count_kinds(p, Phase::backward, 1);
  EXPECT_EQ(fwd[OpKind::cp_kv_pass], 3);      // cp - 1
  EXPECT_EQ(fwd[OpKind::attention_core], 4);  // cp parts
  EXPECT_EQ(bwd[OpKind::cp_kv_pass], 3);
  EXPECT_EQ(bwd[OpKind::cp_dkv_pass], 4);  // cp - 1 on the way, the last one home
  EXPECT_EQ(bwd[OpKind::attention_core], 4);
  // Part j > 0 of the forward waits for the K/V pass that brought its block.
  int part = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    if (op.kind != OpKind::attention_core || op.phase != Phase::forward || op.layer != 1 || op.microbatch != 0)
      continue;
    if (part++ == 0) continue;
    ASSERT_GE(op.waits[0], 0);
    EXPECT_EQ(p.ops[op.waits[0]].kind, OpKind::cp_kv_pass);
  }
  // Waits point backwards, to another stream.
  for (int i = 0; i < static_cast<int>(p.ops.size()); ++i)
    for (int w : p.ops[i].waits)
      if (w >= 0) {
        ASSERT_LT(w, i);
        EXPECT_NE(p.ops[w].stream, p.ops[i].stream);
      }
}

TEST(PlanContextParallel, ActivationsFallByCpPlusTheGatheredKv) {
  for (const char* name : {"tiny-dense", "llama3-70b"}) {
    const ModelConfig m = load_model(name);
    for (Precision pr : {fp32_adam(), bf16_mixed_adam()}) {
      const ParallelSplit one = cp_split(1, 1, 2);
      ParallelSplit ag = cp_split(4, 1, 2);
      ParallelSplit ring = ag;
      ring.cp_comm = CpComm::ring;
      const double base = activation_bytes_per_layer(m, one, pr);
      const double tokens = static_cast<double>(m.seq_len) / 4;
      const double kv_local = tokens * cp_kv_elements_per_token(m) / 2 * pr.activation_bytes;
      // The ring is blockwise: with an unfused core (fp32_adam) it keeps one fp32
      // log-sum-exp per (TP-local) head and query instead of the seq_len-long rows.
      const double blockwise =
          pr.stores_attention_scores ? tokens * m.heads / ring.tp * (m.seq_len * pr.activation_bytes - 4.0) : 0.0;
      EXPECT_NEAR(activation_bytes_per_layer(m, ring, pr), base / 4 - blockwise, 1e-9 * base) << name;
      EXPECT_NEAR(activation_bytes_per_layer(m, ag, pr), base / 4 + 4 * kv_local, 1e-9 * base) << name;
      // The ring's transient blocks at the backward's peak: the K/V in hand and
      // arriving, dK/dV of this step, in flight out and arriving.
      EXPECT_NEAR(cp_transient_bytes(m, ring, pr), 5 * kv_local, 1e-9 * kv_local);
      EXPECT_EQ(cp_transient_bytes(m, ag, pr), 0.0);
    }
  }
}

// An explicit head_dim (heads x head_dim != hidden): parameters, FLOPs and the step
// program follow head_dim, not hidden / heads.
TEST(PlanModelShapes, ExplicitHeadDim) {
  ModelConfig m = load_model("tiny-dense");  // hidden 64, heads 4, kv_heads 2
  m.explicit_head_dim = 24;
  EXPECT_EQ(m.head_dim(), 24);
  const ParamCounts c = count_parameters(m);
  EXPECT_DOUBLE_EQ(c.attention_per_layer, 64.0 * (4 * 24 + 2 * 2 * 24) + 4 * 24 * 64.0);
  EXPECT_DOUBLE_EQ(attention_forward_flops_per_token(m), 2.0 * m.layers * m.seq_len * 4 * (24 + 24));
  ParallelSplit s = cp_split(2, 1, 2, 2, 2);
  const double want = model_flops_per_step(m, s.microbatches * s.micro_batch_size);
  EXPECT_NEAR(replica_flops(m, s) / want, 1.0, 1e-12);
}

TEST(PlanContextParallel, Zero1ShardsOverDpTimesCp) {
  const ModelConfig m = load_model("tiny-dense");
  ParallelSplit a = cp_split(1, 4), b = cp_split(2, 2);
  a.zero = b.zero = 1;
  const Precision pr = bf16_mixed_adam();
  EXPECT_DOUBLE_EQ(memory_per_rank(m, a, pr, 0).optimizer, memory_per_rank(m, b, pr, 0).optimizer);
}

}  // namespace
}  // namespace ibt::models
