// The sim executor against closed forms: pure data parallelism without overlap, and the
// pipeline bubble of 1F1B and interleaved 1F1B with free communication.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"
#include "models/plan/accounting.hpp"
#include "models/plan/model_file.hpp"
#include "models/plan/schedule.hpp"
#include "tests/topologies/sim/sim_test_support.hpp"
#include "topologies/hardware/collective_model.hpp"
#include "topologies/projection/projection.hpp"
#include "topologies/projection/projection_report.hpp"
#include "topologies/sim/sim_executor.hpp"
#include "topologies/sim/sim_pricer.hpp"

namespace ibt::topo {
namespace {

using models::OpKind;
using namespace sim_testing;

double bubble_fraction(const models::ModelConfig& m, const models::ParallelSplit& s) {
  const auto schedule = models::build_schedule(s);
  std::vector<models::StepProgram> programs;
  for (int st = 0; st < s.pp; ++st) programs.push_back(models::build_step_program(m, s, schedule, st * s.tp * s.dp));
  LayerFlopsPricer pricer(m.layers);
  const SimResult r = simulate(programs, pricer);
  const double busy = r.stages.front().compute_us;  // m * (F + B) on every stage
  for (const auto& st : r.stages) EXPECT_NEAR(st.compute_us, busy, 1e-9 * busy);
  return (r.step_us - busy) / busy;
}

TEST(SimExecutor, OneFOneBBubbleIsPMinusOneOverM) {
  const auto m = models::load_model("tiny-dense");
  for (int p : {2, 4}) {
    for (int mb : {4, 8, 16}) {
      if (m.layers % p) continue;
      models::ParallelSplit s;
      s.pp = p;
      s.microbatches = mb;
      s.schedule = models::ScheduleKind::one_f_one_b;
      SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(mb));
      EXPECT_NEAR(bubble_fraction(m, s), (p - 1.0) / mb, 1e-9);
    }
  }
}

TEST(SimExecutor, InterleavedBubbleIsPMinusOneOverVM) {
  const auto m = sixteen_layer_model();
  for (int p : {2, 4}) {
    for (int v : {2, 4}) {
      for (int mb : {p, 2 * p, 4 * p}) {
        models::ParallelSplit s;
        s.pp = p;
        s.vpp = v;
        s.microbatches = mb;
        s.schedule = models::ScheduleKind::interleaved;
        SCOPED_TRACE("p=" + std::to_string(p) + " v=" + std::to_string(v) + " m=" + std::to_string(mb));
        EXPECT_NEAR(bubble_fraction(m, s), (p - 1.0) / (v * mb), 1e-9);
      }
    }
  }
}

// ZB-H1 with F = B = W and free communication: the step is 3m + (p - 1) passes, a bubble
// of (p-1)/(3m) of the compute, a third of 1F1B's (p-1)/m on the same split (the
// authors' table, huggingface.co/spaces/sail/zero-bubble-pipeline-parallellism,
// description2.md, "Bubble Rate").
TEST(SimExecutor, ZeroBubbleH1BubbleIsAThirdOfOneFOneB) {
  const auto m = sixteen_layer_model();
  LayerGemmPricer pricer(m.layers);
  for (int p : {2, 4, 8}) {
    for (int mb : {p, 2 * p, 16}) {
      models::ParallelSplit s;
      s.pp = p;
      s.microbatches = mb;
      s.schedule = models::ScheduleKind::zb_h1;
      SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(mb));
      const SimResult zb = simulate_split(m, s, pricer);
      const double busy = zb.stages.front().compute_us;  // 3m passes on every stage
      for (const auto& st : zb.stages) EXPECT_NEAR(st.compute_us, busy, 1e-9 * busy);
      EXPECT_NEAR((zb.step_us - busy) / busy, (p - 1.0) / (3.0 * mb), 1e-9);
      s.schedule = models::ScheduleKind::one_f_one_b;
      const SimResult plain = simulate_split(m, s, pricer);
      EXPECT_NEAR(plain.stages.front().compute_us, busy, 1e-9 * busy);
      EXPECT_NEAR((plain.step_us - busy) / busy, (p - 1.0) / mb, 1e-9);
    }
  }
}

// Layer compute at 1 us per MFLOP (tiny-dense's layers then take tens of us), and every
// tensor-parallel collective 1 us.
class TpCostsOneUsPricer : public LayerFlopsPricer {
 public:
  using LayerFlopsPricer::LayerFlopsPricer;
  double op_us(const models::StepProgram& p, const models::Op& op) override {
    if (models::is_comm(op.kind)) return op.group == models::Group::tp ? 1.0 : 0.0;
    return 1e3 * LayerFlopsPricer::op_us(p, op);
  }
};

// With sequence parallelism a stage's backward starts with a TP collective that waits
// for the pipeline receive: the idle time before it is bubble, and exposed TP can never
// exceed the time the TP collectives themselves take.
TEST(SimExecutor, PipelineIdleBeforeATensorParallelCollectiveIsBubble) {
  const auto m = models::load_model("tiny-dense");
  models::ParallelSplit s;
  s.tp = 2;
  s.pp = 2;
  s.microbatches = 4;
  s.sequence_parallel = true;
  s.schedule = models::ScheduleKind::one_f_one_b;
  const auto schedule = models::build_schedule(s);
  std::vector<models::StepProgram> programs;
  for (int st = 0; st < s.pp; ++st) programs.push_back(models::build_step_program(m, s, schedule, st * s.tp));
  TpCostsOneUsPricer pricer(m.layers);
  const SimResult r = simulate(programs, pricer);
  for (int st = 0; st < s.pp; ++st) {
    double tp_us = 0;
    for (const auto& op : programs[static_cast<size_t>(st)].ops)
      if (models::is_comm(op.kind) && op.group == models::Group::tp) tp_us += 1.0;
    ASSERT_GT(tp_us, 0);
    const StageTime& t = r.stages[static_cast<size_t>(st)];
    SCOPED_TRACE("stage " + std::to_string(st));
    EXPECT_LE(t.exposed_us[static_cast<int>(Exposure::tp)], tp_us + 1e-9);
    EXPECT_GT(t.exposed_us[static_cast<int>(Exposure::bubble)], 0.2 * t.compute_us);  // (p-1)/m = 25%
  }
}

// Layer compute at 1 us per MFLOP, every TP collective 1 us and every pipeline
// transfer `exchange_us`: communication that costs something.
class TpAndPipelineCostsPricer : public TpCostsOneUsPricer {
 public:
  TpAndPipelineCostsPricer(int layers, double exchange_us) : TpCostsOneUsPricer(layers), exchange_us_(exchange_us) {}
  double exchange_half_us(const models::StepProgram&, const models::Op&, int) override { return exchange_us_; }

 private:
  double exchange_us_;
};

ExposedGroup exposed_tp(const models::ModelConfig& m, const models::ParallelSplit& s, double exchange_us) {
  TpAndPipelineCostsPricer pricer(m.layers, exchange_us);
  return exposed_time(m, s, pricer, models::Group::tp, Exposure::tp);
}

// Interleaving runs the same TP collectives (v chunks of L/(p v) layers instead of one
// of L/p), so it can never expose more of them than 1F1B does; pipeline transfers
// waiting for their peer must not hold up the TP collectives behind them. (Before the
// pipeline exchanges had a stream of their own, a blocked send delayed the next
// action's TP collectives, and interleaving showed 4-9x the exposed TP of 1F1B.)
TEST(SimExecutor, InterleavingNeverExposesMoreTensorParallelTimeThanOneFOneB) {
  const auto m = sixteen_layer_model();
  for (bool sp : {false, true}) {
    for (int p : {2, 4}) {
      for (int mb : {p, 2 * p, 4 * p}) {
        for (double exchange_us : {0.0, 5.0, 200.0}) {
          models::ParallelSplit s;
          s.tp = 2;
          s.pp = p;
          s.microbatches = mb;
          s.sequence_parallel = sp;
          s.schedule = models::ScheduleKind::one_f_one_b;
          const ExposedGroup plain = exposed_tp(m, s, exchange_us);
          s.schedule = models::ScheduleKind::interleaved;
          s.vpp = 2;
          const ExposedGroup inter = exposed_tp(m, s, exchange_us);
          SCOPED_TRACE("sp=" + std::to_string(sp) + " p=" + std::to_string(p) + " m=" + std::to_string(mb) +
                       " exchange=" + std::to_string(exchange_us));
          ASSERT_NEAR(inter.collective_us, plain.collective_us, 1e-9);
          EXPECT_LE(inter.exposed_us, plain.exposed_us + 1e-6);
          EXPECT_LE(inter.exposed_us, inter.collective_us + 1e-6);
          // With cheap transfers the smaller bubble wins.
          if (exchange_us <= 5.0) {
            EXPECT_LT(inter.step_us, plain.step_us);
          }
        }
      }
    }
  }
}

// The same on a catalog topology (Megatron's Llama 3 70B setting on DGX H100): the
// interleaved schedule is faster than 1F1B, with a smaller bubble and no more exposed
// TP time.
// Megatron's Llama 3 70B setting on DGX H100 (128 GPUs): tp8 sp pp4 dp4, selective
// recompute, 1F1B with mb microbatches.
models::ParallelSplit llama3_70b_tp8_pp4(int mb) {
  models::ParallelSplit s;
  s.tp = 8;
  s.pp = 4;
  s.dp = 4;
  s.microbatches = mb;
  s.sequence_parallel = true;
  s.recompute = models::Recompute::selective;
  s.schedule = models::ScheduleKind::one_f_one_b;
  return s;
}

TEST(Projection, InterleavingBeatsOneFOneBOnDgxH100) {
  const auto m = models::load_model("llama3-70b");
  const Topology t = load_topology("dgx-h100");
  for (int mb : {8, 16, 32}) {
    models::ParallelSplit s = llama3_70b_tp8_pp4(mb);
    ProjectionOptions o;
    o.keep_sim = true;
    const Projection plain = project(m, t, s, o);
    s.schedule = models::ScheduleKind::interleaved;
    s.vpp = 2;
    const Projection inter = project(m, t, s, o);
    ASSERT_TRUE(plain.feasible && inter.feasible) << plain.reason << inter.reason;
    SCOPED_TRACE("m=" + std::to_string(mb));
    EXPECT_LT(inter.step_s, plain.step_s);
    EXPECT_LT(inter.exposed_s[static_cast<int>(Exposure::bubble)], plain.exposed_s[static_cast<int>(Exposure::bubble)]);
    double tp_plain = 0, tp_inter = 0;
    for (const auto& st : plain.sim.stages) tp_plain += st.exposed_us[static_cast<int>(Exposure::tp)];
    for (const auto& st : inter.sim.stages) tp_inter += st.exposed_us[static_cast<int>(Exposure::tp)];
    EXPECT_LE(tp_inter, tp_plain * 1.0001 + 1e-3);
  }
}

// With B and W unequal (every layer op at its FLOPs: the attention core's backward is
// all B, so B > W) and free communication, ZB-H1's bubble is (p-1)(F + B - 2W) with B the
// whole backward (B + W here): the "ZB1P" row of the DualPipe repository's table
// (github.com/deepseek-ai/DualPipe, README.md, "Pipeline Bubbles and Memory Usage
// Comparison"); 1F1B's row is (p-1)(F + B).
TEST(SimExecutor, ZeroBubbleH1BubbleMatchesTheCostModelWithUnequalPasses) {
  const auto m = sixteen_layer_model();
  LayerFlopsPricer pricer(m.layers);
  for (int p : {2, 4}) {
    for (int mb : {p, 3 * p + 1}) {
      models::ParallelSplit s;
      s.pp = p;
      s.microbatches = mb;
      s.schedule = models::ScheduleKind::zb_h1;
      SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(mb));
      models::StepProgram stub;
      auto cost = [&](models::Pass pass) {
        double us = 0;
        for (const auto& op : models::build_chunk_ops(m, s, 0, 0, pass)) us += pricer.op_us(stub, op);
        return us;
      };
      const double f = cost(models::Pass::forward), b = cost(models::Pass::backward), w = cost(models::Pass::weight);
      ASSERT_GT(b, w);
      const SimResult zb = simulate_split(m, s, pricer);
      EXPECT_NEAR(zb.step_us, mb * (f + b + w) + (p - 1) * (f + (b + w) - 2 * w), 1e-9 * zb.step_us);
      s.schedule = models::ScheduleKind::one_f_one_b;
      EXPECT_NEAR(simulate_split(m, s, pricer).step_us, mb * (f + b + w) + (p - 1) * (f + b + w), 1e-9 * zb.step_us);
    }
  }
}

// On a catalog topology with every cost (TP, the pipeline transfers, the attention core
// in B): ZB-H1 is never slower than 1F1B on the same split, and its bubble is smaller.
TEST(Projection, ZeroBubbleH1NeverSlowerThanOneFOneBOnDgxH100) {
  const auto m = models::load_model("llama3-70b");
  const Topology t = load_topology("dgx-h100");
  for (int mb : {4, 8, 16, 32}) {
    models::ParallelSplit s = llama3_70b_tp8_pp4(mb);
    ProjectionOptions o;
    const Projection plain = project(m, t, s, o);
    s.schedule = models::ScheduleKind::zb_h1;
    const Projection zb = project(m, t, s, o);
    ASSERT_TRUE(plain.feasible && zb.feasible) << plain.reason << zb.reason;
    SCOPED_TRACE("m=" + std::to_string(mb));
    EXPECT_LE(zb.step_s, plain.step_s);
    EXPECT_LT(zb.exposed_s[static_cast<int>(Exposure::bubble)], plain.exposed_s[static_cast<int>(Exposure::bubble)]);
    // The same FLOPs (B + W is the unsplit backward); the split adds a kernel per GEMM.
    EXPECT_NEAR(zb.compute_s / plain.compute_s, 1.0, 0.05);
  }
}

TEST(SimExecutor, PureDataParallelWithoutOverlapEqualsTheClosedForm) {
  const auto m = models::load_model("tiny-dense");
  Topology t = load_topology("dgx-a100");
  t.scale_up.algorithms = {Algorithm::ring};
  t.device.memory_bandwidth_GBps.value = 1e15;  // compute-bound: time = FLOPs / rate
  t.model.op_overhead_us.value = 0;
  // The closed form prices every FLOP at one rate: without the device's GEMM tiles
  // (tiny-dense's GEMMs are a fraction of a wave; gemm_shape_test prices tiles).
  t.device.gemm_tiles.reset();
  models::ParallelSplit s;
  s.dp = 8;
  s.microbatches = 2;
  ProjectionOptions o;
  o.overlap_grad_reduce = false;
  const Projection p = project(m, t, s, o);
  ASSERT_TRUE(p.feasible) << p.reason;

  // Closed form: all compute (model FLOPs of one replica + AdamW at 12 FLOPs per
  // parameter), then one ring all-reduce per layer bucket (+ embedding and head).
  const auto params = models::count_parameters(m);
  const double rate = 312e6 * t.model.gemm_efficiency.get();  // FLOP per us (the catalog's fitted GEMM efficiency)
  const double flops = models::model_flops_per_step(m, s.global_batch()) / s.dp + 12.0 * params.total;
  const double buckets = m.layers + 2;
  const double L = 8.4, a = 0.47, B = 300 * 0.8 * 1e3;  // bytes per us
  const double allreduce = buckets * (L + 14 * a) + 2.0 * 7 / 8 * (2.0 * params.total) / B;
  const double expected_us = flops / rate + allreduce;
  EXPECT_NEAR(p.step_s * 1e6, expected_us, 1e-6 * expected_us);
  EXPECT_NEAR(p.exposed_s[static_cast<int>(Exposure::dp)] * 1e6, allreduce, 1e-6 * expected_us);
}

// The printed projection shows every stage and names the bottleneck: the stage with
// the least idle time (the busiest).
TEST(Projection, EveryStageIsPrintedWithTheBottleneck) {
  const auto m = models::load_model("llama3-70b");
  const Topology t = load_topology("dgx-h100");
  models::ParallelSplit s;
  s.tp = 8;
  s.pp = 4;
  s.dp = 4;
  s.microbatches = 16;
  s.sequence_parallel = true;
  s.recompute = models::Recompute::selective;
  ProjectionOptions o;
  o.keep_sim = true;
  const Projection p = project(m, t, s, o);
  ASSERT_TRUE(p.feasible) << p.reason;
  ASSERT_EQ(p.sim.stages.size(), 4u);
  size_t busiest = 0;
  for (size_t i = 1; i < p.sim.stages.size(); ++i)
    if (p.sim.stages[i].exposed_us[static_cast<int>(Exposure::bubble)] <
        p.sim.stages[busiest].exposed_us[static_cast<int>(Exposure::bubble)])
      busiest = i;
  const std::string text = describe_projection(p, "bf16");
  EXPECT_NE(text.find("bottleneck   stage " + std::to_string(busiest) + ":"), std::string::npos) << text;
  for (int st = 0; st < 4; ++st)
    EXPECT_NE(text.find("\n      " + std::to_string(st) + " "), std::string::npos) << "stage " << st << "\n" << text;
}

TEST(Projection, MemoryAccountingRejectsAModelThatCannotFit) {
  const auto m = models::load_model("llama3-405b");
  const Topology t = load_topology("dgx-a100");
  models::ParallelSplit s;
  s.tp = 8;
  s.microbatches = 1;
  const Projection p = project(m, t, s);
  EXPECT_FALSE(p.feasible);
  EXPECT_NE(p.reason.find("needs"), std::string::npos) << p.reason;
  EXPECT_NE(p.reason.find("usable"), std::string::npos) << p.reason;
  EXPECT_GT(p.memory.total(), p.memory_capacity_bytes);
  // The search reports every split, infeasible ones with their reasons, none dropped.
  const auto all = project_all(m, t, 8, default_search(t, 8));
  ASSERT_FALSE(all.empty());
  for (const auto& q : all) {
    EXPECT_FALSE(q.feasible);
    EXPECT_FALSE(q.reason.empty());
  }
}

// A topology that prices nothing between its domains (local-cpu: one machine of 2 cores,
// no scale_out, no fits between domains) cannot carry a job of more than one domain:
// a search refuses every split that fits with that reason, at once, whether it prices
// every split or only the best, and keeps the memory of each. On one domain it prices.
TEST(Projection, SearchBeyondADomainWithoutScaleOutRefusesEverySplitThatFits) {
  const auto m = models::load_model("tiny-dense");
  const Topology t = load_topology("local-cpu");
  ASSERT_FALSE(t.scale_out.present);
  ASSERT_EQ(t.domain_size(), 2);
  for (const size_t keep_best : {size_t{0}, size_t{5}}) {
    SearchRun run;
    run.keep_best = keep_best;
    const auto all = project_all(m, t, 4, default_search(t, 8), ProjectionOptions{}, run);
    size_t fitting = 0;
    for (const auto& q : all) {
      EXPECT_FALSE(q.feasible);
      EXPECT_FALSE(q.priced);
      if (!q.fits_memory) continue;
      ++fitting;
      EXPECT_GT(q.memory.total(), 0.0);
      EXPECT_NE(q.reason.find("4 devices span 2 scale-up domains of 2, every split has a group across two of them"),
                std::string::npos)
          << q.reason;
    }
    EXPECT_GT(fitting, 3u);
    const auto one_domain = project_all(m, t, 2, default_search(t, 8), ProjectionOptions{}, run);
    ASSERT_FALSE(one_domain.empty());
    EXPECT_TRUE(one_domain.front().feasible) << one_domain.front().reason;
  }
}

TEST(Projection, BreakdownAddsUpToTheStepTime) {
  const auto m = models::load_model("llama3-70b");
  const Topology t = load_topology("dgx-h100");
  models::ParallelSplit s;
  s.tp = 8;
  s.pp = 4;
  s.dp = 8;
  s.microbatches = 16;
  s.sequence_parallel = true;
  s.zero = 1;
  s.recompute = models::Recompute::selective;
  const Projection p = project(m, t, s);
  ASSERT_TRUE(p.feasible) << p.reason;
  double sum = p.compute_s;
  for (double e : p.exposed_s) sum += e;
  EXPECT_NEAR(sum, p.step_s, 1e-9 * p.step_s);
  EXPECT_GT(p.mfu, 0.05);
  EXPECT_LT(p.mfu, 1.0);
  EXPECT_GT(p.hfu, p.mfu);
}

}  // namespace
}  // namespace ibt::topo
