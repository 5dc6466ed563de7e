// The atlas (topologies/studies/atlas.hpp): the verdict-vs-practice rules, the deciding term,
// the shipped cell list, and one small cell run end to end.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/errors.hpp"
#include "models/plan/model_file.hpp"
#include "tests/topologies/studies/projection_parts.hpp"
#include "topologies/studies/atlas.hpp"

namespace ibt::topo {
namespace {

TEST(Atlas, AgreementRules) {
  EXPECT_EQ(atlas_agreement("PP needed", "pp"), "agrees");
  EXPECT_EQ(atlas_agreement("PP not needed", "no-pp"), "agrees");
  EXPECT_EQ(atlas_agreement("PP needed", "no-pp"), "disagrees");
  EXPECT_EQ(atlas_agreement("PP not needed", "pp"), "disagrees");
  EXPECT_EQ(atlas_agreement("within uncertainty", "pp"), "undecided");
  EXPECT_EQ(atlas_agreement("within uncertainty", "no-pp"), "undecided");
  EXPECT_EQ(atlas_agreement("PP needed", "none"), "no practice");
  EXPECT_THROW(atlas_agreement("maybe", "pp"), RuntimeError);
}

constexpr auto breakdown = testing::projection_of_parts;

TEST(Atlas, DecidingTermIsThePartTheWinnerSavesMostOn) {
  AtlasCell c;
  c.entry.practice = "pp";
  c.cell.verdict = PpVerdict::needed;
  // Without PP: 10 s compute + 5 s exposed DP; with PP: 10 s + 2 s bubble. PP wins by
  // the DP time it does not expose, despite its bubble.
  c.cell.best_no_pp = breakdown(1, 10, Exposure::dp, 5);
  c.cell.best_with_pp = breakdown(16, 10, Exposure::bubble, 2);
  explain(c);
  EXPECT_EQ(c.agreement, "agrees");
  EXPECT_EQ(c.deciding_term, "exposed dp");
  EXPECT_NE(c.why.find("PP wins on exposed dp"), std::string::npos) << c.why;

  // Without PP 10 + 1 s; with PP 10 + 3 s bubble: no PP wins, on the bubble.
  c.cell.verdict = PpVerdict::not_needed;
  c.cell.best_no_pp = breakdown(1, 10, Exposure::dp, 1);
  c.cell.best_with_pp = breakdown(8, 10, Exposure::bubble, 3);
  explain(c);
  EXPECT_EQ(c.agreement, "disagrees");
  EXPECT_EQ(c.deciding_term, "bubble");
  EXPECT_NE(c.why.find("no PP wins on bubble"), std::string::npos) << c.why;

  // Nothing without PP fits: memory decides (and the verdict is "PP needed").
  c.cell.best_no_pp = Projection{};
  c.cell.verdict = PpVerdict::needed;
  explain(c);
  EXPECT_EQ(c.deciding_term, "memory");
  EXPECT_EQ(c.agreement, "agrees");

  // Nothing fits at all: no answer, and the agreement says so whatever the practice.
  c.cell.best_with_pp = Projection{};
  c.cell.verdict = PpVerdict::nothing_fits;
  explain(c);
  EXPECT_EQ(c.agreement, "nothing fits");
  EXPECT_EQ(c.deciding_term, "memory");
}

TEST(Atlas, DecidingTermComesFromTheBottleneckStage) {
  AtlasCell c;
  c.entry.practice = "pp";
  c.cell.verdict = PpVerdict::needed;
  c.cell.best_no_pp = breakdown(1, 10, Exposure::ep, 5);  // 15 s
  // With PP (12 s): stage 0 computes 3 s and waits 9 s for stage 1, which computes 10 s
  // and exposes 2 s of EP. Stage 0 alone would name "compute" (7 s less than without
  // PP); the bottleneck computes as much as no PP and exposes 3 s less EP.
  Projection pp = breakdown(2, 3, Exposure::bubble, 9);
  Projection::StageBreakdown first, second;
  first.compute_s = 3;
  first.exposed_s[static_cast<int>(Exposure::bubble)] = 9;
  second.compute_s = 10;
  second.exposed_s[static_cast<int>(Exposure::ep)] = 2;
  pp.stages = {first, second};
  pp.bottleneck_stage = 1;
  c.cell.best_with_pp = pp;
  explain(c);
  EXPECT_EQ(c.deciding_term, "exposed ep") << c.why;

  // Only stage 0 known (a split as a search leaves it): its breakdown is used.
  c.cell.best_with_pp.stages = {first};
  c.cell.best_with_pp.bottleneck_stage = 0;
  explain(c);
  EXPECT_EQ(c.deciding_term, "compute") << c.why;
}

TEST(Atlas, ShippedCellsCoverEveryModelOnEverySystem) {
  const AtlasSpec s = load_atlas(default_atlas_path());
  std::set<std::pair<std::string, std::string>> pairs;
  for (const auto& e : s.cells) {
    pairs.insert({e.model, e.topology});
    EXPECT_NO_THROW(models::load_model(e.model)) << e.model;
    EXPECT_NO_THROW(load_topology(e.topology)) << e.topology;
    EXPECT_TRUE(s.source(e.scale_source));
  }
  for (const char* m : {"gpt3-175b", "llama3-405b", "deepseek-v3", "kimi-k2"})
    for (const char* t : {"dgx-a100", "dgx-h100", "dgx-b200", "gb200-nvl72", "tpu-v4", "tpu-v5p"})
      EXPECT_TRUE(pairs.count({m, t})) << m << " on " << t;
  // The practice the issue states: PP on 8-GPU 400G systems for 405B dense and the two MoE
  // models; no PP on TPU v5p.
  for (const auto& e : s.cells) {
    if (e.topology == "dgx-h100" && e.model != "gpt3-175b") {
      EXPECT_EQ(e.practice, "pp") << e.model;
    }
    if (e.topology == "tpu-v5p") {
      EXPECT_EQ(e.practice, "no-pp") << e.model;
    }
  }
  EXPECT_EQ(select_cells(s, {"gpt3-175b"}, {"dgx-a100", "tpu-v4"}).size(), 2u);
  EXPECT_THROW(select_cells(s, {"gpt-5"}, {}), UsageError);
}

TEST(Atlas, BadSpecsAreUsageErrorsNamingTheField) {
  const std::string head = R"({"sources": {"a": "https://example.org"}, "cells": [)";
  const std::string good =
      R"({"model": "llama3-8b", "topology": "dgx-h100", "devices": 64, "global_batch": 64, "framework": "ibt",
          "scale": "chosen", "scale_source": "a", "practice": "pp", "practice_source": "a"})";
  EXPECT_EQ(parse_atlas(head + good + "]}", "x.json").cells.size(), 1u);
  auto error_of = [&](const std::string& cell) {
    try {
      parse_atlas(head + cell + "]}", "x.json");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string bad = good;
  bad.replace(bad.find("\"pp\""), 4, "\"maybe\"");
  EXPECT_NE(error_of(bad).find("field 'practice'"), std::string::npos) << error_of(bad);
  bad = good;
  bad.replace(bad.find("\"practice_source\": \"a\""), 22, "\"practice_source\": \"b\"");
  EXPECT_NE(error_of(bad).find("source 'b' is not listed"), std::string::npos) << error_of(bad);
  bad = good;
  bad.replace(bad.find("64,"), 2, "0");
  EXPECT_NE(error_of(bad).find("field 'devices'"), std::string::npos) << error_of(bad);
  EXPECT_NE(error_of(good + "," + good).find("listed twice"), std::string::npos);
}

// One small cell end to end: the verdict follows the gain and the band, the agreement
// follows the verdict, and the deciding term's seconds explain which best is faster.
TEST(Atlas, SmallCellRunsOneCrossoverAtTheSystemsOwnFabric) {
  AtlasEntry e;
  e.model = "llama3-8b";
  e.topology = "dgx-h100";
  e.framework = "megatron-core";
  e.devices = 64;
  e.global_batch = 64;
  e.practice = "pp";
  keep_freed_memory_for_reuse();
  const AtlasCell c = run_atlas_cell(e, 0.05);
  EXPECT_EQ(c.cell.domain_size, 8);
  EXPECT_DOUBLE_EQ(c.cell.scale_out_gbps, 400.0);
  ASSERT_TRUE(c.cell.best_no_pp.feasible);
  ASSERT_TRUE(c.cell.best_with_pp.feasible);
  EXPECT_EQ(c.cell.best_no_pp.split.pp, 1);
  EXPECT_GT(c.cell.best_with_pp.split.pp, 1);
  EXPECT_GT(c.cell.uncertainty, 0.0);  // dgx-h100 has a validation band
  const double g = c.cell.best_with_pp.mfu / c.cell.best_no_pp.mfu - 1;
  EXPECT_NEAR(c.cell.gain, g, 1e-12);
  const std::string verdict = g > 0.05 + c.cell.uncertainty   ? "PP needed"
                              : g < 0.05 - c.cell.uncertainty ? "PP not needed"
                                                              : "within uncertainty";
  EXPECT_EQ(verdict_text(c.cell.verdict), verdict);
  EXPECT_EQ(c.agreement, atlas_agreement(verdict, "pp"));
  EXPECT_FALSE(c.deciding_term.empty());
  EXPECT_NE(c.why.find(c.cell.best_with_pp.step_s < c.cell.best_no_pp.step_s ? "PP wins" : "no PP wins"),
            std::string::npos)
      << c.why;
}

}  // namespace
}  // namespace ibt::topo

namespace ibt::topo {
namespace {

// A system without a scale-out network (TPU v4: one pod) holds a job inside its domain
// and reports no scale-out bandwidth; a job beyond the pod is refused, naming why.
TEST(Atlas, SystemWithoutScaleOutHoldsTheJobInOneDomain) {
  AtlasEntry e;
  e.model = "llama3-8b";
  e.topology = "tpu-v4";
  e.framework = "maxtext";
  e.devices = 8192;
  e.global_batch = 1024;
  e.practice = "no-pp";
  try {
    run_atlas_cell(e, 0.05);
    ADD_FAILURE() << "8,192 chips on a 4,096-chip pod without scale-out was accepted";
  } catch (const UsageError& err) {
    EXPECT_NE(std::string(err.what()).find("no scale-out network"), std::string::npos) << err.what();
  }
  e.devices = 64;
  e.global_batch = 64;
  keep_freed_memory_for_reuse();
  const AtlasCell c = run_atlas_cell(e, 0.05);
  EXPECT_EQ(c.cell.domain_size, 4096);
  EXPECT_EQ(c.cell.scale_out_gbps, 0.0);
  EXPECT_TRUE(c.cell.best_no_pp.feasible || c.cell.best_with_pp.feasible);
}

}  // namespace
}  // namespace ibt::topo
