#pragma once
// The "accept" table of an `ibt accept` run, one row per reference metric judged
// (core/row_schema.hpp). Its `unit` column is the unit of each row's values, which
// differ by metric: the numeric columns therefore carry no unit of their own.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/row_schema.hpp"

namespace ibt::suites {

struct AcceptRow {
  std::string metric, op, scope, dtype;
  std::uint64_t min_bytes = 0, max_bytes = 0;
  std::string quantity, unit;
  double measured = 0, target = 0, lower_bound = 0, upper_bound = 0, margin = 0;
  std::string verdict, note;

  static constexpr std::string_view kTable = "accept";
  static constexpr std::array<store::Field<AcceptRow>, 15> kFields{{
      {"metric", &AcceptRow::metric, "", "the reference metric's name"},
      {"op", &AcceptRow::op, "", "the collective it judges, or p2p"},
      {"scope", &AcceptRow::scope, "", "intra, inter or world"},
      {"dtype", &AcceptRow::dtype, "", "the element type"},
      {"min_bytes", &AcceptRow::min_bytes, "B", "the smallest size it covers"},
      {"max_bytes", &AcceptRow::max_bytes, "B", "the largest size it covers (equal for one size)"},
      {"quantity", &AcceptRow::quantity, "", "the statistic judged (time_us, busbw_GBps, ...)"},
      {"unit", &AcceptRow::unit, "", "the unit of measured, target and the bounds"},
      {"measured", &AcceptRow::measured, "", "the value judged (NaN when nothing was measured)"},
      {"target", &AcceptRow::target, "", "the reference's target"},
      {"lower_bound", &AcceptRow::lower_bound, "", "the lowest value that passes (-inf: none)"},
      {"upper_bound", &AcceptRow::upper_bound, "", "the highest value that passes (inf: none)"},
      {"margin", &AcceptRow::margin, "", "(measured - target) / target in the good direction: + is better"},
      {"verdict", &AcceptRow::verdict, "", "PASS or FAIL"},
      {"note", &AcceptRow::note, "", "what the value covers, or why nothing was measured"},
  }};
};

}  // namespace ibt::suites
