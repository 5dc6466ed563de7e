// DualPipeV in the sim executor: its step against the schedule's makespan, the all-to-alls
// its paired passes hide, and a catalog projection (DeepSeek-V3 on H800).
#include <gtest/gtest.h>

#include <string>

#include "models/plan/model_file.hpp"
#include "models/plan/schedule.hpp"
#include "tests/topologies/sim/sim_test_support.hpp"
#include "topologies/hardware/collective_model.hpp"
#include "topologies/projection/projection.hpp"
#include "topologies/sim/sim_executor.hpp"

namespace ibt::topo {
namespace {

using namespace sim_testing;

// DualPipeV with free communication and only the layers' GEMMs costing time (F = B = W
// per chunk): the sim's step is the schedule's unit-cost makespan scaled by a chunk's
// forward, 6m + (p - 1) passes (schedule.hpp: the last rank's fill).
TEST(SimExecutor, DualPipeVStepIsTheScheduleMakespanWithFreeCommunication) {
  const auto m = sixteen_layer_model();
  LayerGemmPricer pricer(m.layers);
  for (int p : {2, 4, 8}) {
    for (int mb : {2 * p, 2 * p + 3, 24}) {
      models::ParallelSplit s;
      s.pp = p;
      s.vpp = 2;
      s.microbatches = mb;
      s.schedule = models::ScheduleKind::dualpipev;
      SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(mb));
      models::StepProgram stub;
      double f = 0;
      for (const auto& op : models::build_chunk_ops(m, s, 0, 0, models::Pass::forward)) f += pricer.op_us(stub, op);
      ASSERT_GT(f, 0);
      const SimResult r = simulate_split(m, s, pricer);
      for (const auto& st : r.stages) EXPECT_NEAR(st.compute_us, 6.0 * mb * f, 1e-9 * r.step_us);
      const auto unit = models::simulate_pipeline(models::build_schedule(s), 1.0, 1.0, 0.0, 1.0);
      EXPECT_NEAR(r.step_us, unit.makespan * f, 1e-9 * r.step_us);
      EXPECT_NEAR(r.step_us, (6.0 * mb + (p - 1)) * f, 1e-9 * r.step_us);
    }
  }
}

// Layer compute at 1 us per MFLOP and every EP all-to-all (counts, dispatch, combine)
// `ep_us`; the rest free.
class EpCostsPricer : public LayerFlopsPricer {
 public:
  EpCostsPricer(int layers, double ep_us) : LayerFlopsPricer(layers), ep_us_(ep_us) {}
  double op_us(const models::StepProgram& p, const models::Op& op) override {
    if (models::is_comm(op.kind)) return op.group == models::Group::ep ? ep_us_ : 0.0;
    return 1e3 * LayerFlopsPricer::op_us(p, op);
  }

 private:
  double ep_us_;
};

ExposedGroup exposed_ep(const models::ModelConfig& m, const models::ParallelSplit& s, double ep_us) {
  EpCostsPricer pricer(m.layers, ep_us);
  return exposed_time(m, s, pricer, models::Group::ep, Exposure::ep);
}

// DualPipe's point (DeepSeek-V3 report, section 3.2.1, Figure 4): in a paired F&B the
// all-to-all of one chunk runs behind the other chunk's compute. On the same ops (the
// same layers per rank, the same all-to-alls): while a pair's all-to-alls take less
// than its compute (ep_us up to 1 here: a layer's five all-to-alls against ~9 us of
// its forward and backward), DualPipeV exposes clearly less EP time than 1F1B (55-81%
// of it here: the warm-up, ramp-down and step-5 actions run unpaired, a third of them
// at these m); at any cost its step is no longer. (When the all-to-alls outlast the compute, both
// schedules are bound by them; waits that 1F1B books as bubble -- a stage idle for a
// peer held up by its all-to-alls -- DualPipeV's smaller bubble books as EP, so there
// exposed EP plus bubble is what compares.)
TEST(SimExecutor, DualPipeVPairsHideAllToAllsThatOneFOneBExposes) {
  auto m = models::load_model("tiny-moe");
  m.layers = 16;
  for (int p : {2, 4}) {
    for (int mb : {2 * p, 4 * p}) {
      for (double ep_us : {0.0, 0.3, 1.0, 20.0, 500.0}) {
        models::ParallelSplit s;
        s.dp = 2;
        s.ep = 2;
        s.pp = p;
        s.microbatches = mb;
        s.schedule = models::ScheduleKind::one_f_one_b;
        const ExposedGroup plain = exposed_ep(m, s, ep_us);
        s.schedule = models::ScheduleKind::dualpipev;
        s.vpp = 2;
        const ExposedGroup dual = exposed_ep(m, s, ep_us);
        SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(mb) + " ep_us=" + std::to_string(ep_us) +
                     " exposed ep " + std::to_string(dual.exposed_us) + " vs " + std::to_string(plain.exposed_us) +
                     " bubble " + std::to_string(dual.bubble_us) + " vs " + std::to_string(plain.bubble_us) + " step " +
                     std::to_string(dual.step_us) + " vs " + std::to_string(plain.step_us));
        ASSERT_NEAR(dual.collective_us, plain.collective_us, 1e-6);
        EXPECT_LE(dual.exposed_us, dual.collective_us + 1e-6);
        EXPECT_LE(dual.step_us, plain.step_us * (1 + 1e-9));
        EXPECT_LE(dual.exposed_us + dual.bubble_us, plain.exposed_us + plain.bubble_us + 1e-6);
        if (ep_us > 0 && ep_us <= 1.0) {
          EXPECT_LT(dual.exposed_us, 0.85 * plain.exposed_us);
        }
      }
    }
  }
}

// On a catalog topology with every cost priced (DeepSeek-V3's split on H800, scaled
// down): DualPipeV projects, exposes less EP than 1F1B, and is not slower.
TEST(Projection, DualPipeVOnDgxH800HidesExpertParallelTime) {
  const auto m = models::load_model("deepseek-v3");
  const Topology t = load_topology("dgx-h800");
  models::ParallelSplit s;
  s.pp = 16;
  s.dp = 64;
  s.ep = 64;
  s.microbatches = 32;
  s.zero = 1;
  s.schedule = models::ScheduleKind::one_f_one_b;
  ProjectionOptions o;
  o.keep_sim = true;
  const Projection plain = project(m, t, s, o);
  s.schedule = models::ScheduleKind::dualpipev;
  s.vpp = 2;
  const Projection dual = project(m, t, s, o);
  ASSERT_TRUE(plain.priced && dual.priced) << plain.reason << dual.reason;
  double ep_plain = 0, ep_dual = 0;
  for (const auto& st : plain.sim.stages) ep_plain += st.exposed_us[static_cast<int>(Exposure::ep)];
  for (const auto& st : dual.sim.stages) ep_dual += st.exposed_us[static_cast<int>(Exposure::ep)];
  EXPECT_LT(ep_dual, ep_plain);
  EXPECT_LT(dual.step_s, plain.step_s);
}

}  // namespace
}  // namespace ibt::topo
