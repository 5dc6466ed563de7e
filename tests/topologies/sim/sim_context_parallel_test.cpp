// The sim's context parallelism against closed forms: with a pricer where compute costs
// its FLOPs and every CP message a fixed time, the ring hides its K/V passes behind the
// attention of the block in hand when a pass is shorter than a block's attention (only
// the last dK/dV pass of each layer's backward shows), exposes them when it is longer,
// and the all-gather variant never hides its gather and reduce-scatter. Then the
// topology pricer: CP inside a scale-up domain vs across the network.
#include <gtest/gtest.h>

#include "models/plan/model_file.hpp"
#include "models/plan/schedule.hpp"
#include "models/plan/step_program.hpp"
#include "topologies/projection/projection.hpp"
#include "topologies/sim/sim_executor.hpp"
#include "topologies/sim/sim_pricer.hpp"

namespace ibt::topo {
namespace {

using models::OpKind;

// Compute: 1 us per MFLOP; CP ops: pass_us each; every other collective free.
class CpPricer : public OpPricer {
 public:
  explicit CpPricer(double pass_us) : pass_us_(pass_us) {}
  double op_us(const models::StepProgram&, const models::Op& op) override {
    if (op.group == models::Group::cp) return pass_us_;
    if (models::is_comm(op.kind)) return 0.0;
    return op.flops * 1e-6;
  }
  double exchange_half_us(const models::StepProgram&, const models::Op&, int) override { return 0.0; }

 private:
  double pass_us_;
};

double exposed_cp_us(const models::ModelConfig& m, const models::ParallelSplit& s, double pass_us) {
  const auto program = models::build_step_program(m, s, 0);
  CpPricer pricer(pass_us);
  const SimResult r = simulate({program}, pricer);
  return r.stages.front().exposed_us[static_cast<int>(Exposure::cp)];
}

// The smallest attention-core part of the rank's program (a ring step's compute).
double shortest_core_part_us(const models::ModelConfig& m, const models::ParallelSplit& s) {
  double best = 1e300;
  for (const auto& op : models::build_step_program(m, s, 0).ops)
    if (op.kind == OpKind::attention_core) best = std::min(best, op.flops * 1e-6);
  return best;
}

models::ParallelSplit cp_split(int cp, models::CpComm comm, int microbatches) {
  models::ParallelSplit s;
  s.cp = cp;
  s.cp_comm = comm;
  s.microbatches = microbatches;
  return s;
}

TEST(SimContextParallel, RingHidesPassesShorterThanABlocksAttention) {
  const auto m = models::load_model("tiny-dense");
  const auto s = cp_split(4, models::CpComm::ring, 2);
  const double part = shortest_core_part_us(m, s);
  const double pass = 0.25 * part;
  // Only the last dK/dV pass of each layer's backward, after its last block, is exposed.
  EXPECT_NEAR(exposed_cp_us(m, s, pass), m.layers * s.microbatches * pass, 1e-9);
}

TEST(SimContextParallel, RingExposesPassesLongerThanABlocksAttention) {
  const auto m = models::load_model("tiny-dense");
  const auto s = cp_split(4, models::CpComm::ring, 2);
  const double pass = 10 * shortest_core_part_us(m, s);
  // Forward: cp-1 passes each longer than the part before it: at least their excess.
  EXPECT_GT(exposed_cp_us(m, s, pass), m.layers * s.microbatches * (s.cp - 1) * (pass - pass / 10));
}

TEST(SimContextParallel, AllGatherIsNeverHidden) {
  const auto m = models::load_model("tiny-dense");
  const auto s = cp_split(4, models::CpComm::all_gather, 2);
  for (double pass : {0.01, 1000.0})  // one gather forward, one reduce-scatter backward per layer
    EXPECT_NEAR(exposed_cp_us(m, s, pass), 2.0 * m.layers * s.microbatches * pass, 1e-9 * pass);
}

TEST(SimContextParallel, CpInsideTheDomainIsCheaperThanAcrossIt) {
  auto m = models::load_model("llama3-70b");
  const Topology t = load_topology("dgx-h100");  // 8 GPUs per domain
  models::ParallelSplit in = cp_split(8, models::CpComm::all_gather, 1);
  in.dp = 2;  // cp 8 inside a node, dp across two
  models::ParallelSplit across = in;
  across.tp = 8;  // tp 8 fills the node: each CP peer in another node
  across.dp = 1;
  across.cp = 2;
  TopologyPricer pin(t, in, "bf16"), pacross(t, across, "bf16");
  EXPECT_TRUE(pin.placement(models::Group::cp).intra());
  EXPECT_FALSE(pacross.placement(models::Group::cp).intra());
  models::Op pass;
  pass.kind = OpKind::cp_kv_pass;
  pass.group = models::Group::cp;
  pass.bytes = 64e6;
  const models::StepProgram none;
  EXPECT_LT(pin.op_us(none, pass), pacross.op_us(none, pass));
  // The gradient groups: dp x cp spans both nodes in the first split.
  EXPECT_EQ(pin.placement(models::Group::dp_cp).n, 16);
  EXPECT_EQ(pin.placement(models::Group::dp_cp).per_domain, 8);
}

TEST(SimContextParallel, ProjectionBreakdownAddsUpWithCp) {
  const auto m = models::load_model("llama3-70b");
  const Topology t = load_topology("dgx-h100");
  for (auto comm : {models::CpComm::all_gather, models::CpComm::ring}) {
    models::ParallelSplit s = cp_split(4, comm, 8);
    s.tp = 8;
    s.pp = 2;  // the sim's rank per stage skips the CP peers too
    s.dp = 2;
    s.sequence_parallel = true;
    s.zero = 1;
    const Projection p = project(m, t, s);
    ASSERT_TRUE(p.feasible) << p.reason;
    double sum = p.compute_s;
    for (double e : p.exposed_s) sum += e;
    EXPECT_NEAR(sum, p.step_s, 1e-9 * p.step_s);
    EXPECT_GT(p.mfu, 0.05);
    EXPECT_LT(p.mfu, 1.0);
  }
}

}  // namespace
}  // namespace ibt::topo
