// The fast walk (topologies/sim/sim_fast.hpp) against the full event walk (simulate() on
// the full step programs) on real catalog models and topologies: dense, MoE with EP,
// interleaved at depths 2 and 4, uneven stages (61 layers), recompute, ZeRO-1, sequence
// parallelism, micro-batch size > 1, context parallelism (ring and all-gather), overlapped and non-overlapped gradient
// reduction, the zero-bubble schedule zb-h1 (split backwards). Walked op by op (StageDetail::all) the result must be
// bitwise equal; with summaries (StageDetail::first, what searches use) the step time and the first stage's breakdown
// must agree to 1e-9 of the step time (sim_fast.hpp states the bound), also where the walk jumps over repetitions of a
// long steady state.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/errors.hpp"
#include "models/plan/model_file.hpp"
#include "models/plan/schedule.hpp"
#include "models/plan/step_program.hpp"
#include "topologies/projection/projection.hpp"
#include "topologies/sim/sim_executor.hpp"
#include "topologies/sim/sim_fast.hpp"
#include "topologies/sim/sim_pricer.hpp"

namespace ibt::topo {
namespace {

using models::ParallelSplit;
using models::Recompute;
using models::ScheduleKind;

struct Case {
  std::string model, topology;
  ParallelSplit split;
  bool overlap = true;
  // The summaries reach the schedule's steady state and jump over repetitions of it
  // (SimResult::jumped_repetitions). Short schedules, and some whose stages drift apart
  // slowly for longer than the schedule runs, are walked through.
  bool jumps = false;
};

ParallelSplit split(int dp, int tp, int pp, int ep, int vpp, int m, int mbs, ScheduleKind k, bool sp, int zero,
                    Recompute r) {
  return ParallelSplit{dp, tp, pp, ep, vpp, m, mbs, k, sp, zero, r};
}

ParallelSplit with_cp(ParallelSplit s, int cp, models::CpComm comm) {
  s.cp = cp;
  s.cp_comm = comm;
  return s;
}

// Schedules whose indexes the tests read: 1F1B, interleaved 2 and 4 deep, ZB-H1, AFAB,
// and one stage.
std::vector<ParallelSplit> indexed_schedules() {
  struct Shape {
    ScheduleKind kind;
    int p, v, m;
  };
  std::vector<ParallelSplit> out;
  for (const Shape c : {Shape{ScheduleKind::one_f_one_b, 4, 1, 8}, Shape{ScheduleKind::interleaved, 4, 2, 8},
                        Shape{ScheduleKind::interleaved, 3, 4, 9}, Shape{ScheduleKind::zb_h1, 5, 1, 7},
                        Shape{ScheduleKind::zb_h1, 1, 1, 3}, Shape{ScheduleKind::afab, 3, 1, 4},
                        Shape{ScheduleKind::one_f_one_b, 1, 1, 3}}) {
    ParallelSplit split;
    split.schedule = c.kind;
    split.pp = c.p;
    split.vpp = c.v;
    split.microbatches = c.m;
    out.push_back(split);
  }
  return out;
}

std::vector<Case> cases() {
  using enum ScheduleKind;
  return {
      // dense, 1F1B, even stages
      {"llama3-8b", "dgx-h100", split(2, 8, 4, 1, 1, 8, 1, one_f_one_b, true, true, Recompute::none)},
      // dense, no SP, full recompute, no overlap, afab
      {"llama3-8b", "dgx-a100", split(4, 2, 2, 1, 1, 4, 2, afab, false, false, Recompute::full), false},
      // dense, interleaved depth 4, selective recompute, micro-batch size 2
      {"llama3-70b", "dgx-h100", split(2, 8, 4, 1, 4, 8, 2, interleaved, true, true, Recompute::selective)},
      // MoE with EP and MLA, uneven stages (61 layers on 8 stages), 1F1B
      {"deepseek-v3", "dgx-h100", split(8, 8, 8, 8, 1, 16, 1, one_f_one_b, true, true, Recompute::none)},
      // MoE, interleaved depth 2 over uneven virtual stages, full recompute, scale-up domain 72
      {"kimi-k2", "gb200-nvl72", split(4, 4, 4, 4, 2, 8, 1, interleaved, true, false, Recompute::full)},
      // MoE without TP, pipeline only, no overlap
      {"mixtral-8x7b", "dgx-h200", split(8, 1, 4, 8, 1, 8, 1, one_f_one_b, false, true, Recompute::none), false},
      // many microbatches, so that the steady state repeats (memoised breakdowns)
      {"deepseek-v3", "dgx-b200", split(4, 8, 16, 4, 1, 128, 1, one_f_one_b, true, true, Recompute::selective)},
      {"llama3-405b", "gb200-nvl72", split(2, 8, 8, 1, 4, 64, 1, interleaved, true, true, Recompute::none)},
      {"gpt3-175b", "tpu-v5p", split(4, 32, 8, 1, 1, 96, 1, one_f_one_b, true, false, Recompute::full), false, true},
      // context parallelism: ring and all-gather attention, with PP and interleaving
      {"llama3-70b", "dgx-h100",
       with_cp(split(2, 4, 4, 1, 2, 8, 1, interleaved, true, true, Recompute::selective), 2, models::CpComm::ring)},
      {"deepseek-v3", "gb200-nvl72",
       with_cp(split(4, 4, 8, 4, 1, 16, 1, one_f_one_b, true, true, Recompute::none), 4, models::CpComm::all_gather)},
      // no pipeline: one stage, data + expert parallel
      {"tiny-moe", "dgx-h100", split(8, 1, 1, 4, 1, 4, 1, one_f_one_b, false, true, Recompute::selective)},
      // replicated KV heads (8 KV heads at tp16: tp_kv gradient sums) and a parallel block
      {"llama3-70b", "gb200-nvl72", split(2, 16, 2, 1, 1, 8, 1, one_f_one_b, true, true, Recompute::selective)},
      {"gpt-j-6b", "dgx-h100", split(4, 8, 2, 1, 2, 8, 1, interleaved, true, false, Recompute::full)},
      // context parallel: ring K/V passes (overlapped) and the all-gather variant
      {"llama3-70b", "dgx-h100",
       with_cp(split(2, 4, 4, 1, 2, 8, 1, interleaved, true, true, Recompute::selective), 4, models::CpComm::ring)},
      {"deepseek-v3", "gb200-nvl72",
       with_cp(split(8, 4, 4, 4, 1, 8, 1, one_f_one_b, true, true, Recompute::none), 2, models::CpComm::all_gather)},
      {"llama3-8b", "tpu-v5p",
       with_cp(split(1, 2, 1, 1, 1, 4, 1, one_f_one_b, true, false, Recompute::full), 8, models::CpComm::ring), false},
      // zero bubble (W passes deferred): overlapped reductions after each chunk's last W,
      // and MoE with EP, uneven stages and no overlap
      {"llama3-70b", "dgx-h100", split(2, 8, 4, 1, 1, 16, 1, zb_h1, true, true, Recompute::selective)},
      {"deepseek-v3", "dgx-h100", split(8, 8, 8, 8, 1, 16, 1, zb_h1, true, false, Recompute::none), false},
      // long steady states of the zero-bubble and interleaved schedules: the packed
      // per-action records (ScheduleIndex::steps) read deep into their exchanges
      {"llama3-70b", "dgx-h100", split(2, 8, 4, 1, 1, 64, 1, zb_h1, true, true, Recompute::selective), true, true},
      {"deepseek-v3", "dgx-b200", split(4, 8, 8, 4, 2, 64, 1, interleaved, true, true, Recompute::none)},
      // steady states of hundreds of repetitions (1F1B, interleaved, zero bubble; dense
      // and MoE; a deep pipeline), most of them jumped over
      {"llama3-70b", "dgx-h100", split(2, 8, 4, 1, 1, 256, 1, one_f_one_b, true, true, Recompute::selective), true,
       true},
      {"llama3-70b", "dgx-h100", split(2, 8, 4, 1, 2, 256, 1, interleaved, true, true, Recompute::selective), true,
       true},
      {"deepseek-v3", "dgx-h100", split(8, 8, 8, 8, 1, 256, 1, zb_h1, true, false, Recompute::none), false, true},
      {"llama3-70b", "dgx-h100", split(1, 8, 8, 1, 1, 512, 1, one_f_one_b, true, false, Recompute::full), true, true},
      {"mixtral-8x7b", "dgx-h200", split(8, 1, 4, 8, 1, 256, 1, one_f_one_b, false, true, Recompute::none), false,
       true},
  };
}

void expect_stage_equal(const StageTime& a, const StageTime& b, const std::string& where) {
  EXPECT_EQ(a.finish_us, b.finish_us) << where;
  EXPECT_EQ(a.compute_us, b.compute_us) << where;
  for (int e = 0; e < kNumExposures; ++e)
    EXPECT_EQ(a.exposed_us[e], b.exposed_us[e]) << where << " " << to_string(static_cast<Exposure>(e));
  for (int k = 0; k < kNumOpKinds; ++k)
    EXPECT_EQ(a.op_us[k], b.op_us[k]) << where << " " << models::to_string(static_cast<models::OpKind>(k));
}

class SimFast : public ::testing::TestWithParam<int> {};

TEST_P(SimFast, MatchesTheFullEventWalk) {
  const Case c = cases().at(GetParam());
  const models::ModelConfig model = models::load_model(c.model);
  const Topology topology = load_topology(c.topology);
  ProjectionOptions options;
  options.overlap_grad_reduce = c.overlap;
  const std::string label = c.model + " on " + c.topology + ": " + models::describe(c.split);
  ASSERT_EQ(models::check(c.split, model, c.split.world_size()), "") << label;

  TopologyPricer pricer(topology, c.split, default_dtype(topology));
  const SimResult full = simulate(stage_programs(model, c.split, options), pricer);
  const StepTemplates templates(model, c.split, program_options(options));
  const SimResult exact = simulate_fast(templates, pricer, StageDetail::all);
  const SimResult fast = simulate_fast(templates, pricer, StageDetail::first);
  // The searches' lower bound (branch and bound) never exceeds the step.
  EXPECT_LE(step_lower_bound(model, c.split, program_options(options), pricer), full.step_us * (1 + kLowerBoundMargin))
      << label;

  // Op by op: bitwise equal, every stage.
  EXPECT_EQ(exact.step_us, full.step_us) << label;
  ASSERT_EQ(exact.stages.size(), full.stages.size());
  for (size_t s = 0; s < full.stages.size(); ++s)
    expect_stage_equal(exact.stages[s], full.stages[s], label + " stage " + std::to_string(s));

  // Summaries: equal to rounding; the first stage's breakdown (what a search reports).
  const double tol = 1e-9 * full.step_us;
  EXPECT_NEAR(fast.step_us, full.step_us, tol) << label;
  const StageTime& f = fast.stages.front();
  const StageTime& r = full.stages.front();
  EXPECT_NEAR(f.compute_us, r.compute_us, tol) << label;
  for (int e = 0; e < kNumExposures; ++e)
    EXPECT_NEAR(f.exposed_us[e], r.exposed_us[e], tol) << label << " " << to_string(static_cast<Exposure>(e));
  for (size_t s = 0; s < full.stages.size(); ++s)
    EXPECT_NEAR(fast.stages[s].finish_us, full.stages[s].finish_us, tol) << label << " stage " << s;
  // The walk is not vacuous: the split has the communication it is meant to test.
  EXPECT_GT(r.compute_us, 0.0);
  // Only summaries jump over repetitions of a steady state; the long steady states here
  // (64 microbatches and more) are jumped over, and the tolerance above holds.
  EXPECT_EQ(exact.jumped_repetitions, 0) << label;
  if (c.jumps) {
    const auto& repeats = schedule_index(c.split)->schedule.repeats;
    ASSERT_FALSE(repeats.empty()) << label;
    // (it compares the state at growing gaps, so a short steady state is jumped late)
    EXPECT_GT(fast.jumped_repetitions, repeats.front().times / 4) << label;
  }
  if (c.split.pp > 1) {
    EXPECT_GT(r.exposed_us[static_cast<int>(Exposure::bubble)], 0.0) << label;
  }
}

INSTANTIATE_TEST_SUITE_P(Catalog, SimFast, ::testing::Range(0, static_cast<int>(cases().size())));

// A walk reuses its thread's arrays (stage_walk.hpp walks_of_this_thread): a walk after
// a deeper one, with more microbatches and another schedule, must see none of its state.
// A small split walked alone, then after a large zero-bubble and a large interleaved
// split, gives the same step and breakdown, bit for bit, in both modes.
TEST(SimFastReuse, AWalkAfterALargerOneIsTheSameAsAlone) {
  const models::ModelConfig model = models::load_model("llama3-70b");
  const Topology topology = load_topology("dgx-h100");
  const ProjectionOptions options;
  using enum ScheduleKind;
  const ParallelSplit small = split(4, 8, 2, 1, 1, 8, 1, one_f_one_b, true, true, Recompute::none);
  auto walk = [&](const ParallelSplit& s, StageDetail detail) {
    TopologyPricer pricer(topology, s, default_dtype(topology));
    return simulate_fast(StepTemplates(model, s, program_options(options)), pricer, detail);
  };
  for (const StageDetail detail : {StageDetail::first, StageDetail::all}) {
    const SimResult alone = walk(small, detail);
    walk(split(2, 8, 8, 1, 1, 96, 1, zb_h1, true, true, Recompute::selective), detail);
    walk(split(2, 8, 8, 1, 2, 64, 1, interleaved, true, true, Recompute::none), detail);
    const SimResult after = walk(small, detail);
    EXPECT_EQ(after.step_us, alone.step_us);
    ASSERT_EQ(after.stages.size(), alone.stages.size());
    for (size_t s = 0; s < alone.stages.size(); ++s)
      expect_stage_equal(after.stages[s], alone.stages[s], "stage " + std::to_string(s));
  }
}

// The packed records the walk reads (ScheduleIndex::steps, final_action) say what the
// schedule's actions and partner table say, on every schedule the fast walk prices.
TEST(SimFastStepIndex, EachRecordIsItsActionsExchangeOrInput) {
  for (const ParallelSplit& sp : indexed_schedules()) {
    const ScheduleIndex& ix = *schedule_index(sp);
    const std::string name = models::describe(sp);
    ASSERT_EQ(ix.steps.size(), static_cast<size_t>(sp.pp)) << name;
    const int V = ix.schedule.chunks, M = ix.schedule.microbatches;
    // [payload][microbatch * v + chunk], counted here from the transfer's own fields
    auto slot_of = [&](models::Payload payload, int microbatch, int chunk) {
      return (payload == models::Payload::activation ? 0 : M * V) + microbatch * V + chunk;
    };
    int inputs = 0, receives = 0;
    for (int s = 0; s < sp.pp; ++s) {
      const auto& actions = ix.schedule.per_stage[s];
      ASSERT_EQ(ix.steps[s].size(), actions.size()) << name;
      int final_action = -1;
      for (size_t i = 0; i < actions.size(); ++i) {
        const models::PipeAction& a = actions[i];
        const ScheduleIndex::Step& step = ix.steps[s][i];
        EXPECT_EQ(step.kind, a.kind) << name;
        if (a.kind == models::ActionKind::exchange) {
          EXPECT_EQ(step.send, a.send.has_value()) << name;
          EXPECT_EQ(step.recv, a.recv.has_value()) << name;
          EXPECT_EQ(step.send_peer, a.send ? a.send->peer_stage : -1) << name;
          EXPECT_EQ(step.recv_peer, a.recv ? a.recv->peer_stage : -1) << name;
          EXPECT_EQ(step.send_partner, ix.partner[s][i][0]) << name;
          EXPECT_EQ(step.recv_partner, ix.partner[s][i][1]) << name;
          EXPECT_EQ(step.slot, a.recv ? slot_of(a.recv->payload, a.recv->microbatch, a.recv->dst_chunk) : -1) << name;
          receives += a.recv.has_value();
          continue;
        }
        final_action = static_cast<int>(i);
        // Which virtual stage the action runs: its input comes from the previous one
        // (a forward) or the next one (a backward), unless it is the model's end; a W
        // receives nothing.
        const int vs = ix.schedule.virtual_stage(s, a.chunk);
        const bool forward = a.kind == models::ActionKind::forward;
        const bool receives_input =
            a.kind != models::ActionKind::weight && (forward ? vs > 0 : vs < ix.schedule.virtual_stages() - 1);
        const models::Payload payload = forward ? models::Payload::activation : models::Payload::gradient;
        EXPECT_EQ(step.slot, receives_input ? slot_of(payload, a.microbatch, a.chunk) : -1)
            << name << " " << s << " " << i;
        inputs += receives_input;
      }
      EXPECT_EQ(ix.final_action[s], final_action) << name;
    }
    // Every received message is some action's input, and the other way round.
    EXPECT_EQ(inputs, receives) << name;
    if (sp.pp > 1) {
      EXPECT_GT(inputs, 0) << name;
    }
  }
}

// The 1e-9 rule can fail: the fast walk priced with every op 1e-8 slower than the
// full walk's (ten times the tolerance, far below any modelling choice) is caught by
// the same comparison MatchesTheFullEventWalk makes, and so would a walk that drops or
// repeats an action.
class SlowerOps : public OpPricer {
 public:
  explicit SlowerOps(OpPricer& base) : base_(base) {}
  double op_us(const models::StepProgram& program, const models::Op& op) override {
    return base_.op_us(program, op) * (1 + 1e-8);
  }
  double exchange_half_us(const models::StepProgram& program, const models::Op& op, int peer) override {
    return base_.exchange_half_us(program, op, peer);
  }

 private:
  OpPricer& base_;
};

TEST(SimFastExactness, TheToleranceCatchesAPerturbedWalk) {
  const models::ModelConfig model = models::load_model("llama3-70b");
  const Topology topology = load_topology("dgx-h100");
  const ProjectionOptions options;
  const ParallelSplit s = split(2, 8, 4, 1, 1, 32, 1, ScheduleKind::one_f_one_b, true, true, Recompute::none);
  TopologyPricer pricer(topology, s, default_dtype(topology));
  const SimResult full = simulate(stage_programs(model, s, options), pricer);
  const StepTemplates templates(model, s, program_options(options));
  const double tol = 1e-9 * full.step_us;
  EXPECT_NEAR(simulate_fast(templates, pricer, StageDetail::first).step_us, full.step_us, tol);
  SlowerOps slower(pricer);
  const SimResult perturbed = simulate_fast(templates, slower, StageDetail::first);
  EXPECT_GT(std::abs(perturbed.step_us - full.step_us), tol)
      << "a walk with slower ops passes the exactness check: the check cannot fail";
}

// The split priced by simulate() on its full step programs (not the fast walk).
Projection priced_by_the_full_walk(const models::ModelConfig& model, const Topology& topology, const ParallelSplit& s,
                                   const ProjectionOptions& options) {
  Projection full;
  full.split = s;
  if (prepare(model, topology, options, full)) price(stage_programs(model, s, options), model, topology, options, full);
  return full;
}

// The bounds read an index of each schedule's compute actions alone
// (schedule_bound_index); it is the full schedule's index (index_schedule of
// build_schedule's list, every action listed) with the
// exchanges taken out: the same actions in the same order (models::ComputeTask),
// and every field the bounds read naming the same action, which it keeps, on 1F1B,
// interleaved, ZB-H1 and AFAB schedules. The memory checks' compute orders are its
// schedule's, and the full schedule's.
TEST(SimFastBoundIndex, ComputeActionsIndexTheFullSchedulesActions) {
  for (const ParallelSplit& split : indexed_schedules()) {
    const std::shared_ptr<const ScheduleIndex> listed = index_schedule(models::build_schedule(split));
    const ScheduleIndex& full = *listed;
    const ScheduleIndex& bound = *schedule_bound_index(split);
    const std::string name = models::describe(split);
    ASSERT_EQ(bound.stages(), split.pp) << name;
    EXPECT_TRUE(bound.schedule.per_stage.empty()) << name;  // not kept: kept names the actions read
    EXPECT_TRUE(bound.partner.empty()) << name;
    EXPECT_EQ(bound.schedule.compute_order, full.schedule.compute_order) << name;
    EXPECT_EQ(schedule_compute_orders(split).get(), &bound.schedule) << name;
    std::vector<std::vector<models::ComputeTask>> tasks(split.pp);
    models::build_compute_orders(split, [&](int s, const std::vector<models::ComputeTask>& t) { tasks[s] = t; });
    for (int s = 0; s < split.pp; ++s) {
      const std::vector<models::ComputeTask>& computes_of_stage = tasks[s];
      // position of each full action among the stage's compute actions (-1: exchange)
      std::vector<int> at;
      int computes = 0;
      for (const auto& a : full.schedule.per_stage[s]) {
        at.push_back(a.kind == models::ActionKind::exchange ? -1 : computes);
        if (a.kind != models::ActionKind::exchange) {
          ASSERT_LT(computes, static_cast<int>(computes_of_stage.size())) << name;
          const auto& b = computes_of_stage[computes++];
          EXPECT_EQ(models::action_kind(b.pass), a.kind) << name;
          EXPECT_EQ(b.microbatch, a.microbatch) << name;
          EXPECT_EQ(b.chunk, a.chunk) << name;
        }
      }
      EXPECT_EQ(computes, static_cast<int>(computes_of_stage.size())) << name;
      auto mapped = [&](int i) { return i < 0 ? -1 : at[i]; };
      // A kept action is the full schedule's action it names.
      auto same_action = [&](int bound_index, int full_index) {
        if (full_index < 0) return;
        const auto& b = bound.action(s, bound_index);
        const auto& a = full.action(s, full_index);
        EXPECT_EQ(b.kind, a.kind) << name;
        EXPECT_EQ(b.microbatch, a.microbatch) << name;
        EXPECT_EQ(b.chunk, a.chunk) << name;
      };
      EXPECT_EQ(bound.first_action[s], mapped(full.first_action[s])) << name;
      same_action(bound.first_action[s], full.first_action[s]);
      for (int ch = 0; ch < split.vpp; ++ch) {
        EXPECT_EQ(bound.last_backward[s][ch], mapped(full.last_backward[s][ch])) << name;
        EXPECT_EQ(bound.last_grads[s][ch], mapped(full.last_grads[s][ch])) << name;
        same_action(bound.last_backward[s][ch], full.last_backward[s][ch]);
        same_action(bound.last_grads[s][ch], full.last_grads[s][ch]);
      }
      EXPECT_EQ(bound.between[s], full.between[s]) << name;
      EXPECT_EQ(bound.after[s], full.after[s]) << name;
      EXPECT_EQ(bound.between_weight[s], full.between_weight[s]) << name;
      EXPECT_EQ(bound.after_weight[s], full.after_weight[s]) << name;
      EXPECT_EQ(bound.chunk_order[s], full.chunk_order[s]) << name;
    }
  }
}

// Full indexes are kept within a byte budget: past it the oldest go (and are rebuilt, the
// same, when asked for again), while whoever holds one keeps it.
TEST(SimFastIndexCache, KeepsFullIndexesWithinItsBudget) {
  ParallelSplit a;  // schedules no other test asks for
  a.pp = 3;
  a.microbatches = 7;
  ParallelSplit b = a;
  b.microbatches = 11;
  const std::shared_ptr<const ScheduleIndex> held = schedule_index(a);
  EXPECT_EQ(schedule_index(a).get(), held.get());  // kept
  set_schedule_index_budget(1.5 * schedule_index_bytes(*held));
  const std::shared_ptr<const ScheduleIndex> other = schedule_index(b);  // with a, over the budget
  EXPECT_GT(schedule_index_bytes(*held) + schedule_index_bytes(*other), 1.5 * schedule_index_bytes(*held));
  const std::shared_ptr<const ScheduleIndex> again = schedule_index(a);
  set_schedule_index_budget(1024.0 * 1024 * 1024);
  EXPECT_NE(again.get(), held.get());  // dropped, rebuilt
  ASSERT_EQ(again->steps.size(), held->steps.size());
  for (size_t s = 0; s < held->steps.size(); ++s) {
    ASSERT_EQ(again->steps[s].size(), held->steps[s].size());
    for (size_t i = 0; i < held->steps[s].size(); ++i) {
      EXPECT_EQ(again->steps[s][i].send_partner, held->steps[s][i].send_partner);
      EXPECT_EQ(again->steps[s][i].recv_partner, held->steps[s][i].recv_partner);
      EXPECT_EQ(again->steps[s][i].slot, held->steps[s][i].slot);
    }
  }
  EXPECT_EQ(again->last_backward, held->last_backward);
}

// A projection (what `ibt project` prints) is the same through either walk.
TEST(SimFastProjection, ProjectEqualsPricingTheFullPrograms) {
  const models::ModelConfig model = models::load_model("deepseek-v3");
  const Topology topology = load_topology("dgx-h100");
  const ParallelSplit s = split(16, 8, 8, 16, 1, 16, 1, ScheduleKind::one_f_one_b, true, true, Recompute::selective);
  ProjectionOptions options;
  const Projection full = priced_by_the_full_walk(model, topology, s, options);
  ASSERT_TRUE(full.priced);
  const Projection fast = project(model, topology, s, options);
  EXPECT_NEAR(fast.step_s, full.step_s, 1e-9 * full.step_s);
  EXPECT_NEAR(fast.mfu, full.mfu, 1e-9 * full.mfu);
  for (int e = 0; e < kNumExposures; ++e) EXPECT_NEAR(fast.exposed_s[e], full.exposed_s[e], 1e-9 * full.step_s);
  options.keep_sim = true;
  const Projection kept = project(model, topology, s, options);
  EXPECT_EQ(kept.step_s, full.step_s);
  EXPECT_EQ(kept.compute_s, full.compute_s);
}

// dualpipev's paired actions interleave two actions' ops, which the fast walk's one
// template per action cannot hold: it refuses them by name, and project() prices
// such splits by the full walk (fast_walk_prices).
TEST(SimFastProjection, DualPipeVIsPricedByTheFullWalk) {
  const models::ModelConfig model = models::load_model("tiny-moe");
  ParallelSplit s;
  s.dp = 2;
  s.ep = 2;
  s.pp = 2;
  s.vpp = 2;
  s.microbatches = 4;
  s.schedule = ScheduleKind::dualpipev;
  EXPECT_FALSE(fast_walk_prices(s));
  try {
    StepTemplates templates(model, s, models::StepProgramOptions{});
    FAIL() << "the fast walk accepted dualpipev";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("dualpipev"), std::string::npos) << e.what();
  }
  const Topology topology = load_topology("dgx-h100");
  const ProjectionOptions options;
  const Projection full = priced_by_the_full_walk(model, topology, s, options);
  ASSERT_TRUE(full.priced);
  const Projection projected = project(model, topology, s, options);
  EXPECT_EQ(projected.step_s, full.step_s);
}

// Searches give the same ranking on any number of threads.
TEST(SimFastProjection, ProjectAllIsTheSameOnFourThreads) {
  const models::ModelConfig model = models::load_model("mixtral-8x7b");
  const Topology topology = load_topology("dgx-h100");
  const auto search = default_search(topology, 256);
  const auto serial = project_all(model, topology, 64, search);
  SearchRun run;
  run.jobs = 4;
  size_t calls = 0, last = 0;
  run.progress = [&](size_t done, size_t total) {
    ++calls;
    last = done;
    EXPECT_EQ(total, serial.size());
  };
  const auto parallel = project_all(model, topology, 64, search, {}, run);
  ASSERT_EQ(parallel.size(), serial.size());
  ASSERT_GT(serial.size(), 10u);
  EXPECT_EQ(calls, serial.size());
  EXPECT_EQ(last, serial.size());
  for (size_t i = 0; i < serial.size(); ++i) {
    EXPECT_EQ(parallel[i].split, serial[i].split) << i;
    EXPECT_EQ(parallel[i].step_s, serial[i].step_s) << i;
    EXPECT_EQ(parallel[i].reason, serial[i].reason) << i;
  }
}

}  // namespace
}  // namespace ibt::topo
