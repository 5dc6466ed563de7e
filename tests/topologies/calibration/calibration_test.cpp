// Fits recover known latency and bandwidth from synthetic measurements, also when the
// small sizes are noisy or carry outliers.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/errors.hpp"
#include "topologies/calibration/calibration.hpp"
#include "topologies/calibration/calibration_layout.hpp"
#include "topologies/hardware/collective_model.hpp"
#include "topologies/sim/sim_pricer.hpp"

namespace ibt::topo {
namespace {

std::vector<Sample> synthetic(double alpha_us, double GBps, double noise, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> n(0.0, noise);
  std::vector<Sample> s;
  for (double bytes = 8; bytes <= 256e6; bytes *= 2)
    for (int rep = 0; rep < 3; ++rep) {
      const double t = alpha_us + bytes / (GBps * 1e3);
      s.push_back({bytes, t * (1.0 + n(rng))});
    }
  return s;
}

TEST(Calibration, ExactDataIsRecoveredExactly) {
  const LinearFit f = fit_latency_bandwidth(synthetic(5.0, 20.0, 0.0, 1));
  EXPECT_NEAR(f.alpha_us, 5.0, 1e-6);
  EXPECT_NEAR(f.algbw_GBps, 20.0, 1e-6);
  EXPECT_LT(f.max_rel_residual, 1e-9);
}

TEST(Calibration, NoisyDataIsRecoveredWithinAFewPercent) {
  for (unsigned seed = 1; seed <= 5; ++seed) {
    const LinearFit f = fit_latency_bandwidth(synthetic(12.0, 45.0, 0.03, seed));
    EXPECT_NEAR(f.alpha_us, 12.0, 0.05 * 12.0) << seed;
    EXPECT_NEAR(f.algbw_GBps, 45.0, 0.03 * 45.0) << seed;
    EXPECT_NEAR(f.rms_rel_residual, 0.03, 0.015) << seed;
  }
}

TEST(Calibration, OutliersAtSmallSizesDoNotDragTheFit) {
  auto s = synthetic(2.0, 10.0, 0.01, 7);
  // An oversubscribed machine: a few small messages took 10-50x longer.
  s[0].time_us *= 50;
  s[4].time_us *= 10;
  s[9].time_us *= 20;
  const LinearFit f = fit_latency_bandwidth(s);
  EXPECT_NEAR(f.alpha_us, 2.0, 0.2);
  EXPECT_NEAR(f.algbw_GBps, 10.0, 0.3);
  EXPECT_GT(f.max_rel_residual, 0.9);  // the outliers are reported, not hidden
}

TEST(Calibration, NegativeInterceptIsRefittedThroughTheOrigin) {
  std::vector<Sample> s = {{1e6, 90}, {2e6, 195}, {4e6, 400}};
  const LinearFit f = fit_latency_bandwidth(s);
  EXPECT_GE(f.alpha_us, 0.0);
  EXPECT_NEAR(f.algbw_GBps, 10.0, 0.5);
}

TEST(Calibration, RefusesDataWithoutTwoSizes) {
  EXPECT_THROW(fit_latency_bandwidth({{1e6, 100}, {1e6, 101}}), UsageError);
  EXPECT_THROW(fit_latency_bandwidth({{1e3, 100}, {1e6, 50}}), UsageError);
}

TEST(Calibration, CalibrateGroupsByOpScopeAndSizeAndReportsSkips) {
  std::vector<MeasuredCollective> rows;
  for (double b : {1e3, 1e5, 1e7}) {
    rows.push_back({"all_reduce", "intra", 2, b, 1 + b / 4e3});
    rows.push_back({"all_gather", "intra", 2, b, 2 + b / 8e3});
  }
  rows.push_back({"broadcast", "intra", 2, 1e3, 5});  // one size only: skipped
  const CalibrationReport rep = calibrate(load_topology("local-cpu"), rows, {"a.h5"}, "mine");
  ASSERT_EQ(rep.topology.fits.size(), 2u);
  EXPECT_EQ(rep.skipped.size(), 1u);
  for (const auto& f : rep.topology.fits) {
    EXPECT_EQ(f.source, "calibration");
    if (f.op == "all_reduce") {
      EXPECT_NEAR(f.algbw_GBps, 4.0, 1e-6);
      EXPECT_NEAR(f.busbw_GBps, 4.0, 1e-6);  // factor 2(n-1)/n = 1 at n = 2
    }
  }
  EXPECT_EQ(rep.topology.name, "mine");
  EXPECT_NO_THROW(parse_topology(to_json(rep.topology), "mine.json"));
}

// Rows of a 2-domain run: fast intra links (1 us + S / 10 GB/s), a slow network
// (inter: 500 us + S / 0.01 GB/s for send_recv, twice that latency for the all-reduce).
std::vector<MeasuredCollective> two_domain_rows(int n_intra) {
  std::vector<MeasuredCollective> rows;
  for (double b : {1e3, 1e5, 1e7}) {
    rows.push_back({"send_recv", "inter", 2, b, 500 + b / 10.0});
    rows.push_back({"all_reduce", "inter", 2, b, 1000 + b / 10.0});
    if (n_intra >= 2) {
      rows.push_back({"send_recv", "intra", n_intra, b, 1 + b / 1e4});
      rows.push_back({"all_reduce", "intra", n_intra, b, 2 + b / 1e4});
    }
  }
  return rows;
}

TEST(CalibrationLayout, TwoDomainsOfTwoPriceASpanningGroupFromTheInterFit) {
  CalibrationReport rep = calibrate(load_topology("local-cpu"), two_domain_rows(2), {"x.h5"}, "two");
  const Placement spanning = place_group(4, 1, 2);  // 4 ranks, 2 per domain
  ASSERT_FALSE(spanning.intra());
  ASSERT_FALSE(spanning.inter());
  // Without the layout the base's scale-up domain (2) holds, and there is no network.
  EXPECT_THROW(collective_cost(rep.topology, CollOp::all_reduce, spanning, 1e8), UsageError);
  apply_measured_layout(rep.topology, {"x.h5", 4, 2, "test"}, "calibration");
  Topology& t = rep.topology;
  EXPECT_EQ(t.domain_size(), 2);
  ASSERT_TRUE(t.scale_out.present);
  EXPECT_NEAR(t.scale_out.bandwidth_GBps.get(), 0.01, 1e-6);  // the send_recv inter fit
  EXPECT_NEAR(t.scale_out.latency_us.get(), 500 - t.model.collective_launch_us.get(), 1e-3);
  EXPECT_EQ(t.scale_out.bandwidth_GBps.source, "calibration");
  // 100 MB over 4 ranks in 2 domains: the network carries at least half the buffer
  // (hierarchical: an inter all-reduce of S/2) at the inter fit's 0.01 GB/s = 5 s;
  // the intra links alone would take milliseconds.
  const double us = collective_cost(t, CollOp::all_reduce, spanning, 1e8).time_us;
  EXPECT_GT(us, 0.5 * 1e8 / (0.01 * 1e3));
  EXPECT_LT(us, 1.1 * 0.5 * 1e8 / (0.01 * 1e3));
  EXPECT_NO_THROW(parse_topology(to_json(t), "two.json"));
}

TEST(CalibrationLayout, PipelineSendRecvBetweenDomainsUsesTheInterFit) {
  // 2 hosts x 1 rank: no intra group at all; the base's 2-device domain must not make
  // the two pipeline stages neighbours on shared memory.
  CalibrationReport rep = calibrate(load_topology("local-cpu"), two_domain_rows(0), {"x.h5"}, "pp");
  apply_measured_layout(rep.topology, {"x.h5", 2, 2, "test"}, "calibration");
  EXPECT_EQ(rep.topology.domain_size(), 1);
  models::ParallelSplit split;
  split.pp = 2;
  split.microbatches = 4;
  TopologyPricer pricer(rep.topology, split, "fp32");
  models::StepProgram program;
  program.stage = 0;
  models::Op op;
  op.bytes = 1e6;
  EXPECT_NEAR(pricer.exchange_half_us(program, op, 1), 500 + 1e6 / 10.0, 1.0);
  // A tp2 group is one rank per domain: priced from the inter all-reduce fit.
  split.pp = 1;
  split.tp = 2;
  TopologyPricer tp(rep.topology, split, "fp32");
  EXPECT_TRUE(tp.placement(models::Group::tp).inter());
}

TEST(CalibrationLayout, OneNodeKeepsItsDomainAndHasNoScaleOut) {
  CalibrationReport rep = calibrate(load_topology("local-cpu"), two_domain_rows(2), {"x.h5"}, "one");
  rep.topology.fits.erase(std::remove_if(rep.topology.fits.begin(), rep.topology.fits.end(),
                                         [](const CollectiveFit& f) { return f.scope == "inter"; }),
                          rep.topology.fits.end());
  apply_measured_layout(rep.topology, {"x.h5", 2, 1, "test"}, "calibration");
  EXPECT_EQ(rep.topology.domain_size(), 2);
  EXPECT_FALSE(rep.topology.scale_out.present);
}

TEST(CalibrationLayout, InputsOfDifferentLayoutsAreRefusedNamingTheFiles) {
  EXPECT_EQ(agreed_layout({{"a.h5", 2, 2, "m"}, {"b.h5", 2, 2, "m"}})->domain_size(), 1);
  EXPECT_FALSE(agreed_layout({}).has_value());
  try {
    agreed_layout({{"a.h5", 2, 2, "m"}, {"b.h5", 2, 1, "m"}});
    FAIL() << "mixed layouts accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("a.h5"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("b.h5"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ibt::topo
