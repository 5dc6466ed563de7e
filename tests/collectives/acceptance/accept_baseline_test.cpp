// The target of a reference generated from known-good runs: the median, so one noisy run
// cannot set it, with the spread said and warned about.
#include "collectives/acceptance/accept_baseline.hpp"

#include <gtest/gtest.h>

namespace ibt::suites {
namespace {

TEST(BaselineTarget, OneRunIsItsOwnTarget) {
  const BaselineTarget t = baseline_target("all_reduce-world-float32-busbw", {2.5}, "GB/s");
  ASSERT_TRUE(t.ok);
  EXPECT_DOUBLE_EQ(t.target, 2.5);
  EXPECT_EQ(t.note, "measured 2.5 GB/s in the baseline run");
  EXPECT_TRUE(t.warning.empty());
}

TEST(BaselineTarget, TheMedianOfSeveralRunsIgnoresOneOutlier) {
  // A 10 ms latency outlier among 10 us runs: the median stays at the quiet runs' value.
  const BaselineTarget t = baseline_target("all_reduce-world-float32-8B-latency", {10.0, 10000.0, 11.0}, "us");
  ASSERT_TRUE(t.ok);
  EXPECT_DOUBLE_EQ(t.target, 11.0);
  EXPECT_EQ(t.note, "median of 3 runs: 11 us (from 10 to 10000)");
  EXPECT_NE(t.warning.find("spreads 99900% across the 3 runs"), std::string::npos) << t.warning;
}

TEST(BaselineTarget, AnEvenCountTakesTheMiddleTwo) {
  const BaselineTarget t = baseline_target("x", {4.0, 1.0, 3.0, 2.0}, "GB/s");
  EXPECT_DOUBLE_EQ(t.target, 2.5);
}

TEST(BaselineTarget, RunsWithinTwentyPercentAreNotWarnedAbout) {
  EXPECT_TRUE(baseline_target("x", {10.0, 11.9}, "GB/s").warning.empty());
  EXPECT_FALSE(baseline_target("x", {10.0, 12.1}, "GB/s").warning.empty());
}

TEST(BaselineTarget, NoValuesNoTarget) { EXPECT_FALSE(baseline_target("x", {}, "GB/s").ok); }

}  // namespace
}  // namespace ibt::suites
