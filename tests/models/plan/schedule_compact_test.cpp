// The compact schedule (models/plan/schedule.hpp build_compact_schedule): its steady state
// listed once and repeated. Expanded, it must be build_schedule's schedule action for
// action (kind, microbatch, chunk, round, both transfers) on every schedule kind the
// fast walk prices, at depths, interleavings and microbatch counts that give steady
// states of one period up to thousands; and long steady states must in fact compact.
#include <gtest/gtest.h>

#include <string>

#include "models/plan/schedule.hpp"

namespace ibt::models {
namespace {

bool same_transfer(const std::optional<Transfer>& a, const std::optional<Transfer>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  return a->payload == b->payload && a->peer_stage == b->peer_stage && a->microbatch == b->microbatch &&
         a->src_virtual_stage == b->src_virtual_stage && a->dst_virtual_stage == b->dst_virtual_stage &&
         a->dst_chunk == b->dst_chunk;
}

ParallelSplit shape(ScheduleKind kind, int p, int v, int m) {
  ParallelSplit s;
  s.schedule = kind;
  s.pp = p;
  s.vpp = v;
  s.microbatches = m;
  return s;
}

// Every compactable shape of a small grid, and a few deep ones.
std::vector<ParallelSplit> shapes() {
  std::vector<ParallelSplit> out;
  for (const ScheduleKind kind :
       {ScheduleKind::one_f_one_b, ScheduleKind::zb_h1, ScheduleKind::afab, ScheduleKind::interleaved})
    for (int p : {1, 2, 3, 4, 5, 8})
      for (int v : {1, 2, 3, 4})
        for (int m : {1, 2, 3, 4, 6, 8, 9, 12, 16, 24, 33, 40, 64}) {
          const ParallelSplit s = shape(kind, p, v, m);
          const bool interleaved = kind == ScheduleKind::interleaved;
          if (interleaved != (v > 1) || (interleaved && (p < 2 || m % p != 0))) continue;
          if ((kind == ScheduleKind::one_f_one_b || kind == ScheduleKind::zb_h1) && m < p) continue;
          out.push_back(s);
        }
  out.push_back(shape(ScheduleKind::one_f_one_b, 32, 1, 512));
  out.push_back(shape(ScheduleKind::zb_h1, 16, 1, 300));
  out.push_back(shape(ScheduleKind::interleaved, 8, 2, 256));
  out.push_back(shape(ScheduleKind::interleaved, 4, 4, 96));
  return out;
}

TEST(PlanScheduleCompact, ExpandsToTheFullSchedule) {
  int compacted = 0;
  for (const ParallelSplit& split : shapes()) {
    const std::string name = describe(split);
    const PipelineSchedule full = build_schedule(split);
    const PipelineSchedule compact = build_compact_schedule(split);
    const PipelineSchedule expanded = expand_schedule(compact);
    EXPECT_EQ(compact.rounds, full.rounds) << name;
    compacted += !compact.repeats.empty();
    ASSERT_EQ(expanded.per_stage.size(), full.per_stage.size()) << name;
    for (int s = 0; s < split.pp; ++s) {
      const auto& a = expanded.per_stage[s];
      const auto& b = full.per_stage[s];
      ASSERT_EQ(a.size(), b.size()) << name << " stage " << s;
      for (size_t i = 0; i < a.size(); ++i) {
        const std::string at = name + " stage " + std::to_string(s) + " action " + std::to_string(i);
        ASSERT_EQ(a[i].kind, b[i].kind) << at;
        ASSERT_EQ(a[i].microbatch, b[i].microbatch) << at;
        ASSERT_EQ(a[i].chunk, b[i].chunk) << at;
        ASSERT_EQ(a[i].round, b[i].round) << at;
        ASSERT_TRUE(same_transfer(a[i].send, b[i].send)) << at;
        ASSERT_TRUE(same_transfer(a[i].recv, b[i].recv)) << at;
      }
    }
    EXPECT_EQ(expanded.compute_order, full.compute_order) << name;
    // No repeated action is its chunk's last of its kind (the sim prices those apart):
    // each kind and chunk of a period is listed again after it.
    for (const ScheduleRepeat& r : compact.repeats) {
      EXPECT_GE(r.times, 2) << name;
      for (int s = 0; s < split.pp; ++s) {
        const auto& listed = compact.per_stage[s];
        for (int i = r.begin[s]; i < r.end[s]; ++i) {
          bool again = false;
          for (size_t k = r.end[s]; k < listed.size() && !again; ++k)
            again = listed[k].kind == listed[i].kind && listed[k].chunk == listed[i].chunk;
          EXPECT_TRUE(again) << name << " stage " << s << " action " << i;
        }
      }
    }
  }
  EXPECT_GT(compacted, 50);  // the grid's long steady states did compact
}

// A deep pipeline with thousands of microbatches (the searches' costliest schedules)
// lists a small fraction of its actions, and a compact schedule has no compute order
// to read by mistake.
TEST(PlanScheduleCompact, ListsALongSteadyStateOnce) {
  for (const ParallelSplit& split :
       {shape(ScheduleKind::one_f_one_b, 64, 1, 2048), shape(ScheduleKind::zb_h1, 64, 1, 2048),
        shape(ScheduleKind::interleaved, 32, 2, 1024)}) {
    const PipelineSchedule compact = build_compact_schedule(split);
    ASSERT_EQ(compact.repeats.size(), 1u) << describe(split);
    size_t listed = 0, runs = 0;
    for (int s = 0; s < split.pp; ++s) {
      listed += compact.per_stage[s].size();
      const ScheduleRepeat& r = compact.repeats.front();
      runs += compact.per_stage[s].size() + static_cast<size_t>(r.times - 1) * (r.end[s] - r.begin[s]);
    }
    EXPECT_LT(listed * 5, runs) << describe(split);
    EXPECT_THROW(compute_order(compact, 0), std::logic_error);
  }
}

}  // namespace
}  // namespace ibt::models
