// Collective cost models: the nccl-tests busbw convention, placement on domains,
// hierarchical algorithms across domains, calibrated fits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/errors.hpp"
#include "topologies/calibration/calibration.hpp"
#include "topologies/hardware/collective_model.hpp"

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
  // Misaligned (tp 16 on 72-device domains): the group at ranks 64..79 has 8 members
  // on each side of the boundary.
  const Placement m = place_group(16, 1, 72);
  EXPECT_EQ(m.per_domain, 8);
  EXPECT_EQ(m.domains(), 2);
}

// place_group examines each residue of a group's first rank modulo the domain once;
// here every group of the job is walked member by member, on uneven shapes (72- and
// 6-device domains, strides past the domain, jobs of part of a period).
TEST(Placement, UnevenGroupsAsEveryGroupWalkedOneByOne) {
  size_t uneven = 0;
  for (int D : {6, 72})
    for (int n : {2, 3, 4, 8, 16, 64})
      for (long long stride : {1LL, 2LL, 4LL, 8LL, 48LL, 64LL, 96LL, 128LL})
        for (long long groups_of_span : {1LL, 3LL, 9LL, 64LL}) {
          const long long span = stride * n;
          // World: `groups_of_span` consecutive blocks of `span` ranks (every group
          // {a + span*b + i*stride}), or no limit (0) for the full period.
          for (long long world : {0LL, span * groups_of_span}) {
            const Placement p = place_group(n, stride, D, world);
            long long dom = D;
            if (world > 0 && world < dom) dom = world;
            if (dom % span == 0 || stride % dom == 0 || stride >= dom || (dom % stride == 0 && span % dom == 0))
              continue;  // the even cases take closed forms
            ++uneven;
            const long long blocks = world > 0 ? std::max(1LL, world / span) : dom;  // a period or more
            long long fewest = n;
            int domains = 1;
            for (long long b = 0; b < blocks; ++b)
              for (long long a = 0; a < stride; ++a) {
                const long long first = a + span * b;
                if (world > 0 && first + (n - 1) * stride >= world) continue;
                // Members per domain touched, walked one by one.
                long long in_domain = 0, least = n;
                int touched = 0;
                long long current = -1;
                for (int i = 0; i < n; ++i) {
                  const long long d = (first + i * stride) / dom;
                  if (d != current) {
                    if (current >= 0) least = std::min(least, in_domain);
                    current = d;
                    in_domain = 0;
                    ++touched;
                  }
                  ++in_domain;
                }
                least = std::min(least, in_domain);
                if (least < fewest || (least == fewest && touched > domains)) {
                  fewest = least;
                  domains = touched;
                }
              }
            EXPECT_EQ(p.per_domain, fewest) << n << " " << stride << " " << D << " " << world;
            EXPECT_EQ(p.spanned, fewest >= n ? 0 : domains) << n << " " << stride << " " << D << " " << world;
          }
        }
  EXPECT_GT(uneven, 50u);
}

// Groups that do not tile the scale-up domain are priced by the links they use.
TEST(Placement, StraddlingGroupsOnNvl72) {
  // DP64 over 64 x 72 GPUs (tp 1): groups start every 64 ranks; the one at 64 has 8
  // GPUs in the first rack and 56 in the second, the one at 8 sits in one rack.
  const Placement dp = place_group(64, 1, 72, 64 * 72);
  EXPECT_EQ(dp.per_domain, 8);
  EXPECT_EQ(dp.domains(), 2);
  EXPECT_FALSE(dp.intra());
  EXPECT_FALSE(dp.inter());
  // DP64 at tp 2 (every other rank): 128-rank spans on 72-rank racks, 4 members of the
  // group at ranks 64..191 (its first four even ranks) in rack 0, 36 in rack 1, the
  // rest in rack 2.
  const Placement dp2 = place_group(64, 2, 72, 2 * 64 * 9);
  EXPECT_EQ(dp2.per_domain, 4);
  EXPECT_EQ(dp2.domains(), 3);

  // The straddling all-reduce costs more than inside one rack, and much less than with
  // every step on the network (the old conservative rule): only the crossing uses the
  // NICs, 8 of them on the thin side.
  const Topology t = load_topology("gb200-nvl72");
  const double S = 2e9;  // a large gradient bucket
  Placement inside;
  inside.n = 64;
  inside.per_domain = 64;
  Placement all_network;
  all_network.n = 64;
  all_network.per_domain = 1;
  const double straddle_us = collective_cost(t, CollOp::all_reduce, dp, S).time_us;
  const double inside_us = collective_cost(t, CollOp::all_reduce, inside, S).time_us;
  const double network_us = collective_cost(t, CollOp::all_reduce, all_network, S).time_us;
  EXPECT_GT(straddle_us, inside_us);
  EXPECT_LT(straddle_us, 0.5 * network_us);
  // The bandwidth term is that of a ring over min(NVLink, 8 NICs x 50 GB/s).
  const double flat_bw = std::min(900 * 0.8, 8 * 50 * 0.85) * 1e3;  // bytes per us
  EXPECT_LE(straddle_us, 2.0 * 63 / 64 * S / flat_bw + 500.0);
}

TEST(Placement, StraddlingGroupsOnTpuV5p) {
  // A 4,096-chip job on v5p is one 4,096-chip slice: every group on ICI (the old rule
  // put DP4096 on the 6.25 GB/s data-center network).
  const Placement one_slice = place_group(4096, 1, 6144, 4096);
  EXPECT_TRUE(one_slice.intra());
  // 8,192 chips on 6,144-chip slices: the second DP4096 group has 2,048 chips in each
  // of two slices, so only its crossing uses DCN.
  const Placement two = place_group(4096, 1, 6144, 8192);
  EXPECT_EQ(two.per_domain, 2048);
  EXPECT_EQ(two.domains(), 2);
  const Topology t = load_topology("tpu-v5p");
  const double S = 1e9;
  Placement all_dcn;
  all_dcn.n = 4096;
  all_dcn.per_domain = 1;
  EXPECT_LT(collective_cost(t, CollOp::all_reduce, one_slice, S).time_us,
            collective_cost(t, CollOp::all_reduce, two, S).time_us);
  EXPECT_LT(collective_cost(t, CollOp::all_reduce, two, S).time_us,
            0.1 * collective_cost(t, CollOp::all_reduce, all_dcn, S).time_us);
}

// Node-limited routing, as DeepSeek-V3 dispatches it (report section 3.2.2): a token
// crosses the network once per remote node its experts lie in, at most 4 of 8 nodes.
TEST(ExpertAllToAll, DeduplicatedDispatchSendsATokenOncePerRemoteDomain) {
  // EP64 over 8 nodes, 8 groups of 32 experts (one per node), 4 groups per token: a
  // node is reached with probability 1 - C(7,4)/C(8,4) = 1/2, so 7 x 1/2 = 3.5 remote
  // copies of a token's 8: 0.4375, where the plain all-to-all sends 56/64 = 0.875.
  EXPECT_NEAR(deduplicated_network_fraction(8, 256, 8, 8, 4), 3.5 / 8, 1e-12);
  // Without a group limit the 8 experts are drawn from all 256: a node is missed with
  // probability C(224,8)/C(256,8); still fewer copies than 7 (several share a node).
  double missed = 1;
  for (int i = 0; i < 8; ++i) missed *= (224.0 - i) / (256.0 - i);
  EXPECT_NEAR(deduplicated_network_fraction(8, 256, 8, 0, 0), 7 * (1 - missed) / 8, 1e-12);
  EXPECT_LT(deduplicated_network_fraction(8, 256, 8, 0, 0), 0.875);
  EXPECT_EQ(deduplicated_network_fraction(1, 256, 8, 8, 4), 0.0);  // one domain: nothing crosses

  const Topology h800 = load_topology("dgx-h800");
  Placement ep64;
  ep64.n = 64;
  ep64.per_domain = 8;
  const double S = 256e6;  // 4,096 tokens x 8 copies x 7,168 x 1 byte (fp8)
  const double plain = collective_cost(h800, CollOp::all_to_all, ep64, S).time_us;
  const double dedup = deduplicated_all_to_all_cost(h800, ep64, S, 3.5 / 8).time_us;
  EXPECT_LT(dedup, 0.6 * plain);  // network-bound: about half the bytes cross
  EXPECT_GT(dedup, 0.4 * plain);
  Placement inside;
  inside.n = 8;
  inside.per_domain = 8;
  EXPECT_DOUBLE_EQ(deduplicated_all_to_all_cost(h800, inside, S, 0.0).time_us,
                   collective_cost(h800, CollOp::all_to_all, inside, S).time_us);
}

// A job whose size a domain does not divide is placed in equal segments, each inside
// one domain (Slurm --segment on GB200 NVL72: 64 of a rack's 72 GPUs for 256 GPUs),
// so a 32-GPU EP group no longer straddles two racks.
TEST(Placement, JobsAreSegmentedWhereTheDomainDoesNotDivideThem) {
  const Topology nvl72 = load_topology("gb200-nvl72");
  EXPECT_EQ(nvl72.placement_domain(256), 64);
  EXPECT_EQ(nvl72.placement_domain(128), 64);
  EXPECT_EQ(nvl72.placement_domain(144), 72);  // two full racks
  EXPECT_EQ(nvl72.placement_domain(64), 72);   // one rack holds the job
  EXPECT_EQ(nvl72.placement_domain(100), 50);
  EXPECT_EQ(nvl72.placement_domain(73), 72);  // no segment of half a rack or more: fill
  EXPECT_EQ(load_topology("dgx-h100").placement_domain(1024), 8);
  // EP32 (tp1) of 256 GPUs: the group at ranks 64..95 straddles racks 0 and 1 when they
  // are filled to 72, and lies in rack 1 with segments of 64.
  EXPECT_EQ(place_group(32, 1, 72, 256).per_domain, 8);
  EXPECT_EQ(place_group(32, 1, nvl72.placement_domain(256), 256).per_domain, 32);
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

// The error names the figures missing and the operation that needed them: the group
// that spans domains, every member across the network, and a pipeline send/recv.
TEST(CollectiveModel, NoScaleOutIsAClearError) {
  const Topology t = load_topology("local-cpu");
  ASSERT_FALSE(t.scale_out.present);
  const int D = t.domain_size();
  auto message = [](auto&& price) {
    try {
      price();
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string spanning = message([&] { collective_cost(t, CollOp::all_reduce, place_group(2 * D, 1, D), 1e6); });
  EXPECT_NE(spanning.find("scale_out.bandwidth_GBps"), std::string::npos) << spanning;
  EXPECT_NE(spanning.find("all_reduce over " + std::to_string(2 * D) + " devices"), std::string::npos) << spanning;
  const std::string across = message([&] { collective_cost(t, CollOp::all_gather, place_group(2, D, D), 1e6); });
  EXPECT_NE(across.find("all_gather over 2 devices"), std::string::npos) << across;
  const std::string p2p = message([&] { p2p_cost(t, false, 1e6); });
  EXPECT_NE(p2p.find("a pipeline send/recv between two devices"), std::string::npos) << p2p;
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
