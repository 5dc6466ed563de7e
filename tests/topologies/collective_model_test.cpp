// Collective cost models: the nccl-tests busbw convention, placement on domains,
// hierarchical algorithms across domains, calibrated fits.
#include <gtest/gtest.h>

#include <cmath>

#include "core/errors.hpp"
#include "topologies/calibration.hpp"
#include "topologies/collective_model.hpp"

namespace ibt::topo {
namespace {

TEST(Placement, FollowsTheRankOrder) {
  // TP 8 on 8-device domains: inside one domain.
  EXPECT_EQ(place_group(8, 1, 8).per_domain, 8);
  // DP over tp=8 ranks apart: one member per domain.
  EXPECT_EQ(place_group(16, 8, 8).per_domain, 1);
  // DP of 16 with tp=2 on 8-device domains: 4 per domain, 4 domains.
  const Placement p = place_group(16, 2, 8);
  EXPECT_EQ(p.per_domain, 4);
  EXPECT_EQ(p.domains(), 4);
  // Misaligned (tp 16 on 72-device domains) is placed conservatively.
  EXPECT_EQ(place_group(16, 1, 72).per_domain, 1);
}

TEST(CollectiveModel, BusBandwidthTendsToTheEffectiveLinkRate) {
  const Topology t = load_topology("dgx-h100");
  const double S = 16e9;  // large enough that latency vanishes
  Topology ring_only = t;
  ring_only.scale_up.algorithms = {Algorithm::ring};
  const auto c = collective_cost(ring_only, CollOp::all_reduce, place_group(8, 1, 8), S);
  const double busbw = S / (c.time_us * 1e3) * bus_factor(CollOp::all_reduce, 8);
  EXPECT_NEAR(busbw, 450 * 0.8, 0.5);
  // all-gather: factor (n-1)/n, same asymptote.
  const auto ag = collective_cost(ring_only, CollOp::all_gather, place_group(8, 1, 8), S);
  EXPECT_NEAR(S / (ag.time_us * 1e3) * bus_factor(CollOp::all_gather, 8), 360, 0.5);
  // NVLS beats ring for large all-reduces where the fabric offers it.
  EXPECT_LT(collective_cost(t, CollOp::all_reduce, place_group(8, 1, 8), S).time_us, c.time_us);
}

TEST(CollectiveModel, LatencyDominatesSmallMessages) {
  Topology t = load_topology("dgx-a100");
  t.scale_up.algorithms = {Algorithm::ring};
  const auto c = collective_cost(t, CollOp::all_reduce, place_group(8, 1, 8), 8);
  EXPECT_NEAR(c.time_us, 8.4 + 14 * 0.47, 0.01);
}

TEST(CollectiveModel, SpanningGroupsUseTheCheaperOfFlatAndHierarchical) {
  const Topology t = load_topology("dgx-a100");
  const Placement p = place_group(64, 1, 8);  // 8 domains x 8
  ASSERT_EQ(p.per_domain, 8);
  const double S = 1e9;
  const auto c = collective_cost(t, CollOp::all_reduce, p, S);
  // Flat ring with 8 NICs per domain: bandwidth min(up, 8 x out) = min(240, 170).
  const double flat = 8.4 + 2 * (64 - 8) * 0.47 + 2 * 7 * 2.7 + 2.0 * 63 / 64 * S / (170e3);
  EXPECT_LE(c.time_us, flat + 1e-6);
  EXPECT_GT(c.time_us, 0.5 * flat);
  // One member per domain: everything on the network at one NIC's rate.
  const auto inter = collective_cost(t, CollOp::all_reduce, place_group(8, 8, 8), S);
  EXPECT_STREQ(inter.algorithm, "tree");  // log2(8) network steps beat 7
  EXPECT_NEAR(inter.time_us, 8.4 + 2 * 3 * 2.7 + 2.0 * 7 / 8 * S / 21.25e3, 1.0);
}

TEST(CollectiveModel, NoScaleOutIsAClearError) {
  const Topology t = load_topology("local-cpu");
  EXPECT_THROW(collective_cost(t, CollOp::all_reduce, place_group(4, 1, 2), 1e6), UsageError);
}

TEST(CollectiveModel, TorusUsesMoreAxesForLargerGroups) {
  const Topology t = load_topology("tpu-v5p");
  const double S = 1e10;
  const auto one_axis = collective_cost(t, CollOp::all_reduce, place_group(16, 1, 6144), S);
  const auto three_axes = collective_cost(t, CollOp::all_reduce, place_group(2048, 1, 6144), S);
  const double bw1 = S / (one_axis.time_us * 1e3) * bus_factor(CollOp::all_reduce, 16);
  const double bw3 = S / (three_axes.time_us * 1e3) * bus_factor(CollOp::all_reduce, 2048);
  EXPECT_NEAR(bw1, 2 * 100 * 0.8, 1.0);  // one axis: 2 links
  EXPECT_NEAR(bw3, 600 * 0.8, 5.0);      // three axes: all 6 links
}

TEST(CollectiveModel, CalibratedFitReplacesTheAnalyticModel) {
  Topology t = load_topology("local-cpu");
  std::vector<MeasuredCollective> rows;
  for (double bytes : {1e3, 1e4, 1e5, 1e6, 1e7})
    rows.push_back({"all_reduce", "intra", 2, bytes, 3.0 + bytes / 5e3});  // alpha 3 us, 5 GB/s
  const CalibrationReport rep = calibrate(t, rows, {"synthetic"}, "fitted");
  ASSERT_EQ(rep.topology.fits.size(), 1u);
  const Topology back = parse_topology(to_json(rep.topology), "fitted.json");
  const auto c = collective_cost(back, CollOp::all_reduce, place_group(2, 1, 2), 2e6);
  EXPECT_STREQ(c.algorithm, "fit");
  EXPECT_NEAR(c.time_us, 3.0 + 2e6 / 5e3, 1e-6 * c.time_us);
}

}  // namespace
}  // namespace ibt::topo
