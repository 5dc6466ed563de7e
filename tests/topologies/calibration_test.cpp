// Fits recover known latency and bandwidth from synthetic measurements, also when the
// small sizes are noisy or carry outliers.
#include <gtest/gtest.h>

#include <random>

#include "collectives/errors.hpp"
#include "topologies/calibration.hpp"

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

}  // namespace
}  // namespace ibt::topo
