// The crossover sweep: structure, monotonicity in bandwidth, and the verdict line.
#include <gtest/gtest.h>

#include <cmath>

#include "models/model_file.hpp"
#include "topologies/crossover.hpp"

namespace ibt::topo {
namespace {

TEST(Crossover, GridIsCompleteAndFasterNetworksNeverHurt) {
  const auto m = models::load_model("llama3-8b");
  const Topology base = load_topology("dgx-h100");
  keep_freed_memory_for_reuse();
  const auto r = crossover(m, base, 64, {8, 64}, {100, 1600}, 64, 0.05, ProjectionOptions{});
  ASSERT_EQ(r.cells.size(), 4u);
  for (const auto& c : r.cells) {
    ASSERT_TRUE(c.best_no_pp.feasible || c.best_with_pp.feasible);
    if (c.best_no_pp.feasible) {
      EXPECT_EQ(c.best_no_pp.split.pp, 1);
    }
    if (c.best_with_pp.feasible) {
      EXPECT_GT(c.best_with_pp.split.pp, 1);
    }
    if (c.best_no_pp.feasible && c.best_with_pp.feasible) {
      EXPECT_NEAR(c.gain, c.best_with_pp.mfu / c.best_no_pp.mfu - 1, 1e-12);
    }
    // dgx-h100 has a validation family (topologies/validation/bands.json): its median
    // |error| widens the threshold both ways.
    EXPECT_GT(c.uncertainty, 0.0);
    EXPECT_EQ(c.pp_needed, c.gain > 0.05 + c.uncertainty);
    if (c.pp_needed) EXPECT_EQ(c.verdict, "PP needed");
    else if (c.gain < 0.05 - c.uncertainty || !c.best_with_pp.feasible) EXPECT_EQ(c.verdict, "PP not needed");
    else EXPECT_EQ(c.verdict, "within uncertainty");
    EXPECT_LE(c.best_no_pp.split.tp, c.domain_size);
  }
  // Same domain, more scale-out bandwidth: the best PP = 1 MFU cannot drop.
  for (int d = 0; d < 2; ++d)
    EXPECT_GE(r.cells[d * 2 + 1].best_no_pp.mfu, r.cells[d * 2].best_no_pp.mfu - 1e-12);
  // One 64-GPU domain: nothing crosses the network, bandwidth changes nothing.
  EXPECT_NEAR(r.cells[2].best_no_pp.mfu, r.cells[3].best_no_pp.mfu, 1e-12);
  EXPECT_FALSE(r.verdict.empty());
}

// Every projected MFU carries the band of its topology's validation family; a topology
// no published run covers says so.
TEST(Uncertainty, ProjectedMfuCarriesItsFamilyBand) {
  const MfuBand h100 = mfu_band("dgx-h100", 0.36);
  ASSERT_TRUE(h100.known);
  EXPECT_FALSE(h100.family.empty());
  EXPECT_LT(h100.low, 0.36);
  EXPECT_GT(h100.high, 0.36);
  // At least the family's median |error| either side.
  EXPECT_LE(h100.low, 0.36 / (1 + h100.relative) + 1e-12);
  EXPECT_GE(h100.high, 0.36 / (1 - h100.relative) - 1e-12);
  // A crossover fabric derived from the base carries the base's band.
  EXPECT_TRUE(mfu_band("dgx-h100@d72-400G", 0.36).known);
  const MfuBand none = mfu_band("local-cpu", 0.36);
  EXPECT_FALSE(none.known);
  EXPECT_NE(format_mfu_with_band(0.36, none, "local-cpu").find("no validation band for local-cpu"), std::string::npos);
  EXPECT_NE(format_mfu_with_band(0.36, h100, "dgx-h100").find("36.0% ("), std::string::npos);
}

TEST(Crossover, VerdictNamesTheSmallestDomainFromWhichPPIsNotNeeded) {
  CrossoverResult r;
  r.domain_sizes = {8, 72, 256};
  r.scale_out_gbps = {400, 1600};
  r.threshold = 0.05;
  const bool needed[3][2] = {{true, true}, {true, false}, {false, false}};
  for (int d = 0; d < 3; ++d)
    for (int g = 0; g < 2; ++g) {
      CrossoverCell c;
      c.pp_needed = needed[d][g];
      r.cells.push_back(c);
    }
  EXPECT_EQ(crossover_verdict("m", r),
            "m: PP stops being needed at domain >= 256 at 400 Gb/s; PP stops being needed at domain >= 72 "
            "at 1600 Gb/s (PP needed = MFU gain > 5%)");
}

}  // namespace
}  // namespace ibt::topo
