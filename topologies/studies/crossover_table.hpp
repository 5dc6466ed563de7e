#pragma once
// The "crossover" table of an `ibt crossover` run, one row per (domain size, scale-out
// rate) cell (core/row_schema.hpp); the report and `ibt report --compare` read it. Where
// no split fits, the MFUs, step times and gain are NaN, never 0. Where only one side has
// a split that fits (a verdict forced by divisibility or memory) the gain is NaN too and
// decided_by / verdict_reason say why (files before them stored 1e300 where only PP fit
// and -1 where only no PP did).
#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "core/row_schema.hpp"

namespace ibt::topo {

struct CrossoverCellRow {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  std::int64_t domain_size = 0;
  double scale_out_Gbps = 0;
  double mfu_no_pp = kNone, mfu_with_pp = kNone, step_no_pp_s = kNone, step_with_pp_s = kNone, gain = kNone;
  double gain_uncertainty = 0;
  std::string verdict;
  std::int64_t pp_needed = 0;
  std::string split_no_pp, split_with_pp, strategy_no_pp, strategy_with_pp;
  double goodput_no_pp = kNone, goodput_with_pp = kNone, goodput_mfu_no_pp = kNone, goodput_mfu_with_pp = kNone;
  std::string decided_by, verdict_reason;

  static constexpr std::string_view kTable = "crossover";
  static constexpr std::array<store::Field<CrossoverCellRow>, 20> kFields{{
      {"domain_size", &CrossoverCellRow::domain_size, "devices", "devices per scale-up domain"},
      {"scale_out_Gbps", &CrossoverCellRow::scale_out_Gbps, "Gb/s", "the scale-out network's rate per device"},
      {"mfu_no_pp", &CrossoverCellRow::mfu_no_pp, "fraction", "the best MFU without pipeline parallelism"},
      {"mfu_with_pp", &CrossoverCellRow::mfu_with_pp, "fraction", "the best MFU with it"},
      {"step_no_pp_s", &CrossoverCellRow::step_no_pp_s, "s", "the step time of the best split without PP"},
      {"step_with_pp_s", &CrossoverCellRow::step_with_pp_s, "s", "the step time of the best split with PP"},
      {"gain", &CrossoverCellRow::gain, "", "PP's relative gain in the ranking figure"},
      {"gain_uncertainty", &CrossoverCellRow::gain_uncertainty, "",
       "u: the gain's uncertainty the verdict used (0.166 = +-16.6 points; the run's `uncertainty` says its source)"},
      {"verdict", &CrossoverCellRow::verdict, "", "pp_verdict()'s words (topologies/studies/verdict.hpp)"},
      {"pp_needed", &CrossoverCellRow::pp_needed, "", "1 exactly when the verdict is \"PP needed\""},
      {"split_no_pp", &CrossoverCellRow::split_no_pp, "", "the best split without PP, or (none fits)"},
      {"split_with_pp", &CrossoverCellRow::split_with_pp, "", "the best split with PP, or (none fits)"},
      {"strategy_no_pp", &CrossoverCellRow::strategy_no_pp, "", "its strategy in words (empty when none fits)"},
      {"strategy_with_pp", &CrossoverCellRow::strategy_with_pp, "", "its strategy in words (empty when none fits)"},
      {"goodput_no_pp", &CrossoverCellRow::goodput_no_pp, "", "goodput of the best split without PP"},
      {"goodput_with_pp", &CrossoverCellRow::goodput_with_pp, "", "goodput of the best split with PP"},
      {"goodput_mfu_no_pp", &CrossoverCellRow::goodput_mfu_no_pp, "", "MFU x goodput without PP"},
      {"goodput_mfu_with_pp", &CrossoverCellRow::goodput_mfu_with_pp, "", "MFU x goodput with PP"},
      {"decided_by", &CrossoverCellRow::decided_by, "",
       "what settled the verdict: gain, divisibility, memory or nothing fits (crossover.hpp's PpDecidedBy)"},
      {"verdict_reason", &CrossoverCellRow::verdict_reason, "",
       "unless the gain decided, why in words, e.g. no split without PP fits in 80 GB"},
  }};
};

// A cell as its row (crossover.hpp).
struct CrossoverCell;
CrossoverCellRow crossover_row(const CrossoverCell& c);

}  // namespace ibt::topo
