// The PP-pair comparison's grouping and summary (topologies/calibration/pp_pairs.hpp) on
// hand-made rows, where each figure can be worked out by hand.
#include <gtest/gtest.h>

#include "topologies/calibration/pp_pairs.hpp"

namespace ibt::topo {
namespace {

VtrainRow row(int gpus, int gb, int tp, int dp, int pp, double ms, int hidden = 1024) {
  VtrainRow r;
  r.gpus = gpus;
  r.global_batch = gb;
  r.micro_batch = 1;
  r.hidden = hidden;
  r.heads = 16;
  r.layers = 24;
  r.seq = 1024;
  r.tp = tp;
  r.dp = dp;
  r.pp = pp;
  r.measured_ms = ms;
  return r;
}

TEST(PpPairs, GroupsNeedBothKindsAndKeepTheirOrder) {
  const std::vector<VtrainRow> rows{row(8, 32, 8, 1, 1, 100),      row(8, 32, 1, 1, 8, 90),  // a pair
                                    row(8, 32, 1, 8, 1, 80, 2048),  // another model, no PP row: no pair
                                    row(4, 16, 4, 1, 1, 50),       row(4, 16, 2, 1, 2, 60), row(8, 32, 2, 2, 2, 95)};
  const auto groups = pp_groups(rows);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].size(), 3u);  // the 8-GPU group gathers its later row too
  EXPECT_EQ(groups[1].size(), 2u);
  EXPECT_EQ(pp_groups(rows, 1).size(), 1u);
  EXPECT_EQ(group_label(groups[1].front()), "gpus 4 gb 16 h 1024 a 16 l 24 s 1024");
}

TEST(PpPairs, SummaryCountsAgreementConfusionTopOneRegretAndGainError) {
  std::vector<PpPair> pairs(5);
  // measured needed, said not needed; projected gain 20 points below the measured one.
  pairs[0].measured_needed = true;
  pairs[0].measured_gain = 0.30;
  pairs[0].projected_gain = 0.10;
  pairs[0].projected_needed = false;
  pairs[0].regret = 0.10;
  // agreed needed, best split found.
  pairs[1].measured_needed = pairs[1].projected_needed = true;
  pairs[1].measured_gain = pairs[1].projected_gain = 0.5;
  pairs[1].top1 = true;
  // agreed not needed, +10 points.
  pairs[2].measured_gain = -0.2;
  pairs[2].projected_gain = -0.1;
  pairs[2].regret = 0.30;
  // said needed where it was not: +40 points.
  pairs[3].measured_gain = -0.1;
  pairs[3].projected_gain = 0.3;
  pairs[3].projected_needed = true;
  pairs[3].top1 = true;
  // said not needed where PP won again (the confusion is not symmetric): -20 points.
  pairs[4].measured_needed = true;
  pairs[4].measured_gain = 0.2;
  pairs[4].projected_gain = 0.0;
  const PpPairSummary s = summarize(pairs);
  EXPECT_EQ(s.groups, 5);
  EXPECT_EQ(s.agree, 2);
  EXPECT_EQ(s.confusion[1][0], 2);  // said not needed where PP won
  EXPECT_EQ(s.confusion[0][1], 1);  // said needed where it was not
  EXPECT_EQ(s.confusion[1][1], 1);
  EXPECT_EQ(s.confusion[0][0], 1);
  EXPECT_EQ(s.top1, 2);
  // regrets 0, 0, 0, 10, 30 %: median 0, p90 (numpy's linear) 10 + 0.6 x 20 = 22.
  EXPECT_NEAR(s.regret_median, 0.0, 1e-9);
  EXPECT_NEAR(s.regret_p90, 22.0, 1e-9);
  // errors -20, -20, 0, +10, +40 points: median 0, p10 -20, p90 10 + 0.6 x 30 = 28;
  // |err| 0, 10, 20, 20, 40: p80 = 20 + 0.2 x 20 = 24.
  EXPECT_NEAR(s.err_median, 0.0, 1e-9);
  EXPECT_NEAR(s.err_p10, -20.0, 1e-9);
  EXPECT_NEAR(s.err_p90, 28.0, 1e-9);
  EXPECT_NEAR(s.abs_err_p80, 24.0, 1e-9);
}

}  // namespace
}  // namespace ibt::topo
