// DualPipeV, DualPipe's V-shaped "cut-in-half" form (DeepSeek-V3 Technical Report,
// arXiv:2412.19437, section 3.2.1; github.com/deepseek-ai/DualPipe README): the V
// placement, every pass once in order, the paired F&B, the README's bubble and
// activation figures, and the deadlock-free exchanges.
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "core/errors.hpp"
#include "models/plan/schedule.hpp"

namespace ibt::models {
namespace {

std::string name(int p, int m) { return "dualpipev p" + std::to_string(p) + " m" + std::to_string(m); }

TEST(PlanDualPipe, VirtualStagesSitInAV) {
  const PipelineSchedule s = build_schedule(ScheduleKind::dualpipev, 4, 2, 8);
  EXPECT_EQ(s.virtual_stages(), 8);
  // The README's "4 PP ranks (8 PP stages)": rank s holds stages s and 7 - s.
  for (int st = 0; st < 4; ++st) {
    EXPECT_EQ(s.virtual_stage(st, 0), st);
    EXPECT_EQ(s.virtual_stage(st, 1), 7 - st);
    for (int c = 0; c < 2; ++c) {
      EXPECT_EQ(s.placement(s.virtual_stage(st, c)).stage, st);
      EXPECT_EQ(s.placement(s.virtual_stage(st, c)).chunk, c);
    }
  }
  // Round-robin schedules keep chunk * p + stage.
  const PipelineSchedule i = build_schedule(ScheduleKind::interleaved, 4, 2, 8);
  EXPECT_EQ(i.virtual_stage(1, 1), 5);
  EXPECT_EQ(i.placement(5).stage, 1);
}

TEST(PlanDualPipe, EveryPassOnceAndInOrder) {
  for (int p : {2, 3, 4, 8})
    for (int m : {2 * p, 2 * p + 1, 3 * p, 20}) {
      const PipelineSchedule s = build_schedule(ScheduleKind::dualpipev, p, 2, m);
      EXPECT_TRUE(s.split_backward());
      for (int st = 0; st < p; ++st) {
        std::map<std::tuple<ActionKind, int, int>, int> at;
        const auto& list = s.per_stage[st];
        for (int i = 0; i < static_cast<int>(list.size()); ++i) {
          const auto& a = list[i];
          if (a.kind == ActionKind::exchange) {
            // The last rank's chunk 0 -> chunk 1 hand-off never leaves the rank.
            if (a.send) {
              EXPECT_NE(a.send->peer_stage, st) << name(p, m);
              EXPECT_EQ(std::abs(a.send->peer_stage - st), 1) << name(p, m);
            }
            continue;
          }
          EXPECT_TRUE(at.emplace(std::tuple{a.kind, a.microbatch, a.chunk}, i).second) << name(p, m);
        }
        ASSERT_EQ(static_cast<int>(at.size()), 6 * m) << name(p, m) << " stage " << st;
        for (int mb = 0; mb < m; ++mb) {
          // F0 before F1 (data flows down chunk 0, then back up chunk 1); B1 before B0.
          EXPECT_LT(at.at({ActionKind::forward, mb, 0}), at.at({ActionKind::forward, mb, 1}));
          EXPECT_LT(at.at({ActionKind::forward, mb, 1}), at.at({ActionKind::backward, mb, 1}));
          EXPECT_LT(at.at({ActionKind::backward, mb, 1}), at.at({ActionKind::backward, mb, 0}));
          for (int c = 0; c < 2; ++c) {
            EXPECT_LT(at.at({ActionKind::backward, mb, c}), at.at({ActionKind::weight, mb, c}));
            // A chunk's W's in microbatch order: the gradient sums the serial reference makes.
            if (mb > 0) {
              EXPECT_LT(at.at({ActionKind::weight, mb - 1, c}), at.at({ActionKind::weight, mb, c}));
            }
          }
        }
      }
    }
}

// The steady state pairs a forward of one chunk with a backward of the other, in one
// round: (F0 & B1) (F1 & B0), m - 2p + r + 1 of each on rank r (the last rank runs its
// first two apart), plus p - r - 1 (F1 & B0) in step 5.
TEST(PlanDualPipe, SteadyStatePairsForwardAndBackwardOfTheOtherChunk) {
  for (int p : {2, 4})
    for (int m : {2 * p, 20}) {
      const PipelineSchedule s = build_schedule(ScheduleKind::dualpipev, p, 2, m);
      for (int r = 0; r < p; ++r) {
        int pairs = 0;
        const auto& list = s.per_stage[r];
        for (size_t i = 0; i < list.size(); ++i) {
          if (list[i].kind != ActionKind::forward || !list[i].overlapped) continue;
          ASSERT_LT(i + 1, list.size());
          const PipeAction& b = list[i + 1];
          EXPECT_EQ(b.kind, ActionKind::backward) << name(p, m);
          EXPECT_TRUE(b.overlapped);
          EXPECT_NE(b.chunk, list[i].chunk);
          EXPECT_EQ(b.round, list[i].round);
          ++pairs;
        }
        const int steady = m - 2 * p + r + 1;
        EXPECT_EQ(pairs, 2 * steady - (r == p - 1 ? 1 : 0) + (p - r - 1)) << name(p, m) << " rank " << r;
      }
    }
}

// Bubble, free communication. With unit F, B (input gradients) and W the schedule is
// built by (schedule.hpp), the last rank waits (p - 1) F for its first input (it passes
// p - 1 ranks) and is never idle after, nor is any other rank: the step is 6m + (p - 1)
// units, a bubble of (p - 1) F whatever m. The DualPipe README's table gives
// (PP/2 - 1)(F&B + B - 3W) with PP = 2p virtual stages, B the full backward (B + W
// here) and, without overlap, F&B = F + B: this order reaches it exactly at the
// ratios checked below, and at F = B = W it does better than the formula's 2(p - 1).
TEST(PlanDualPipe, BubbleIsTheLastRanksFillWithUnitPasses) {
  for (int p : {2, 3, 4, 8, 16})
    for (int m : {2 * p, 2 * p + 3, 4 * p, 64}) {
      const PipelineSchedule s = build_schedule(ScheduleKind::dualpipev, p, 2, m);
      const PipelineTiming t = simulate_pipeline(s, 1.0, 1.0, 0.0, 1.0);
      EXPECT_DOUBLE_EQ(t.ideal, 6.0 * m) << name(p, m);
      EXPECT_DOUBLE_EQ(t.makespan, 6.0 * m + (p - 1)) << name(p, m);
    }
}

TEST(PlanDualPipe, BubbleMatchesTheReadmeFormula) {
  struct Costs {
    double f, b, w;  // forward, input-gradient backward, weight gradient
  };
  for (const Costs c : {Costs{1, 1, 0.5}, Costs{1, 2, 1}, Costs{2, 1, 1}})
    for (int p : {2, 4, 8})
      for (int m : {2 * p, 5 * p}) {
        const PipelineSchedule s = build_schedule(ScheduleKind::dualpipev, p, 2, m);
        const PipelineTiming t = simulate_pipeline(s, c.f, c.b, 0.0, c.w);
        const double full_b = c.b + c.w, f_and_b = c.f + full_b;
        EXPECT_DOUBLE_EQ(t.ideal, 2.0 * m * (c.f + full_b)) << name(p, m);
        EXPECT_NEAR(t.makespan - t.ideal, (p - 1) * (f_and_b + full_b - 3 * c.w), 1e-9)
            << name(p, m) << " F " << c.f << " B " << c.b << " W " << c.w;
      }
}

// Activation per device PP + 1 (the README's table): 2p + 1 chunks at most, reached on
// the last rank; chunks held from their F to their W.
TEST(PlanDualPipe, HoldsAtMostTwoPPlusOneChunks) {
  for (int p : {2, 4, 8})
    for (int m : {2 * p, 3 * p, 40}) {
      const PipelineSchedule s = build_schedule(ScheduleKind::dualpipev, p, 2, m);
      int peak = 0;
      for (int st = 0; st < p; ++st) {
        EXPECT_LE(max_chunks_in_flight(s, st), 2 * p + 1) << name(p, m) << " stage " << st;
        peak = std::max(peak, max_chunks_in_flight(s, st));
      }
      EXPECT_EQ(peak, 2 * p + 1) << name(p, m);
      EXPECT_EQ(max_chunks_in_flight(s, p - 1), 2 * p + 1) << name(p, m);
      // build_compute_orders gives the same walk without the actions.
      ParallelSplit split;
      split.pp = p;
      split.vpp = 2;
      split.microbatches = m;
      split.schedule = ScheduleKind::dualpipev;
      const PipelineSchedule o = build_compute_orders(split);
      for (int st = 0; st < p; ++st) EXPECT_EQ(o.compute_order[st], s.compute_order[st]) << name(p, m);
    }
}

// Blocking (rendezvous) exchanges that cost time never deadlock, and F and B each
// cross every rank boundary but the V's tip.
TEST(PlanDualPipe, ExchangesCompleteWithCostlyTransfers) {
  for (int p : {2, 3, 4, 8})
    for (int m : {2 * p, 5 * p})
      for (double comm : {0.1, 1.5}) {
        const PipelineSchedule s = build_schedule(ScheduleKind::dualpipev, p, 2, m);
        const PipelineTiming t = simulate_pipeline(s, 1.0, 1.0, comm, 1.0);
        EXPECT_GT(t.makespan, 6.0 * m) << name(p, m);
        int messages = 0;
        for (const auto& list : s.per_stage)
          for (const auto& a : list) messages += a.send ? 1 : 0;
        // 2p - 1 hops per direction and microbatch, one of them local.
        EXPECT_EQ(messages, 2 * m * (2 * p - 2)) << name(p, m);
      }
}

TEST(PlanDualPipe, RefusesWhatItCannotRun) {
  EXPECT_THROW(build_schedule(ScheduleKind::dualpipev, 4, 2, 7), UsageError);  // m < 2p
  EXPECT_THROW(build_schedule(ScheduleKind::dualpipev, 4, 1, 8), UsageError);  // vpp 1
  EXPECT_THROW(build_schedule(ScheduleKind::dualpipev, 1, 2, 8), UsageError);  // pp 1
  EXPECT_EQ(parse_schedule("dualpipev"), ScheduleKind::dualpipev);
  EXPECT_EQ(to_string(ScheduleKind::dualpipev), "dualpipev");
}

}  // namespace
}  // namespace ibt::models
