// Why a crossover verdict is what it is (topologies/studies/verdict_reason.hpp): the one
// sentence, the partial-domain note, and verdicts forced by divisibility or memory saying
// so in the cell and its stored row instead of an infinite gain.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "models/plan/model_file.hpp"
#include "tests/topologies/studies/projection_parts.hpp"
#include "topologies/studies/crossover_table.hpp"
#include "topologies/studies/verdict_reason.hpp"

namespace ibt::topo {
namespace {

constexpr auto part = testing::projection_of_parts;

TEST(VerdictReason, DomainFitNoteSaysWhereAJobLeavesAPartialDomain) {
  EXPECT_EQ(domain_fit_note(1024, 72), "1024 devices fill 14 domains of 72 and 16 devices of a 15th");
  EXPECT_EQ(domain_fit_note(100, 72), "100 devices fill 1 domain of 72 and 28 devices of a 2nd");
  EXPECT_EQ(domain_fit_note(512, 72), "512 devices fill 7 domains of 72 and 8 devices of an 8th");
  EXPECT_EQ(domain_fit_note(730, 72), "730 devices fill 10 domains of 72 and 10 devices of an 11th");
  EXPECT_EQ(domain_fit_note(1300, 72), "1300 devices fill 18 domains of 72 and 4 devices of a 19th");
  EXPECT_EQ(domain_fit_note(5700, 72), "5700 devices fill 79 domains of 72 and 12 devices of an 80th");
  EXPECT_EQ(domain_fit_note(64, 72), "64 devices in one domain of 72");
  EXPECT_EQ(domain_fit_note(144, 72), "");
  EXPECT_EQ(domain_fit_note(2048, 8), "");
}

TEST(VerdictReason, SentenceNamesGainUncertaintyAndTheDecidingTerm) {
  CrossoverCell c;
  c.verdict = PpVerdict::needed;
  c.gain = 0.25;
  c.uncertainty = 0.04;
  // Without PP 10 s compute + 5 s exposed DP; with PP 10 s + 2 s bubble: DP decides.
  c.best_no_pp = part(1, 10, Exposure::dp, 5);
  c.best_with_pp = part(2, 10, Exposure::bubble, 2);
  EXPECT_EQ(verdict_sentence(c),
            "PP needed (gain +25.0%, uncertainty +-4.0%): decided by exposed DP gradient reduction, 5 s (33.3% of the "
            "step) without PP vs 0 s (0.0%) with PP (its first stage)");
  c.best_with_pp.stages.assign(2, Projection::StageBreakdown{10, {}});  // walked stage by stage: the bottleneck's
  c.best_with_pp.stages[0].exposed_s[static_cast<int>(Exposure::bubble)] = 2;
  EXPECT_EQ(verdict_sentence(c).find("(its first stage)"), std::string::npos) << verdict_sentence(c);
  const DecidingTerm d = deciding_term(c);
  EXPECT_TRUE(d.pp_wins);
  EXPECT_EQ(d.term, "exposed dp");
  c.uncertainty = 0;  // no validation band: said, not shown as +-0
  EXPECT_NE(verdict_sentence(c).find("(gain +25.0%, no validation band)"), std::string::npos) << verdict_sentence(c);
}

TEST(VerdictReason, ForcedVerdictSaysWhyAndStoresNoGain) {
  CrossoverCell c;
  c.verdict = PpVerdict::needed;
  c.gain = std::numeric_limits<double>::infinity();
  c.best_with_pp = part(2, 10, Exposure::bubble, 2);
  c.decided_by = PpDecidedBy::memory;
  c.decided_why = "no split without PP fits in 80 GB";
  EXPECT_EQ(verdict_sentence(c), "PP needed: no split without PP fits in 80 GB");
  const CrossoverCellRow row = crossover_row(c);
  EXPECT_TRUE(std::isnan(row.gain)) << row.gain;
  EXPECT_EQ(row.decided_by, "memory");
  EXPECT_EQ(row.verdict_reason, "no split without PP fits in 80 GB");
}

TEST(VerdictReason, SweepNamesDivisibilityWhereNoSplitWithoutPpDividesTheBatch) {
  const auto m = models::load_model("llama3-8b");
  const Topology base = load_topology("dgx-h100");
  keep_freed_memory_for_reuse();
  // 7 devices: dp 7 does not divide 1536 sequences, tp 7 and cp 7 do not suit the model.
  const auto seven = crossover(m, base, 7, {8}, {400}, 1536, 0.05, ProjectionOptions{});
  const CrossoverCell& c = seven.cells.front();
  ASSERT_FALSE(c.best_no_pp.feasible);
  ASSERT_TRUE(c.best_with_pp.feasible);
  EXPECT_EQ(c.verdict, PpVerdict::needed);
  EXPECT_EQ(c.decided_by, PpDecidedBy::divisibility);
  EXPECT_EQ(c.decided_why, "no split without PP divides global batch 1536 over 7 devices");
  // Both sides fit: the gain decides and nothing is forced.
  const auto both = crossover(m, base, 64, {8}, {400}, 64, 0.05, ProjectionOptions{});
  EXPECT_EQ(both.cells.front().decided_by, PpDecidedBy::gain);
  EXPECT_TRUE(both.cells.front().decided_why.empty());
}

}  // namespace
}  // namespace ibt::topo
