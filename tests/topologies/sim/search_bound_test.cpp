// Branch and bound in the searches (projection.hpp SearchRun::keep_best, crossover.hpp):
// the step-time lower bound (sim_fast.hpp step_lower_bound) never exceeds the walked
// step time on any split a search meets, is not vacuous, and pruning by it changes
// neither `project --all`'s top list nor a crossover cell's bests, on any thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "models/plan/model_file.hpp"
#include "topologies/projection/projection.hpp"
#include "topologies/sim/sim_fast.hpp"
#include "topologies/studies/crossover.hpp"

namespace ibt::topo {
namespace {

struct Search {
  std::string model, topology;
  int devices;
  long long global_batch;
};

// Dense, MoE with uneven stages (61 layers), interleaving up to depth 8, CP, micro-batch
// sizes > 1, ZeRO-2/3 and HSDP, zb-h1: every split default_search() yields that fits. The
// family bound that rules out splits first (sim_fast.hpp family_lower_bounds) is below
// the split's own bound, hence below its step.
TEST(StepLowerBound, NeverAboveTheWalkedStepOnEverySplitOfASearch) {
  for (const Search& c : {Search{"llama3-8b", "dgx-h100", 64, 128}, Search{"deepseek-v3", "tpu-v5p", 256, 256},
                          Search{"mixtral-8x7b", "gb200-nvl72", 144, 144}}) {
    const auto model = models::load_model(c.model);
    const Topology topology = load_topology(c.topology);
    models::SplitSearch search = default_search(topology, c.global_batch);
    search.max_cp = 2;  // keeps the test seconds; CP itself is covered
    const ProjectionOptions options;
    size_t checked = 0, pipelined = 0, sharded = 0, zero_bubble = 0;
    BoundTemplates shared(1);
    std::vector<double> ratios;
    for (const auto& split : models::enumerate_splits(model, c.devices, search)) {
      Projection p;
      p.split = split;
      if (!prepare(model, topology, options, p)) continue;
      const double bound = step_lower_bound_s(model, split, topology, options);
      // ZeRO-2/3 splits: bounded by their ZeRO-1 sibling, checked against the full walk.
      if (fast_walk_prices(split))
        price(StepTemplates(model, split, program_options(options)), model, topology, options, p);
      else
        price(stage_programs(model, split, options), model, topology, options, p);
      sharded += !fast_walk_prices(split);
      ASSERT_LE(bound, p.step_s * (1 + kLowerBoundMargin)) << c.model << " " << models::describe(split);
      ASSERT_GT(bound, 0.0);
      // The family's bound (no recompute, no ZeRO, no tail) below the split's own.
      BoundTemplates fresh(1);
      const double family = family_bounds_of(model, {split}, {1}, {&topology}, options, fresh, 1).bounds[0][0];
      ASSERT_LE(family, bound * (1 + kLowerBoundMargin)) << c.model << " " << models::describe(split);
      ASSERT_GT(family, 0.0);
      // Template summaries shared across the search's splits (as project_all shares
      // them) give the same bounds, bit for bit, as each split's own.
      EXPECT_EQ(step_lower_bound_s(model, split, topology, options, &shared), bound) << models::describe(split);
      EXPECT_EQ(family_bounds_of(model, {split}, {1}, {&topology}, options, shared, 1).bounds[0][0], family)
          << models::describe(split);
      ratios.push_back(bound / p.step_s);
      ++checked;
      pipelined += split.pp > 1;
      zero_bubble += split.schedule == models::ScheduleKind::zb_h1;
    }
    ASSERT_GT(checked, 20u) << c.model;
    EXPECT_GT(pipelined, 5u) << c.model;
    EXPECT_GT(zero_bubble, 2u) << c.model;  // split backwards (W templates) bounded too
    EXPECT_GT(sharded, 5u) << c.model;
    // Not vacuous: for the median split the bound is most of the step.
    std::nth_element(ratios.begin(), ratios.begin() + ratios.size() / 2, ratios.end());
    EXPECT_GT(ratios[ratios.size() / 2], 0.5) << c.model;
  }
}

// Where the layers do not divide evenly the middle stages hold one more (models/plan/schedule.hpp
// stage_layers) and are the busiest: the bound counts their compute too. Megatron 530B's
// 105 layers on 64 stages (1 layer on the first and last, 2 on most others): the bound
// that counted the first and the last stage only was 0.63 of the step, which left every
// such split of a 16,384-device search to be walked.
TEST(StepLowerBound, CountsTheBusiestMiddleStageOfUnevenPipelines) {
  const auto model = models::load_model("megatron-530b");
  const Topology topology = load_topology("tpu-v5p");
  models::ParallelSplit split;
  split.dp = 16;
  split.tp = 4;
  split.pp = 64;
  split.cp = 4;
  split.microbatches = 512;
  split.sequence_parallel = true;
  split.zero = 1;
  for (const models::ScheduleKind kind : {models::ScheduleKind::zb_h1, models::ScheduleKind::one_f_one_b}) {
    split.schedule = kind;
    const ProjectionOptions options;
    Projection p;
    p.split = split;
    prepare(model, topology, options, p);
    price(StepTemplates(model, split, program_options(options)), model, topology, options, p);
    const double bound = step_lower_bound_s(model, split, topology, options);
    EXPECT_LE(bound, p.step_s * (1 + kLowerBoundMargin)) << models::describe(split);
    EXPECT_GT(bound, 0.9 * p.step_s) << models::describe(split);
  }
}

// The top list of a pruned search is the exhaustive search's, entry for entry, and the
// same on three threads; the rest are counted as skipped with their bound in the reason.
TEST(SearchBound, ProjectAllTopListIsTheExhaustiveOne) {
  const auto model = models::load_model("llama3-8b");
  const Topology topology = load_topology("dgx-h100");
  const auto search = default_search(topology, 256);
  const auto full = project_all(model, topology, 64, search);
  for (int jobs : {1, 3}) {
    SearchRun run;
    run.keep_best = 10;
    run.jobs = jobs;
    size_t last = 0;
    run.progress = [&](size_t done, size_t total) {
      last = done;
      EXPECT_EQ(total, full.size());
    };
    const auto pruned = project_all(model, topology, 64, search, {}, run);
    ASSERT_EQ(pruned.size(), full.size());
    EXPECT_EQ(last, full.size());
    for (size_t i = 0; i < run.keep_best; ++i) {
      ASSERT_TRUE(pruned[i].feasible) << i;
      EXPECT_EQ(pruned[i].split, full[i].split) << i;
      EXPECT_EQ(pruned[i].step_s, full[i].step_s) << i;
      EXPECT_EQ(pruned[i].exposed_s, full[i].exposed_s) << i;
    }
    size_t skipped = 0, full_feasible = 0, pruned_feasible = 0;
    for (const auto& p : pruned) {
      pruned_feasible += p.feasible;
      if (!p.bounded_out) continue;
      ++skipped;
      EXPECT_FALSE(p.priced);
      EXPECT_NE(p.reason.find("lower bound"), std::string::npos) << p.reason;
    }
    for (const auto& p : full) full_feasible += p.feasible;
    EXPECT_GT(skipped, full_feasible / 2) << "the bound prunes little";
    EXPECT_EQ(pruned_feasible + skipped, full_feasible);
  }
}

// A crossover's cells (ranked by MFU) are the exhaustive sweep's, with fewer pricings.
TEST(SearchBound, CrossoverCellsAreTheExhaustiveOnes) {
  const auto m = models::load_model("mixtral-8x7b");
  const Topology base = load_topology("dgx-h100");
  CrossoverRun exhaustive;
  exhaustive.exhaustive = true;
  const auto full =
      crossover(m, base, 64, {8, 32}, {200, 800}, 128, 0.05, ProjectionOptions{}, nullptr, RankBy::mfu, 1, exhaustive);
  for (int jobs : {1, 3}) {
    CrossoverRun run;
    run.jobs = jobs;
    const auto pruned =
        crossover(m, base, 64, {8, 32}, {200, 800}, 128, 0.05, ProjectionOptions{}, nullptr, RankBy::mfu, 1, run);
    ASSERT_EQ(pruned.cells.size(), full.cells.size());
    EXPECT_EQ(full.skipped, 0u);
    EXPECT_GT(pruned.skipped, 0u);
    EXPECT_EQ(pruned.pricings + pruned.skipped, full.pricings);
    EXPECT_LT(pruned.pricings, full.pricings / 2);
    for (size_t i = 0; i < full.cells.size(); ++i) {
      const auto& a = full.cells[i];
      const auto& b = pruned.cells[i];
      EXPECT_EQ(b.best_no_pp.split, a.best_no_pp.split) << i;
      EXPECT_EQ(b.best_with_pp.split, a.best_with_pp.split) << i;
      EXPECT_EQ(b.best_no_pp.step_s, a.best_no_pp.step_s) << i;
      EXPECT_EQ(b.best_with_pp.step_s, a.best_with_pp.step_s) << i;
      EXPECT_EQ(b.gain, a.gain) << i;
      EXPECT_EQ(b.verdict, a.verdict) << i;
    }
    EXPECT_EQ(pruned.verdict, full.verdict);
  }
}

}  // namespace
}  // namespace ibt::topo
