// ibt accept's verdicts: every metric judged on what was measured, the PASS/FAIL table
// printed and each verdict stored as a row of table "accept".
#include "collectives/acceptance/accept_judge.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "collectives/acceptance/accept_table.hpp"
#include "core/stats.hpp"
#include "core/text_table.hpp"

namespace ibt::suites {

std::string format_judged_value(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

namespace {

// The values a metric is judged on, and a note on what they cover.
std::vector<double> metric_values(const AcceptMetric& m, const AcceptMeasurements& measured, std::string& note) {
  std::vector<double> values;
  if (m.is_p2p()) {
    std::vector<double> per_pair;
    const std::vector<P2pResult>& rows = measured.p2p ? measured.p2p->results() : measured.p2p_from_file;
    for (const auto& r : rows)
      if (r.bytes == m.min_bytes) per_pair.push_back(m.unit == "GB/s" ? r.bandwidth_GBps : r.p50_us);
    if (!per_pair.empty()) {
      std::sort(per_pair.begin(), per_pair.end());
      const bool median = m.quantity.find("median") != std::string::npos;
      const bool minimum = m.quantity.find("_min_") != std::string::npos;
      values.push_back(median ? quantile(per_pair, 0.5) : minimum ? per_pair.front() : per_pair.back());
      note = std::to_string(per_pair.size()) + " pairs";
    }
    return values;
  }
  int sizes = 0;
  // A one-domain collectives run measured intra once, as world (collectives --scope all).
  const std::string scope_wanted = m.scope == "intra" && measured.intra_is_world ? "world" : m.scope;
  for (const auto& [key, meas] : measured.collectives) {
    const auto& [op, scope, dtype, bytes] = key;
    if (op != m.op || scope != scope_wanted || dtype != m.dtype || bytes < m.min_bytes || bytes > m.max_bytes) continue;
    ++sizes;
    values.push_back(m.quantity == "time_us"      ? meas.time_us
                     : m.quantity == "p50_us"     ? meas.p50_us
                     : m.quantity == "busbw_GBps" ? meas.busbw_GBps
                                                  : meas.algbw_GBps);
  }
  if (sizes > 1) note = m.over_sizes + " over " + std::to_string(sizes) + " sizes";
  if (sizes > 0 && scope_wanted != m.scope)
    note += std::string(note.empty() ? "" : "; ") + "intra = world (one domain)";
  return values;
}

}  // namespace

std::vector<Verdict> judge_metrics(const AcceptReference& ref, const AcceptMeasurements& measured) {
  std::vector<Verdict> verdicts;
  for (const auto& m : ref.metrics) {
    std::string note;
    const std::vector<double> values = metric_values(m, measured, note);
    Verdict v{&m, judge(m, values), note};
    if (!v.judgement.measured_ok)
      v.note = !measured.source.empty() && m.is_p2p() && !measured.p2p_read
                   ? "not in the file: no p2p matrix run (ibt p2p-matrix --sizes " + std::to_string(m.min_bytes) +
                         " --out FILE)"
               : !measured.source.empty()
                   ? "not in the file (run ibt collectives with this op, scope, dtype and size)"
                   : "not measured (the op may need another group size, or the size was rounded)";
    verdicts.push_back(v);
  }
  return verdicts;
}

namespace {

// The verdict table. Wide: the printf widths it always had, each row laid out on its own
// (row_text), so a long metric name pushes only its own row, as printf did. Otherwise the
// columns as wide as their cells, the verdict and its note wrapping within `width`.
TextTable verdict_table(bool wide) {
  using Align = TextTable::Align;
  TextTable t;
  t.add_column({"metric", Align::left, "", wide ? 44u : 0u});
  t.add_column({"statistic", Align::left, "", wide ? 18u : 0u});
  t.add_column({"measured", Align::right, "", wide ? 12u : 0u});
  t.add_column({"target", Align::right, "", wide ? 12u : 0u});
  t.add_column({"bounds", Align::right, "", wide ? 25u : 0u});
  t.add_column({"unit", Align::right, "", wide ? 6u : 0u});
  t.add_column({"margin", Align::right, "", wide ? 8u : 0u});
  t.add_column(TextTable::Column("verdict", Align::left).after("  "));
  // Within a width, a verdict's note goes on a line of its own under the statistic, so a
  // long one reads as a sentence; wide, it follows the verdict on its line as it always did.
  if (!wide) t.add_column(TextTable::Column("", Align::left).after("  ").breaking_under(1).wrapping());
  return t;
}

std::vector<std::string> verdict_cells(const Verdict& v, bool wide) {
  const auto& m = *v.metric;
  const std::string bounds =
      "[" + format_judged_value(m.lower_bound()) + ", " + format_judged_value(m.upper_bound()) + "]";
  char margin[32];
  std::snprintf(margin, sizeof margin, "%+.3f", v.judgement.margin);
  const std::string pass = v.judgement.pass ? "PASS" : "FAIL";
  std::vector<std::string> cells = {m.name,
                                    m.quantity,
                                    format_judged_value(v.judgement.measured),
                                    format_judged_value(m.target),
                                    bounds,
                                    m.unit,
                                    v.judgement.measured_ok ? margin : "n/a",
                                    wide ? pass + (v.note.empty() ? "" : "  ") + v.note : pass};
  if (!wide) cells.push_back(v.note);
  return cells;
}

}  // namespace

Failures print_and_record_verdicts(const std::vector<Verdict>& verdicts, RunRecorder& recorder, std::size_t width) {
  TextTable table = verdict_table(width == 0);
  TextTable::Style style;
  style.header_indent = "# ";
  style.indent = "  ";
  style.gap = " ";
  style.rule = false;
  style.width = width;
  if (width == 0) {
    std::printf("#\n%s", table.header_text(style).c_str());
    for (const auto& v : verdicts) std::printf("%s", table.row_text(verdict_cells(v, true), style).c_str());
  } else {
    for (const auto& v : verdicts) table.add_row(verdict_cells(v, false));
    std::printf("#\n%s", table.render(style).c_str());
  }
  Failures failed;
  for (const auto& v : verdicts) {
    const auto& m = *v.metric;
    if (!v.judgement.pass) {
      ++failed.count;
      failed.names += (failed.names.empty() ? "" : ", ") + m.name;
    }
    recorder.append(AcceptRow{m.name, m.op, m.scope, m.dtype, m.min_bytes, m.max_bytes, m.quantity, m.unit,
                              v.judgement.measured, m.target, m.lower_bound(), m.upper_bound(), v.judgement.margin,
                              v.judgement.pass ? "PASS" : "FAIL", v.note});
  }
  return failed;
}

}  // namespace ibt::suites
