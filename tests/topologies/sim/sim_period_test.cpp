// The one-stage period walk (topologies/sim/sim_period.hpp) against the full event walk
// (simulate() on the full step program) on the splits the fast walk leaves to it:
// ZeRO-2 and ZeRO-3 (FSDP), HSDP shard groups, MoE with EP, sequence and context
// parallelism (ring and all-gather), recompute, micro-batch size > 1, overlapped and
// non-overlapped gradient reduction, zb-h1 on one stage (ZeRO-1), on dense and MoE catalog
// models and several fabrics. The step time and every figure of the breakdown must
// agree to 1e-9 of the step time (the period is checked to 1e-10 of the short step and
// extrapolated over up to a few hundred microbatches), and the period must be found:
// a walk that always fell back to the full program would pass the first check alone.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "models/plan/model_file.hpp"
#include "models/plan/step_program.hpp"
#include "topologies/projection/projection.hpp"
#include "topologies/sim/sim_executor.hpp"
#include "topologies/sim/sim_period.hpp"
#include "topologies/sim/sim_pricer.hpp"

namespace ibt::topo {
namespace {

using models::ParallelSplit;
using models::Recompute;
using models::ScheduleKind;

ParallelSplit one_stage(int dp, int tp, int ep, int m, int mbs, bool sp, int zero, Recompute r, int cp = 1,
                        models::CpComm comm = models::CpComm::all_gather, int shard_group = 0,
                        ScheduleKind k = ScheduleKind::one_f_one_b) {
  ParallelSplit s{dp, tp, 1, ep, 1, m, mbs, k, sp, zero, r};
  s.cp = cp;
  s.cp_comm = comm;
  s.shard_group = shard_group;
  return s;
}

// A catalog model and topology, the split, and whether gradients are reduced as each
// layer's last backward ends (overlap_grad_reduce).
struct Case {
  std::string model, topology;
  ParallelSplit split;
  bool overlap = true;
};

std::vector<Case> cases() {
  using enum Recompute;
  using models::CpComm;
  return {
      // FSDP, dense, TP with SP: the README's slow searches' winners (megatron-1t on TPUs)
      {"megatron-1t", "tpu-v3", one_stage(32, 8, 1, 64, 1, true, 3, none, 4, CpComm::ring)},
      {"llama3-70b", "dgx-h100", one_stage(16, 8, 1, 32, 1, true, 3, selective)},
      // ZeRO-2, no TP, full recompute, micro-batch size 2, no overlap
      {"llama3-8b", "dgx-a100", one_stage(64, 1, 1, 16, 2, false, 2, full), false},
      // HSDP: shard groups of 8 with replicas across them
      {"llama3-70b", "dgx-h100", one_stage(32, 8, 1, 24, 1, true, 3, none, 1, CpComm::all_gather, 8)},
      // MoE with EP under ZeRO-3, context parallel all-gather
      {"deepseek-v3", "gb200-nvl72", one_stage(32, 4, 8, 16, 1, true, 3, selective, 2, CpComm::all_gather)},
      {"mixtral-8x7b", "dgx-h200", one_stage(16, 1, 8, 40, 1, false, 3, none)},
      // zero bubble on one stage (B and W split; zb-h1 runs with ZeRO 0 or 1, which the
      // fast walk prices in searches: the period walk takes it all the same)
      {"llama3-8b", "dgx-h100",
       one_stage(32, 2, 1, 20, 1, true, 1, none, 1, CpComm::all_gather, 0, ScheduleKind::zb_h1)},
      // many microbatches, a slow fabric (the gathers bound the step)
      {"gpt3-175b", "dgx1-v100", one_stage(64, 8, 1, 256, 1, true, 3, full)},
  };
}

class SimPeriod : public ::testing::TestWithParam<int> {};

TEST_P(SimPeriod, MatchesTheFullEventWalk) {
  const Case c = cases()[GetParam()];
  const models::ModelConfig model = models::load_model(c.model);
  const Topology topology = load_topology(c.topology);
  ASSERT_TRUE(PeriodStep::applies(c.split)) << models::describe(c.split);
  models::StepProgramOptions options = models::gpu_bf16_options();
  options.overlap_grad_reduce = c.overlap;

  TopologyPricer pricer(topology, c.split, "bf16");
  const PeriodStep period(model, c.split, options);
  const std::optional<SimResult> fast = period.simulate(pricer);
  ASSERT_TRUE(fast.has_value()) << "no period found: " << models::describe(c.split);
  EXPECT_GT(fast->jumped_repetitions, 0);

  const SimResult full = simulate({models::build_step_program(model, c.split, 0, options)}, pricer);
  const double tol = 1e-9 * full.step_us;
  const std::string where = c.model + " on " + c.topology + " " + models::describe(c.split);
  EXPECT_NEAR(fast->step_us, full.step_us, tol) << where;
  ASSERT_EQ(fast->stages.size(), 1u);
  const StageTime& a = fast->stages.front();
  const StageTime& b = full.stages.front();
  EXPECT_NEAR(a.finish_us, b.finish_us, tol) << where;
  EXPECT_NEAR(a.compute_us, b.compute_us, tol) << where;
  for (int e = 0; e < kNumExposures; ++e)
    EXPECT_NEAR(a.exposed_us[e], b.exposed_us[e], tol) << where << " " << to_string(static_cast<Exposure>(e));
  for (int k = 0; k < kNumOpKinds; ++k)
    EXPECT_NEAR(a.op_us[k], b.op_us[k], tol) << where << " " << models::to_string(static_cast<models::OpKind>(k));
}

INSTANTIATE_TEST_SUITE_P(Splits, SimPeriod, ::testing::Range(0, static_cast<int>(cases().size())));

// What it does not take: several stages, interleaving, all-forward-all-backward (its
// microbatches' blocks are not one after the other), and too few microbatches to repeat.
TEST(SimPeriod, AppliesToOneStageInTurnOnly) {
  ParallelSplit s = one_stage(8, 1, 1, 32, 1, false, 3, Recompute::none);
  EXPECT_TRUE(PeriodStep::applies(s));
  ParallelSplit piped = s;
  piped.pp = 2;
  EXPECT_FALSE(PeriodStep::applies(piped));
  ParallelSplit afab = s;
  afab.schedule = ScheduleKind::afab;
  EXPECT_FALSE(PeriodStep::applies(afab));
  ParallelSplit few = s;
  few.microbatches = 6;
  EXPECT_FALSE(PeriodStep::applies(few));
}

// Searches price through SplitWalk: a ZeRO-3 split on one stage gets the period walk's
// step time, which is the full walk's.
TEST(SimPeriod, ProjectionUsesIt) {
  const models::ModelConfig model = models::load_model("llama3-70b");
  const Topology topology = load_topology("dgx-h100");
  const ParallelSplit s = one_stage(16, 8, 1, 32, 1, true, 3, Recompute::selective);
  ProjectionOptions options;
  options.keep_sim = true;
  const Projection p = project(model, topology, s, options);
  ASSERT_TRUE(p.priced);
  EXPECT_GT(p.sim.jumped_repetitions, 0);
  Projection full = p;
  price(stage_programs(model, s, options), model, topology, options, full);
  EXPECT_EQ(full.sim.jumped_repetitions, 0);
  EXPECT_NEAR(p.step_s, full.step_s, 1e-9 * p.step_s);
  for (int e = 0; e < kNumExposures; ++e) EXPECT_NEAR(p.exposed_s[e], full.exposed_s[e], 1e-9 * p.step_s);
}

}  // namespace
}  // namespace ibt::topo
