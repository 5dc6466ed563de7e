// Pipeline schedules: ordering invariants, memory in flight, deadlock freedom under
// rendezvous semantics, and the textbook bubble fractions with unit compute.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "core/errors.hpp"
#include "models/plan/schedule.hpp"

namespace ibt::models {
namespace {

struct Case {
  ScheduleKind kind;
  int p, v, m;
};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (int p : {1, 2, 3, 4, 8})
    for (int m : {1, 2, 3, 4, 8, 12, 16}) {
      cases.push_back({ScheduleKind::afab, p, 1, m});
      if (m >= p) cases.push_back({ScheduleKind::one_f_one_b, p, 1, m});
      if (m >= p) cases.push_back({ScheduleKind::zb_h1, p, 1, m});
      if (p >= 2 && m % p == 0)
        for (int v : {2, 3, 4}) cases.push_back({ScheduleKind::interleaved, p, v, m});
    }
  return cases;
}

std::string name(const Case& c) {
  return std::string(to_string(c.kind)) + " p" + std::to_string(c.p) + " v" + std::to_string(c.v) + " m" +
         std::to_string(c.m);
}

TEST(PlanSchedule, EveryChunkRunsOnceForwardBeforeBackward) {
  for (const Case& c : all_cases()) {
    const PipelineSchedule s = build_schedule(c.kind, c.p, c.v, c.m);
    ASSERT_EQ(static_cast<int>(s.per_stage.size()), c.p) << name(c);
    for (int st = 0; st < c.p; ++st) {
      std::map<std::pair<int, int>, int> fwd_at, bwd_at;
      const auto& list = s.per_stage[st];
      for (int i = 0; i < static_cast<int>(list.size()); ++i) {
        const auto& a = list[i];
        if (a.kind == ActionKind::exchange || a.kind == ActionKind::weight) continue;  // W: plan_zero_bubble_test
        auto& table = a.kind == ActionKind::forward ? fwd_at : bwd_at;
        EXPECT_TRUE(table.emplace(std::pair{a.microbatch, a.chunk}, i).second)
            << name(c) << " stage " << st << " runs mb " << a.microbatch << " twice";
      }
      EXPECT_EQ(static_cast<int>(fwd_at.size()), c.m * c.v) << name(c);
      EXPECT_EQ(static_cast<int>(bwd_at.size()), c.m * c.v) << name(c);
      for (const auto& [key, i] : bwd_at)
        EXPECT_LT(fwd_at.at(key), i) << name(c) << " stage " << st << " mb " << key.first << " chunk " << key.second
                                     << ": backward before forward";
    }
  }
}

TEST(PlanSchedule, OneFOneBHoldsAtMostPMinusSMicrobatches) {
  for (int p : {1, 2, 4, 8})
    for (int m : {8, 16}) {
      const PipelineSchedule s = build_schedule(ScheduleKind::one_f_one_b, p, 1, m);
      for (int st = 0; st < p; ++st)
        EXPECT_EQ(max_chunks_in_flight(s, st), std::min(p - st, m)) << "p" << p << " stage " << st;
    }
  // GPipe holds every microbatch.
  const PipelineSchedule g = build_schedule(ScheduleKind::afab, 4, 1, 8);
  EXPECT_EQ(max_chunks_in_flight(g, 0), 8);
}

// Megatron's interleaved schedule (Narayanan et al. 2021) runs (p-s-1)*2 + (v-1)*p warm-up
// forwards on stage s and one more before its first backward: that many chunks are held
// at the peak when m > p (all m*v when m == p). On stage 0 that is p*v + p - 1 chunks, the
// L*(1 + (p-1)/(p*v)) layers of Korthikanti et al. 2022 sec. 4.2.3.
TEST(PlanSchedule, InterleavedHoldsMegatronWarmupPlusOne) {
  for (int p : {2, 4, 16})
    for (int v : {2, 4}) {
      const int m = 2 * p;
      const PipelineSchedule s = build_schedule(ScheduleKind::interleaved, p, v, m);
      for (int st = 0; st < p; ++st)
        EXPECT_EQ(max_chunks_in_flight(s, st), std::min((p - st - 1) * 2 + (v - 1) * p + 1, m * v))
            << "p" << p << " v" << v << " stage " << st;
    }
}

TEST(PlanSchedule, ExchangesPairUpWithinOneRound) {
  for (const Case& c : all_cases()) {
    const PipelineSchedule s = build_schedule(c.kind, c.p, c.v, c.m);
    // (payload, mb, src vs) -> (stage, round) of send and of receive
    std::map<std::tuple<int, int, int>, std::pair<int, int>> sends, recvs;
    for (int st = 0; st < c.p; ++st)
      for (const auto& a : s.per_stage[st]) {
        if (a.kind != ActionKind::exchange) continue;
        ASSERT_TRUE(a.send || a.recv) << name(c);
        if (a.send) {
          EXPECT_EQ(a.send->peer_stage, a.send->dst_virtual_stage % c.p);
          sends[{int(a.send->payload), a.send->microbatch, a.send->src_virtual_stage}] = {st, a.round};
        }
        if (a.recv) recvs[{int(a.recv->payload), a.recv->microbatch, a.recv->src_virtual_stage}] = {st, a.round};
      }
    // Tags are unique per message and identical on both sides.
    std::set<int> tags;
    for (int st = 0; st < c.p; ++st)
      for (const auto& a : s.per_stage[st])
        if (a.send) {
          const int tag = message_tag(*a.send, s);
          EXPECT_TRUE(tags.insert(tag).second) << name(c);
          EXPECT_LT(tag, 2 * c.m * c.p * c.v);
        }
    // Every (mb, boundary) crossed once per direction.
    const int boundaries = c.p * c.v - 1;
    EXPECT_EQ(static_cast<int>(sends.size()), 2 * c.m * boundaries) << name(c);
    ASSERT_EQ(sends.size(), recvs.size()) << name(c);
    for (const auto& [key, where] : sends) {
      const auto it = recvs.find(key);
      ASSERT_NE(it, recvs.end()) << name(c);
      EXPECT_EQ(where.second, it->second.second) << name(c) << ": send and receive in different rounds";
    }
  }
}

TEST(PlanSchedule, BubbleFractionMatchesTheory) {
  for (const Case& c : all_cases()) {
    if (c.kind == ScheduleKind::afab && c.v != 1) continue;
    if (c.kind == ScheduleKind::zb_h1) continue;  // plan_zero_bubble_test
    const PipelineSchedule s = build_schedule(c.kind, c.p, c.v, c.m);
    const PipelineTiming t = simulate_pipeline(s, 1.0, 1.0, 0.0);
    const double expected = c.kind == ScheduleKind::interleaved ? (c.p - 1.0) / (c.v * c.m) : (c.p - 1.0) / c.m;
    EXPECT_NEAR(t.bubble_fraction, expected, 1e-12) << name(c);
    EXPECT_DOUBLE_EQ(t.ideal, 2.0 * c.m * c.v);
    for (double b : t.busy) EXPECT_DOUBLE_EQ(b, 2.0 * c.m * c.v);
  }
}

TEST(PlanSchedule, NoDeadlockWithUnequalCostsAndSlowLinks) {
  for (const Case& c : all_cases()) {
    const PipelineSchedule s = build_schedule(c.kind, c.p, c.v, c.m);
    EXPECT_NO_THROW(simulate_pipeline(s, 1.0, 2.0, 0.3)) << name(c);
    EXPECT_NO_THROW(simulate_pipeline(s, 0.5, 3.0, 5.0)) << name(c);
  }
}

TEST(PlanSchedule, HeterogeneousStageCosts) {
  // 1F1B, p = 2, m = 4; stage 1 (with the LM head) twice as slow. Its compute alone
  // is 4 * (2 + 4) = 24; stage 0 must finish one forward (1) before stage 1 starts and
  // one backward (2) after stage 1 ends: 27.
  const PipelineSchedule s = build_schedule(ScheduleKind::one_f_one_b, 2, 1, 4);
  const PipelineTiming t = simulate_pipeline(s, PipelineCosts{{1, 2}, {2, 4}, 0.0});
  EXPECT_DOUBLE_EQ(t.busy[0], 12);
  EXPECT_DOUBLE_EQ(t.busy[1], 24);
  EXPECT_DOUBLE_EQ(t.makespan, 27);
  EXPECT_DOUBLE_EQ(t.ideal, 24);
  // Every exchange costing 0.5, traced by hand (rendezvous: an exchange ends 0.5 after
  // the later partner arrives). Stage 0: F0 0-1, send a0 -1.5, F1 -2.5, send a1 waits
  // for stage 1 (F0 1.5-3.5) -4, recv g0 waits for stage 1's B0 (4-8) -8.5, B0 -10.5,
  // F2 -11.5, send a2 waits for stage 1's F1, B1 (8.5-14.5) -15, recv g1 -15.5,
  // B1 -17.5, F3 -18.5, send a3 waits for F2, B2 (15.5-21.5) -22, recv g2 -22.5,
  // B2 -24.5, recv g3 waits for F3, B3 (22.5-28.5) -29, B3 -31. Blocking exchanges
  // cost 4 more than the 27 + 2 * 0.5 of asynchronous sends would.
  const PipelineTiming c = simulate_pipeline(s, PipelineCosts{{1, 2}, {2, 4}, 0.5});
  EXPECT_DOUBLE_EQ(c.makespan, 31);
  EXPECT_DOUBLE_EQ(c.finish[1], 29);
  EXPECT_THROW(simulate_pipeline(s, PipelineCosts{{1}, {2}, 0.0}), UsageError);
}

TEST(PlanSchedule, SimulatorDetectsADeadlock) {
  // Both stages first send, then receive: with rendezvous sends neither can finish.
  PipelineSchedule s;
  s.kind = ScheduleKind::afab;
  s.stages = 2;
  s.per_stage.resize(2);
  PipeAction send0, recv0, send1, recv1;
  send0.kind = recv0.kind = send1.kind = recv1.kind = ActionKind::exchange;
  send0.send = Transfer{Payload::activation, 1, 0, 0, 1, 0};
  recv1.recv = Transfer{Payload::activation, 0, 0, 0, 1, 0};
  send1.send = Transfer{Payload::gradient, 0, 0, 1, 0, 0};
  recv0.recv = Transfer{Payload::gradient, 1, 0, 1, 0, 0};
  s.per_stage[0] = {send0, recv0};
  s.per_stage[1] = {send1, recv1};
  EXPECT_THROW(simulate_pipeline(s), RuntimeError);
  // In the other order on stage 1 it completes.
  s.per_stage[1] = {recv1, send1};
  EXPECT_NO_THROW(simulate_pipeline(s));
}

TEST(PlanSchedule, InterleavedSendsFromLastStageToFirst) {
  const PipelineSchedule s = build_schedule(ScheduleKind::interleaved, 2, 2, 2);
  bool wrapped = false;
  for (const auto& a : s.per_stage[1])
    if (a.send && a.send->payload == Payload::activation && a.send->peer_stage == 0) {
      EXPECT_EQ(a.send->src_virtual_stage, 1);
      EXPECT_EQ(a.send->dst_virtual_stage, 2);
      EXPECT_EQ(a.send->dst_chunk, 1);
      wrapped = true;
    }
  EXPECT_TRUE(wrapped);
}

// What searches' memory checks walk (build_compute_orders) is the full schedule's
// compute order, stage by stage, and refuses the same parameters.
TEST(PlanSchedule, ComputeOrdersAloneAreTheFullSchedules) {
  for (const Case& c : all_cases()) {
    ParallelSplit split;
    split.schedule = c.kind;
    split.pp = c.p;
    split.vpp = c.v;
    split.microbatches = c.m;
    const PipelineSchedule full = build_schedule(split);
    const PipelineSchedule orders = build_compute_orders(split);
    EXPECT_TRUE(orders.per_stage.empty()) << name(c);
    EXPECT_EQ(orders.compute_order, full.compute_order) << name(c);
    for (int s = 0; s < c.p; ++s) EXPECT_EQ(max_chunks_in_flight(orders, s), max_chunks_in_flight(full, s)) << name(c);
  }
  ParallelSplit bad;
  bad.schedule = ScheduleKind::interleaved;
  bad.pp = 4;
  bad.vpp = 2;
  bad.microbatches = 6;
  EXPECT_THROW(build_compute_orders(bad), UsageError);
}

TEST(PlanSchedule, RejectsImpossibleParameters) {
  EXPECT_THROW(build_schedule(ScheduleKind::one_f_one_b, 4, 1, 2), UsageError);
  EXPECT_THROW(build_schedule(ScheduleKind::interleaved, 4, 2, 6), UsageError);
  EXPECT_THROW(build_schedule(ScheduleKind::interleaved, 1, 2, 4), UsageError);
  EXPECT_THROW(build_schedule(ScheduleKind::afab, 2, 2, 4), UsageError);
  EXPECT_THROW(build_schedule(ScheduleKind::afab, 2, 1, 0), UsageError);
}

TEST(PlanSchedule, StageLayersCoverTheModelInOrder) {
  ModelConfig m;
  m.name = "t";
  for (int layers : {4, 8, 61, 126})
    for (int V : {1, 2, 3, 4, 16, 32}) {
      if (V > layers) continue;
      m.layers = layers;
      int next = 0, lo = layers, hi = 0;
      for (int vs = 0; vs < V; ++vs) {
        const LayerRange r = stage_layers(m, V, vs);
        EXPECT_EQ(r.first, next);
        next = r.end();
        lo = std::min(lo, r.count);
        hi = std::max(hi, r.count);
      }
      EXPECT_EQ(next, layers);
      EXPECT_LE(hi - lo, 1);
    }
  // 61 layers over 16 stages: the first and last stages get the short share.
  m.layers = 61;
  EXPECT_EQ(stage_layers(m, 16, 0).count, 3);
  EXPECT_EQ(stage_layers(m, 16, 15).count, 3);
  EXPECT_EQ(stage_layers(m, 16, 7).count, 4);
  EXPECT_THROW(stage_layers(m, 62, 0), UsageError);
}

}  // namespace
}  // namespace ibt::models

namespace ibt::models {
namespace {

// The plan covers what build_schedule reserves, so a schedule the plan lets through is
// never larger than planned.
TEST(PlanScheduleMemory, PlanCoversTheReservedActions) {
  for (const auto& [kind, p, v, m] :
       {std::tuple{ScheduleKind::one_f_one_b, 4, 1, 64}, std::tuple{ScheduleKind::interleaved, 4, 2, 16},
        std::tuple{ScheduleKind::afab, 2, 1, 8}}) {
    const PipelineSchedule s = build_schedule(kind, p, v, m);
    double reserved = 0;
    for (const auto& stage : s.per_stage) reserved += static_cast<double>(stage.capacity()) * sizeof(PipeAction);
    EXPECT_GE(schedule_bytes(p, v, m), reserved) << "p " << p << " v " << v << " m " << m;
  }
}

// A schedule no machine holds (2^31 - 1 microbatches on 1,000 stages: petabytes) is
// refused naming the microbatches and the bytes, before anything is allocated.
TEST(PlanScheduleMemory, AScheduleNoMachineHoldsIsRefused) {
  ParallelSplit split;
  split.pp = 1000;
  split.microbatches = 2147483647;
  try {
    require_schedule_memory(split);
    FAIL() << "not refused";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("2147483647 microbatches"), std::string::npos) << what;
    EXPECT_NE(what.find("bytes"), std::string::npos) << what;
  }
  EXPECT_THROW(build_schedule(ScheduleKind::one_f_one_b, 1000, 1, 2147483647), UsageError);
}

}  // namespace
}  // namespace ibt::models
