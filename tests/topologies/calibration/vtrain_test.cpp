// The pieces of the vTrain validation model (topologies/calibration/vtrain.hpp) that are not the
// MAPE itself: host dispatch overlapping device work, and the all-reduce table fits.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/errors.hpp"
#include "topologies/calibration/vtrain.hpp"
#include "topologies/hardware/collective_model.hpp"
#include "topologies/sim/sim_pricer.hpp"

namespace ibt::topo {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(VtrainModel, DispatchOverlapCostsTheLongerOfRooflineAndOverhead) {
  const Topology t = load_topology("dgx-a100");
  models::ParallelSplit s;
  TopologyPricer pricer(t, s, "bf16");
  const double overhead = t.model.op_overhead_us.get();
  const double big = 1e15;  // FLOPs: a roofline far above the overhead
  const double roofline = big / (t.device.peak("bf16").get() * 1e6 * t.model.gemm_efficiency.get());
  ASSERT_GT(roofline, 100 * overhead);
  // Default: the overhead adds to every op.
  EXPECT_DOUBLE_EQ(pricer.compute_us(big, 0), roofline + overhead);
  EXPECT_DOUBLE_EQ(pricer.compute_us(0, 0), overhead);
  // Overlapped: a large op costs its roofline, a tiny one its dispatch.
  pricer.set_dispatch_overlaps_compute(true);
  EXPECT_DOUBLE_EQ(pricer.compute_us(big, 0), roofline);
  EXPECT_DOUBLE_EQ(pricer.compute_us(1.0, 0), overhead);
}

TEST(VtrainModel, AllReduceTableIsFittedPerGroupSizeAndReplacesTheIntraModel) {
  // Exact alpha-beta rows: 2 GPUs alpha 40 us, algbw 100 GB/s; 8 GPUs 80 us, 50 GB/s.
  std::string csv = "# comment\ngpus,bytes,time_us\n";
  for (double mib : {1.0, 4.0, 16.0, 64.0, 256.0}) {
    const double bytes = mib * 1048576;
    csv += "2," + std::to_string(bytes) + "," + std::to_string(40 + bytes / 100e3) + "\n";
    csv += "8," + std::to_string(bytes) + "," + std::to_string(80 + bytes / 50e3) + "\n";
  }
  const auto fits = fit_allreduce_table(write_temp("vtrain_ar.csv", csv));
  ASSERT_EQ(fits.size(), 2u);
  EXPECT_EQ(fits[0].group_size, 2);
  EXPECT_NEAR(fits[0].alpha_us, 40, 0.5);
  EXPECT_NEAR(fits[0].algbw_GBps, 100, 0.5);
  EXPECT_EQ(fits[1].group_size, 8);
  EXPECT_NEAR(fits[1].alpha_us, 80, 0.5);
  EXPECT_NEAR(fits[1].algbw_GBps, 50, 0.5);
  EXPECT_NEAR(fits[1].busbw_GBps, 50 * 2.0 * 7 / 8, 0.5);
  EXPECT_EQ(fits[1].op, "all_reduce");
  EXPECT_EQ(fits[1].scope, "intra");

  const Topology t = with_collective_fits(load_topology("dgx-a100"), fits, "test rows");
  ASSERT_NE(t.find_source("vtrain-nccl"), nullptr);
  const CollectiveCost c = collective_cost(t, CollOp::all_reduce, Placement{8, 8}, 16 * 1048576.0);
  EXPECT_STREQ(c.algorithm, "fit");
  EXPECT_NEAR(c.time_us, 80 + 16 * 1048576.0 / 50e3, 1.0);
}

TEST(VtrainModel, MalformedAllReduceTableNamesFileAndLine) {
  const std::string path = write_temp("vtrain_ar_bad.csv", "gpus,bytes,time_us\n8,1048576,90\n8,abc,100\n");
  try {
    fit_allreduce_table(path);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fit_allreduce_table(write_temp("vtrain_ar_one.csv", "gpus,bytes,time_us\n1,1048576,90\n")), UsageError);
  EXPECT_THROW(fit_allreduce_table(::testing::TempDir() + "does-not-exist.csv"), UsageError);
}

}  // namespace
}  // namespace ibt::topo
