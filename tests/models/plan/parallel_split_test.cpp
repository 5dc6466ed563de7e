// Split validation names the failed constraint; enumeration returns exactly the valid
// splits (checked against brute force) and is fast at 16,384 ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <tuple>

#include "core/errors.hpp"
#include "models/plan/model_file.hpp"
#include "models/plan/parallel_split.hpp"

namespace ibt::models {
namespace {

std::string failure(ParallelSplit s, const ModelConfig& m, int world) {
  try {
    validate(s, m, world);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

void expect_failure(const ParallelSplit& s, const ModelConfig& m, int world, const std::string& part) {
  const std::string msg = failure(s, m, world);
  EXPECT_NE(msg.find(part), std::string::npos) << "expected '" << part << "' in: '" << msg << "'";
}

TEST(PlanParallelSplit, AcceptsValidSplits) {
  const ModelConfig dense = load_model("tiny-dense");
  const ModelConfig moe = load_model("tiny-moe");
  EXPECT_EQ(failure({2, 2, 2, 1, 1, 4, 1, ScheduleKind::one_f_one_b}, dense, 8), "");
  EXPECT_EQ(failure({1, 1, 2, 1, 2, 4, 1, ScheduleKind::interleaved}, dense, 2), "");
  EXPECT_EQ(failure({3, 1, 1, 1, 1, 1, 1, ScheduleKind::one_f_one_b}, dense, 3), "");
  EXPECT_EQ(failure({4, 1, 1, 4, 1, 1, 1, ScheduleKind::one_f_one_b}, moe, 4), "");
  ParallelSplit sp{2, 2, 1, 2, 1, 1, 1, ScheduleKind::one_f_one_b, true, true, Recompute::full};
  EXPECT_EQ(failure(sp, moe, 4), "");
}

TEST(PlanParallelSplit, NamesTheFailedConstraint) {
  const ModelConfig dense = load_model("tiny-dense");  // 4 layers, 4 heads, 2 kv heads
  const ModelConfig moe = load_model("tiny-moe");      // 8 experts
  using S = ScheduleKind;
  expect_failure({2, 2, 2, 1, 1, 4, 1, S::one_f_one_b}, dense, 4, "world size");
  // KV heads: split over TP (kv_heads % tp == 0) or replicated (tp % kv_heads == 0).
  EXPECT_EQ(check({1, 4, 1, 1, 1, 1, 1, S::one_f_one_b}, dense, 4), "");  // 2 KV heads on 4 ranks: 2 copies each
  ModelConfig odd = dense;
  odd.heads = 12;
  odd.kv_heads = 3;
  expect_failure({1, 2, 1, 1, 1, 1, 1, S::one_f_one_b}, odd, 2, "kv_heads (3) not divisible by tp (2)");
  expect_failure({1, 4, 1, 1, 1, 1, 1, S::one_f_one_b}, odd, 4, "tp (4) not a multiple of kv_heads (3)");
  expect_failure({1, 3, 1, 1, 1, 1, 1, S::one_f_one_b}, dense, 3, "heads (4) not divisible by tp (3)");
  expect_failure({1, 1, 8, 1, 1, 8, 1, S::one_f_one_b}, dense, 8, "exceeds layers");
  expect_failure({1, 1, 4, 1, 2, 4, 1, S::interleaved}, dense, 4, "exceeds layers");
  expect_failure({1, 1, 2, 1, 1, 1, 1, S::one_f_one_b}, dense, 2, "microbatches (1) >= pp (2)");
  expect_failure({1, 1, 2, 1, 2, 3, 1, S::interleaved}, dense, 2, "microbatches (3) not divisible by pp (2)");
  expect_failure({1, 1, 2, 1, 1, 2, 1, S::interleaved}, dense, 2, "vpp >= 2");
  expect_failure({1, 1, 2, 1, 2, 2, 1, S::one_f_one_b}, dense, 2, "needs the interleaved schedule");
  expect_failure({2, 1, 1, 2, 1, 1, 1, S::one_f_one_b}, dense, 2, "needs an MoE model");
  expect_failure({2, 1, 1, 4, 1, 1, 1, S::one_f_one_b}, moe, 2, "dp (2) not divisible by ep (4)");
  expect_failure({6, 1, 1, 3, 1, 1, 1, S::one_f_one_b}, moe, 6, "num_experts (8) not divisible by ep (3)");
  expect_failure({2, 1, 1, 1, 1, 1, 1, S::one_f_one_b, true}, dense, 2, "sequence_parallel needs tp > 1");
  expect_failure({1, 2, 1, 1, 1, 1, 1, S::one_f_one_b, false, true}, dense, 2, "zero1 needs dp > 1");
  expect_failure({1, 1, 1, 1, 1, 0, 1, S::one_f_one_b}, dense, 1, "microbatches must be >= 1");
  // The message starts with the split and the model.
  const std::string msg = failure({1, 3, 1, 1, 1, 1, 1, S::one_f_one_b}, dense, 3);
  EXPECT_EQ(msg.rfind("split dp1 tp3 pp1", 0), 0u) << msg;
  EXPECT_NE(msg.find("tiny-dense"), std::string::npos);
}

TEST(PlanParallelSplit, EnumerationEqualsBruteForce) {
  for (const char* name : {"tiny-dense", "tiny-moe"})
    for (int world : {1, 2, 3, 4, 6, 8}) {
      const ModelConfig m = load_model(name);
      SplitSearch q;
      q.zero_stages = {1};
      q.recomputes = {Recompute::none, Recompute::full};
      q.interleave_chunks = {2, 4};
      const auto found = enumerate_splits(m, world, q);
      std::set<std::string> got;
      for (const auto& s : found) {
        EXPECT_EQ(check(s, m, world), "") << describe(s);
        EXPECT_TRUE(got.insert(describe(s)).second) << "duplicate " << describe(s);
      }
      // Brute force over every parameter combination the search could express.
      std::set<std::string> want;
      for (int dp = 1; dp <= world; ++dp)
        for (int tp = 1; tp <= world; ++tp)
          for (int pp = 1; pp <= world; ++pp)
            for (int ep = 1; ep <= world; ++ep)
              for (int v : {1, 2, 4})
                for (int mb : q.microbatch_counts)
                  for (auto k : q.schedules)
                    for (bool sp : {false, true})
                      for (bool z : {false, true})
                        for (auto rc : q.recomputes) {
                          ParallelSplit s{dp, tp, pp, ep, v, mb, 1, k, sp, z, rc};
                          if (!check(s, m, world).empty()) continue;
                          if (pp == 1 && k != ScheduleKind::one_f_one_b) continue;  // canonical form
                          want.insert(describe(s));
                        }
      EXPECT_EQ(got, want) << name << " world " << world;
    }
}

TEST(PlanParallelSplit, GlobalBatchFixesMicrobatches) {
  const ModelConfig m = load_model("tiny-dense");
  SplitSearch q;
  q.global_batch = 16;
  q.micro_batch_sizes = {1, 2};
  for (const auto& s : enumerate_splits(m, 8, q)) EXPECT_EQ(s.global_batch(), 16) << describe(s);
  q.max_pp = 1;
  for (const auto& s : enumerate_splits(m, 8, q)) EXPECT_EQ(s.pp, 1);
  q.max_pp = 0;
  q.min_pp = 2;
  q.max_tp = 1;
  for (const auto& s : enumerate_splits(m, 8, q)) {
    EXPECT_GE(s.pp, 2);
    EXPECT_EQ(s.tp, 1);
  }
}

TEST(PlanParallelSplit, FastAtSixteenThousandRanks) {
  const ModelConfig m = load_model("kimi-k2");
  SplitSearch q;
  q.global_batch = 4096;
  q.micro_batch_sizes = {1, 2, 4};
  q.recomputes = {Recompute::none, Recompute::selective, Recompute::full};
  q.zero_stages = {1};
  q.interleave_chunks = {2, 3, 4};
  const auto t0 = std::chrono::steady_clock::now();
  const auto splits = enumerate_splits(m, 16384, q);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GT(splits.size(), 100u);
  EXPECT_LT(ms, 1000.0) << splits.size() << " splits took " << ms << " ms";
  for (const auto& s : splits) ASSERT_EQ(s.world_size(), 16384);
  RecordProperty("kimi_k2_16384_splits", static_cast<int>(splits.size()));
  std::printf("kimi-k2 on 16,384 ranks: %zu splits in %.1f ms\n", splits.size(), ms);
}

TEST(PlanParallelSplit, ParsesNames) {
  EXPECT_EQ(parse_schedule("1f1b"), ScheduleKind::one_f_one_b);
  EXPECT_EQ(parse_schedule("interleaved"), ScheduleKind::interleaved);
  EXPECT_EQ(parse_recompute("selective"), Recompute::selective);
  EXPECT_THROW(parse_schedule("gpipe2"), UsageError);
  EXPECT_THROW(parse_recompute("half"), UsageError);
}

// The compact label leaves out what goes without saying and keeps every degree that is not 1.
TEST(PlanParallelSplit, CompactLabel) {
  ParallelSplit s;
  s.dp = 16;
  s.tp = 2;
  s.pp = 2;
  s.microbatches = 128;
  s.sequence_parallel = true;
  EXPECT_EQ(describe(s), "dp16 tp2 pp2 ep1 vpp1 m128 b1 1f1b sp recompute=none");
  EXPECT_EQ(compact_label(s), "dp16 tp2 pp2 m128 sp");
  s.vpp = 4;
  s.schedule = ScheduleKind::interleaved;
  EXPECT_EQ(compact_label(s), "dp16 tp2 pp2 vpp4 m128 sp");
  s.vpp = 1;
  s.schedule = ScheduleKind::zb_h1;
  s.cp = 2;
  s.cp_comm = CpComm::ring;
  s.ep = 8;
  s.micro_batch_size = 2;
  s.zero = 3;
  s.shard_group = 8;
  s.recompute = Recompute::selective;
  EXPECT_EQ(compact_label(s), "dp16 tp2 pp2 cp2 ring ep8 m128 b2 zb-h1 sp zero3 shard8 recompute=selective");
}

}  // namespace
}  // namespace ibt::models
