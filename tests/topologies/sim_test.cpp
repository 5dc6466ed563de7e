// The sim executor against closed forms: pure data parallelism without overlap, and the
// pipeline bubble of 1F1B and interleaved 1F1B with free communication.
#include <gtest/gtest.h>

#include <cmath>

#include "models/accounting.hpp"
#include "models/model_file.hpp"
#include "models/schedule.hpp"
#include "topologies/collective_model.hpp"
#include "topologies/projection.hpp"
#include "topologies/sim_executor.hpp"

namespace ibt::topo {
namespace {

using models::OpKind;

// Transformer-layer compute costs its FLOPs (1 us per GFLOP); everything else --
// embedding, head, optimizer, communication -- is free. Forward chunk F, backward 2F.
class LayerFlopsPricer : public OpPricer {
 public:
  explicit LayerFlopsPricer(int layers) : layers_(layers) {}
  double op_us(const models::StepProgram&, const models::Op& op) override {
    if (models::is_comm(op.kind) || op.layer < 0 || op.layer >= layers_) return 0.0;
    return op.flops * 1e-9;
  }
  double exchange_half_us(const models::StepProgram&, const models::Op&, int) override { return 0.0; }

 private:
  int layers_;
};

double bubble_fraction(const models::ModelConfig& m, const models::ParallelSplit& s) {
  const auto schedule = models::build_schedule(s);
  std::vector<models::StepProgram> programs;
  for (int st = 0; st < s.pp; ++st)
    programs.push_back(models::build_step_program(m, s, schedule, st * s.tp * s.dp));
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
  const auto m = models::load_model("tiny-dense");
  const int p = 2, v = 2;
  ASSERT_EQ(m.layers % (p * v), 0);
  for (int mb : {4, 8}) {
    models::ParallelSplit s;
    s.pp = p;
    s.vpp = v;
    s.microbatches = mb;
    s.schedule = models::ScheduleKind::interleaved;
    SCOPED_TRACE("m=" + std::to_string(mb));
    EXPECT_NEAR(bubble_fraction(m, s), (p - 1.0) / (v * mb), 1e-9);
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

TEST(SimExecutor, PureDataParallelWithoutOverlapEqualsTheClosedForm) {
  const auto m = models::load_model("tiny-dense");
  Topology t = load_topology("dgx-a100");
  t.scale_up.algorithms = {Algorithm::ring};
  t.device.memory_bandwidth_GBps.value = 1e15;  // compute-bound: time = FLOPs / rate
  t.model.op_overhead_us.value = 0;
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
  const double rate = 312e6 * 0.72;  // FLOP per us
  const double flops = models::model_flops_per_step(m, s.global_batch()) / s.dp + 12.0 * params.total;
  const double buckets = m.layers + 2;
  const double L = 8.4, a = 0.47, B = 300 * 0.8 * 1e3;  // bytes per us
  const double allreduce = buckets * (L + 14 * a) + 2.0 * 7 / 8 * (2.0 * params.total) / B;
  const double expected_us = flops / rate + allreduce;
  EXPECT_NEAR(p.step_s * 1e6, expected_us, 1e-6 * expected_us);
  EXPECT_NEAR(p.exposed_s[static_cast<int>(Exposure::dp)] * 1e6, allreduce, 1e-6 * expected_us);
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
