// The crossover sweep: structure, monotonicity in bandwidth, and the verdict line.
#include <gtest/gtest.h>

#include <cmath>

#include "core/text_table.hpp"
#include "models/plan/model_file.hpp"
#include "topologies/studies/crossover.hpp"

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
    if (c.gain > 0.05 + c.uncertainty)
      EXPECT_EQ(c.verdict, PpVerdict::needed);
    else if (c.gain < 0.05 - c.uncertainty || !c.best_with_pp.feasible)
      EXPECT_EQ(c.verdict, PpVerdict::not_needed);
    else
      EXPECT_EQ(c.verdict, PpVerdict::within_uncertainty);
    EXPECT_LE(c.best_no_pp.split.tp, c.domain_size);
  }
  // Same domain, more scale-out bandwidth: the best PP = 1 MFU cannot drop.
  for (int d = 0; d < 2; ++d) EXPECT_GE(r.cells[d * 2 + 1].best_no_pp.mfu, r.cells[d * 2].best_no_pp.mfu - 1e-12);
  // One 64-GPU domain: nothing crosses the network, bandwidth changes nothing.
  EXPECT_NEAR(r.cells[2].best_no_pp.mfu, r.cells[3].best_no_pp.mfu, 1e-12);
  EXPECT_FALSE(r.verdict.empty());
}

// `ibt crossover`'s verdicts take u from the gain error of measured pairs when given
// (gain_error.hpp): every cell then carries it, and the verdict is the rule's with it.
TEST(Crossover, GainErrorIsTheVerdictsUncertaintyWhenGiven) {
  const auto m = models::load_model("llama3-8b");
  const Topology base = load_topology("dgx-h100");
  GainError e;
  e.known = true;
  e.kind = "catalog";
  e.points = 0.30;
  CrossoverRun run;
  run.gain_error = &e;
  const auto r = crossover(m, base, 64, {8}, {100, 1600}, 64, 0.05, ProjectionOptions{}, nullptr, RankBy::mfu, 0, run);
  ASSERT_EQ(r.cells.size(), 2u);
  EXPECT_TRUE(r.gain_error.known);
  for (const auto& c : r.cells) {
    EXPECT_DOUBLE_EQ(c.uncertainty, 0.30);
    EXPECT_EQ(c.verdict, pp_verdict({c.gain, 0.30, c.best_no_pp.feasible, c.best_with_pp.feasible}, 0.05));
  }
  // Not given (the atlas): the MFU band's median |error| as before.
  const auto without = crossover(m, base, 64, {8}, {100}, 64, 0.05, ProjectionOptions{});
  EXPECT_FALSE(without.gain_error.known);
  EXPECT_DOUBLE_EQ(without.cells[0].uncertainty, without.cells[0].best_no_pp.mfu_band.relative);
}

// The measured gain error per kind of topology (topologies/validation/pp-gain-error.json):
// the catalog's figures get the catalog's, a topology with collective fits the calibrated one.
TEST(GainError, KindOfTopologyPicksItsMeasuredError) {
  const Topology catalog = load_topology("dgx-h100");
  EXPECT_EQ(gain_error_kind(catalog), "catalog");
  Topology calibrated = catalog;
  calibrated.fits.push_back(CollectiveFit{});
  EXPECT_EQ(gain_error_kind(calibrated), "calibrated");
  const GainError c = gain_error_of(catalog), k = gain_error_of(calibrated);
  ASSERT_TRUE(c.known);
  ASSERT_TRUE(k.known);
  EXPECT_EQ(c.groups, 122);
  EXPECT_DOUBLE_EQ(c.coverage, 0.8);
  // The calibrated projection's gains were closer to the measured ones than the catalog's.
  EXPECT_LT(k.points, c.points);
  EXPECT_EQ(c.topology, "dgx-a100");
  EXPECT_NE(c.command.find("--write-gain-error"), std::string::npos);
  EXPECT_EQ(format_gain(0.12, k), "gain +12.0% +/- " + fixed(100 * k.points, 1) + " points (80% of measured pairs)");
  EXPECT_EQ(format_gain(0.12, GainError{}), "gain +12.0%");
}

// Every projected MFU carries a band from the out-of-family (leave-one-family-out)
// errors of published runs (uncertainty.hpp): its topology's own runs where they are
// enough, else its generation's, else the whole set's -- the wide default, which a
// topology with no validation gets and says so.
TEST(Uncertainty, ProjectedMfuCarriesAnOutOfSampleBand) {
  const MfuBand h100 = mfu_band("dgx-h100", 0.36);
  ASSERT_TRUE(h100.known);
  EXPECT_TRUE(h100.validated);
  EXPECT_EQ(h100.scope, "dgx-h100");
  // dgx-h100 holds runs of several families (NeMo, Megatron-Bridge, Llama 3, Nemotron-4).
  EXPECT_NE(h100.family.find('+'), std::string::npos) << h100.family;
  EXPECT_GT(h100.rows, 5);
  EXPECT_DOUBLE_EQ(h100.coverage, 0.8);
  EXPECT_LT(h100.low, 0.36);
  EXPECT_GT(h100.high, 0.36);
  // Every topology gets a band; one with no published run of its own is not "validated"
  // and its band is its generation's or the whole set's.
  for (const char* t :
       {"dgx-a100", "dgx-b200", "dgx-h800", "gb200-nvl72", "tpu-v5p", "tpu-v4", "dgx-h200", "dgx1-v100"})
    EXPECT_TRUE(mfu_band(t, 0.5).known) << t;
  for (const char* t : {"tpu-v4", "dgx-h200", "dgx1-v100"}) EXPECT_FALSE(mfu_band(t, 0.5).validated) << t;
  EXPECT_EQ(mfu_band("dgx-h200", 0.5).scope, "generation Hopper");
  const MfuBand v4 = mfu_band("tpu-v4", 0.36);
  EXPECT_EQ(v4.scope_kind, "all");
  EXPECT_GT(v4.rows, h100.rows);
  // A crossover fabric derived from the base carries the base's band.
  const MfuBand fabric = mfu_band("dgx-h100@d72-400G", 0.36);
  EXPECT_TRUE(fabric.validated);
  EXPECT_DOUBLE_EQ(fabric.low, h100.low);
  // A topology bands.json does not list (a calibrated one, the CPU) gets the default band
  // and says it has no validation.
  const MfuBand cpu = mfu_band("local-cpu", 0.36);
  EXPECT_TRUE(cpu.known);
  EXPECT_FALSE(cpu.validated);
  const std::string cpu_text = format_mfu_with_band(0.36, cpu, "local-cpu");
  EXPECT_NE(cpu_text.find("no published run on local-cpu"), std::string::npos) << cpu_text;
  EXPECT_NE(cpu_text.find("wide default band"), std::string::npos) << cpu_text;
  const MfuBand calibrated = mfu_band("my-calibrated-cluster", 0.36);
  EXPECT_EQ(calibrated.scope_kind, "all");
  const std::string text = format_mfu_with_band(0.36, h100, "dgx-h100");
  EXPECT_EQ(text.find("36.0% (80% band "), 0u) << text;
  EXPECT_NE(text.find("published runs on dgx-h100"), std::string::npos) << text;
}

// The sweep on several threads gives the same cells, reported in order as they are
// known, with progress counting every split x cell pricing; and each cell's best
// agrees with pricing that split on the full step programs (the full event walk).
TEST(Crossover, ThreadsChangeNothingAndCellsArriveInOrder) {
  const auto m = models::load_model("mixtral-8x7b");
  const Topology base = load_topology("dgx-h100");
  const std::vector<int> domains{8, 16, 32};
  const std::vector<double> gbps{200, 800};
  // max_cp 1: no context parallelism, so that the test stays seconds.
  const auto serial = crossover(m, base, 64, domains, gbps, 128, 0.05, ProjectionOptions{}, nullptr, RankBy::mfu, 1);
  CrossoverRun run;
  run.jobs = 3;
  std::vector<std::pair<int, double>> seen;
  size_t last_done = 0, last_total = 0;
  run.on_cell = [&](const CrossoverCell& c) { seen.emplace_back(c.domain_size, c.scale_out_gbps); };
  run.progress = [&](size_t done, size_t total) {
    EXPECT_GT(done, last_done);
    last_done = done;
    last_total = total;
  };
  const auto parallel =
      crossover(m, base, 64, domains, gbps, 128, 0.05, ProjectionOptions{}, nullptr, RankBy::mfu, 1, run);
  ASSERT_EQ(parallel.cells.size(), serial.cells.size());
  ASSERT_EQ(seen.size(), serial.cells.size());
  EXPECT_EQ(last_done, last_total);
  EXPECT_GT(last_total, serial.cells.size());
  for (size_t i = 0; i < serial.cells.size(); ++i) {
    const auto& a = serial.cells[i];
    const auto& b = parallel.cells[i];
    EXPECT_EQ(seen[i].first, a.domain_size);
    EXPECT_EQ(seen[i].second, a.scale_out_gbps);
    EXPECT_EQ(b.best_no_pp.split, a.best_no_pp.split) << i;
    EXPECT_EQ(b.best_with_pp.split, a.best_with_pp.split) << i;
    EXPECT_EQ(b.best_with_pp.step_s, a.best_with_pp.step_s) << i;
    EXPECT_EQ(b.gain, a.gain) << i;
    // The full event walk on the winner.
    for (const Projection* best : {&a.best_no_pp, &a.best_with_pp}) {
      if (!best->feasible) continue;
      Projection full;
      full.split = best->split;
      ASSERT_TRUE(prepare(m, base, ProjectionOptions{}, full));
      price(stage_programs(m, best->split, ProjectionOptions{}), m, with_fabric(base, a.domain_size, a.scale_out_gbps),
            ProjectionOptions{}, full);
      EXPECT_NEAR(full.step_s, best->step_s, 1e-9 * full.step_s) << models::describe(best->split);
    }
  }
}

TEST(Crossover, VerdictNamesTheSmallestDomainFromWhichPPIsNotNeeded) {
  CrossoverResult r;
  r.domain_sizes = {8, 72, 256};
  r.scale_out_gbps = {100, 400, 1600};
  r.threshold = 0.05;
  using V = PpVerdict;
  const V cells[3][3] = {{V::needed, V::needed, V::needed},
                         {V::needed, V::needed, V::within_uncertainty},
                         {V::within_uncertainty, V::not_needed, V::not_needed}};
  for (int d = 0; d < 3; ++d)
    for (int g = 0; g < 3; ++g) {
      CrossoverCell c;
      c.verdict = cells[d][g];
      r.cells.push_back(c);
    }
  EXPECT_EQ(crossover_verdict("m", r),
            "m: within uncertainty at domain 256 (the grid's largest) at 100 Gb/s; PP stops being needed at domain "
            ">= 256 at 400 Gb/s; PP not needed at domain >= 256 (within uncertainty at 72) at 1600 Gb/s "
            "(PP needed = MFU gain > 5% + the uncertainty)");
}

}  // namespace
}  // namespace ibt::topo
