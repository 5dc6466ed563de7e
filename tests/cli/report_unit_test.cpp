// Pure logic behind p2p-matrix and accept: the tournament schedule, outlier detection,
// reference parsing and judging.
#include <gtest/gtest.h>

#include <set>

#include "collectives/acceptance/accept_generate.hpp"
#include "collectives/acceptance/accept_reference.hpp"
#include "collectives/p2p_matrix.hpp"
#include "core/errors.hpp"
#include "topologies/hardware/topology.hpp"

namespace ibt {
namespace {

TEST(RoundRobin, EveryPairOnceAndNoRankTwiceInARound) {
  for (int n = 2; n <= 13; ++n) {
    const auto rounds = round_robin_rounds(n);
    EXPECT_EQ(static_cast<int>(rounds.size()), n % 2 == 0 ? n - 1 : n) << n;
    std::set<std::pair<int, int>> seen;
    for (const auto& round : rounds) {
      std::set<int> busy;
      for (const auto& [a, b] : round) {
        EXPECT_LT(a, b);
        EXPECT_TRUE(busy.insert(a).second) << "unit " << a << " twice in a round, n=" << n;
        EXPECT_TRUE(busy.insert(b).second) << "unit " << b << " twice in a round, n=" << n;
        EXPECT_TRUE(seen.insert({a, b}).second) << a << "-" << b << " twice, n=" << n;
      }
      // Every round is as full as it can be: n/2 concurrent pairs.
      EXPECT_EQ(static_cast<int>(round.size()), n / 2);
    }
    EXPECT_EQ(static_cast<int>(seen.size()), n * (n - 1) / 2);
  }
  EXPECT_TRUE(round_robin_rounds(1).empty());
}

P2pResult pair(int a, int b, std::size_t bytes, double time_us) {
  P2pResult r;
  r.rank_a = r.unit_a = a;
  r.rank_b = r.unit_b = b;
  r.bytes = bytes;
  r.time_us = time_us;
  r.bandwidth_GBps = bytes / (time_us * 1e3);
  return r;
}

TEST(Outliers, ASlowRankIsNamedAndFastOnesAreNot) {
  // 5 ranks; every pair touching rank 3 takes 4x longer at 1 MiB.
  std::vector<P2pResult> results;
  for (int a = 0; a < 5; ++a)
    for (int b = a + 1; b < 5; ++b) results.push_back(pair(a, b, 1 << 20, (a == 3 || b == 3) ? 400 : 100));
  const auto outliers = find_p2p_outliers(results, 0.5, 65536);
  std::set<int> ranks;
  int pairs = 0;
  for (const auto& o : outliers) {
    EXPECT_EQ(o.metric, "bandwidth");
    if (o.kind == "rank")
      ranks.insert(o.rank_a);
    else {
      ++pairs;
      EXPECT_TRUE(o.rank_a == 3 || o.rank_b == 3);
      EXPECT_NEAR(o.ratio, 0.25, 1e-9);
    }
  }
  EXPECT_EQ(ranks, std::set<int>{3});
  EXPECT_EQ(pairs, 4);
}

TEST(Outliers, LatencyBelowTheBandwidthSizeIsJudgedByTime) {
  std::vector<P2pResult> results = {pair(0, 1, 8, 1.0), pair(2, 3, 8, 1.1), pair(0, 2, 8, 1.0),
                                    pair(1, 3, 8, 9.0), pair(0, 3, 8, 1.0), pair(1, 2, 8, 1.2)};
  const auto outliers = find_p2p_outliers(results, 0.5, 65536);
  ASSERT_FALSE(outliers.empty());
  EXPECT_EQ(outliers[0].kind, "pair");
  EXPECT_EQ(outliers[0].metric, "latency");
  EXPECT_EQ(outliers[0].rank_a, 1);
  EXPECT_EQ(outliers[0].rank_b, 3);
}

TEST(Outliers, UniformMatrixHasNone) {
  std::vector<P2pResult> results;
  for (int a = 0; a < 4; ++a)
    for (int b = a + 1; b < 4; ++b) results.push_back(pair(a, b, 1 << 20, 100 + a + b));
  EXPECT_TRUE(find_p2p_outliers(results, 0.5, 65536).empty());
}

const char* kMetric =
    R"({"op": "all_reduce", "scope": "world", "dtype": "float32", "bytes": [1024, 4096],
        "quantity": "busbw_GBps", "target": 10, "lower": -0.2, "upper": null, "unit": "GB/s"})";

std::string reference_with(const std::string& metric) {
  return R"({"system": "test", "job": {"ranks": 2}, "metrics": [)" + metric + "]}";
}

TEST(Reference, ParsesTargetsToleranceAndDefaults) {
  const auto r = suites::parse_reference_text(reference_with(kMetric), "ref.json");
  ASSERT_EQ(r.metrics.size(), 1u);
  const auto& m = r.metrics[0];
  EXPECT_EQ(r.job.ranks, 2);
  EXPECT_EQ(m.min_bytes, 1024u);
  EXPECT_EQ(m.max_bytes, 4096u);
  EXPECT_EQ(m.over_sizes, "min");  // conservative default for a bandwidth
  EXPECT_DOUBLE_EQ(m.lower_bound(), 8.0);
  EXPECT_TRUE(std::isinf(m.upper_bound()));
  EXPECT_EQ(m.name, "all_reduce/world/float32/1024-4096B/busbw_GBps");
}

void expect_usage_error(const std::string& text, const std::string& needle) {
  try {
    suites::parse_reference_text(text, "ref.json");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Reference, BadFieldsAreNamed) {
  expect_usage_error("{", "ref.json: not valid JSON");
  expect_usage_error(R"({"metrics": []})", "missing 'system'");
  expect_usage_error(reference_with(R"({"op": "all_reduce", "scope": "world", "bytes": 8, "quantity": "time_us",
                                        "unit": "us"})"),
                     "metrics[0]: 'target' must be a positive number");
  expect_usage_error(reference_with(R"({"op": "all_reduce", "scope": "world", "bytes": 8, "quantity": "time_us",
                                        "unit": "GB/s", "target": 1})"),
                     "unit 'GB/s' does not match quantity time_us");
  expect_usage_error(reference_with(R"({"op": "all_reduce", "scope": "rack", "bytes": 8, "quantity": "time_us",
                                        "unit": "us", "target": 1})"),
                     "scope must be intra, inter or world");
  expect_usage_error(reference_with(R"({"op": "all_reduce", "scope": "world", "bytes": 8, "quantity": "time_us",
                                        "unit": "us", "target": 1, "lower": -2})"),
                     "'lower' must be in [-1, 0]");
  expect_usage_error(reference_with(R"({"op": "p2p", "bytes": 8, "quantity": "time_us", "unit": "us", "target": 1})"),
                     "quantity 'time_us' is not one of bandwidth_min_GBps");
  expect_usage_error(reference_with(std::string(kMetric) + "," + kMetric), "two metrics are named");
  expect_usage_error(reference_with(R"({"op": "all_reduce", "scope": "world", "bytes": 8, "quantity": "time_us",
                                        "unit": "us", "target": 1, "uper": 2})"),
                     "metrics[0]: unknown key 'uper'");
}

TEST(Judge, BoundsMarginAndAggregation) {
  auto m = suites::parse_reference_text(reference_with(kMetric), "ref.json").metrics[0];
  auto j = suites::judge(m, {12, 9, 15});  // min over sizes = 9, bound 8, target 10
  EXPECT_TRUE(j.pass);
  EXPECT_DOUBLE_EQ(j.measured, 9);
  EXPECT_NEAR(j.margin, -0.1, 1e-12);  // a bandwidth 10% below its target, within bounds
  j = suites::judge(m, {12, 7});
  EXPECT_FALSE(j.pass);
  EXPECT_NEAR(j.margin, -0.3, 1e-12);
  EXPECT_FALSE(suites::judge(m, {}).pass);  // nothing measured is a failure
  m.over_sizes = "mean";
  EXPECT_TRUE(suites::judge(m, {12, 7}).pass);  // mean 9.5
  m.upper = 0.5;                                // bounds [8, 15]
  EXPECT_FALSE(suites::judge(m, {16}).pass);
  EXPECT_NEAR(suites::judge(m, {14}).margin, 0.4, 1e-12);  // 40% better than target
}

TEST(Judge, LatencyMarginIsPositiveWhenFasterThanTarget) {
  // The issue's case: a latency 160x better than its target read 0.006 (the distance to
  // the nearest bound) and drew a zero-length bar.
  auto m = suites::parse_reference_text(reference_with(R"({"op": "all_reduce", "scope": "world", "bytes": 8,
      "quantity": "p50_us", "unit": "us", "target": 160, "lower": -0.999375, "upper": 61.5})"),
                                        "ref.json")
               .metrics[0];
  auto j = suites::judge(m, {1});
  EXPECT_TRUE(j.pass);
  EXPECT_NEAR(j.margin, 159.0 / 160.0, 1e-12);
  EXPECT_NEAR(suites::judge(m, {320}).margin, -1.0, 1e-12);  // twice the target: 100% worse
}

const suites::AcceptMetric& metric_named(const suites::AcceptReference& r, const std::string& name) {
  for (const auto& m : r.metrics)
    if (m.name == name) return m;
  throw std::runtime_error("no metric " + name);
}

TEST(GenerateReference, TargetsAreLinkBandwidthTimesEfficiencyAndTheFileParses) {
  const auto topology = topo::load_topology("dgx-h100");
  const auto json = suites::generate_reference(topology, 16, std::nullopt);
  const auto r = suites::parse_reference_text(json.dump(), "generated");
  EXPECT_EQ(r.job.ranks, 16);
  EXPECT_EQ(r.job.domain_size, 8);
  const double up = topology.scale_up.bandwidth_GBps.get(), out = topology.scale_out.bandwidth_GBps.get();
  EXPECT_NEAR(metric_named(r, "allreduce-intra-busbw").target, up * topology.model.scale_up_efficiency.get(), 1e-3);
  EXPECT_NEAR(metric_named(r, "allreduce-inter-busbw").target, out * topology.model.scale_out_efficiency.get(), 1e-3);
  EXPECT_EQ(metric_named(r, "allreduce-inter-busbw").scope, "inter");
  EXPECT_TRUE(metric_named(r, "p2p-worst-pair-bandwidth").is_p2p());
  const auto half = suites::parse_reference_text(suites::generate_reference(topology, 16, 0.5).dump(), "generated");
  EXPECT_NEAR(metric_named(half, "allreduce-intra-busbw").target, up * 0.5, 1e-3);
  // One domain: nothing crosses the network, so no inter or world metric.
  const auto one = suites::parse_reference_text(suites::generate_reference(topology, 8, std::nullopt).dump(), "g");
  for (const auto& m : one.metrics) EXPECT_NE(m.scope, "inter") << m.name;
  EXPECT_THROW(suites::generate_reference(topology, 12, std::nullopt), UsageError);
}

}  // namespace
}  // namespace ibt
