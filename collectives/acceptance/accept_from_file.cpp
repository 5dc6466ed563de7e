// ibt accept --from: a results file's collectives run (and its newest p2p matrix) read
// back as the measurements to judge.
#include "collectives/acceptance/accept_from_file.hpp"

#include <algorithm>
#include <cstdio>
#include <variant>

#include "collectives/results_schema.hpp"
#include "core/errors.hpp"
#include "core/text_wrap.hpp"
#include "reports/text/run_selection.hpp"

namespace ibt::suites {
namespace {

std::string cell_string(const store::TableData& t, const store::Row& row, const char* column) {
  const int i = t.column_index(column);
  if (i < 0) throw UsageError(std::string("the table has no column '") + column + "'");
  return std::get<std::string>(row[i]);
}

double cell_number(const store::TableData& t, const store::Row& row, const char* column) {
  const int i = t.column_index(column);
  if (i < 0) throw UsageError(std::string("the table has no column '") + column + "'");
  return store::as_number(row[i]);
}

bool has_table(const store::RunInfo& run, const std::string& table) {
  return std::find(run.tables.begin(), run.tables.end(), table) != run.tables.end();
}

}  // namespace

// --from: the measurements an earlier `ibt collectives` run (and the newest p2p matrix in
// the same file) stored. The run must be of the reference's job size.
AcceptMeasurements read_accept_measurements(const std::string& from, const std::string& run_spec,
                                            const std::string& reference_path, const AcceptReference& ref,
                                            std::FILE* log, std::size_t width) {
  const auto runs = store::list_runs(from);
  std::vector<store::RunInfo> with_collectives;
  for (const auto& r : runs)
    if (has_table(r, kCollectivesTable)) with_collectives.push_back(r);
  if (with_collectives.empty())
    throw UsageError("--from " + from + ": no run with a collectives table (write one with `ibt collectives --out " +
                     from + "`)");
  const store::RunInfo& run = run_spec == "last" ? with_collectives.back() : reports::find_run(runs, run_spec, from);
  if (!has_table(run, kCollectivesTable))
    throw UsageError("--from " + from + ": run " + run.id + " has no collectives table");
  AcceptMeasurements measured;
  measured.source = from + " run " + run.id;
  measured.config_json = run.attr_string("config");
  const auto world = run.attr("world_size");
  const long long ranks = world ? static_cast<long long>(std::visit(
                                      [](const auto& v) -> double {
                                        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>)
                                          return 0;
                                        else
                                          return static_cast<double>(v);
                                      },
                                      *world))
                                : 0;
  measured.ranks = ranks;
  if (ref.job.ranks > 0 && ranks != ref.job.ranks)
    throw UsageError(reference_path + ": the reference is for " + std::to_string(ref.job.ranks) + " ranks; run " +
                     run.id + " of " + from + " had " + std::to_string(ranks));
  const auto domains_attr = run.attr("domains");
  measured.intra_is_world =
      domains_attr && std::holds_alternative<std::int64_t>(*domains_attr) && std::get<std::int64_t>(*domains_attr) == 1;
  if (const std::string status = run.attr_string("status"); status != "complete")
    std::fprintf(stderr, "# note: run %s of %s is %s%s: judging the rows it stored\n", run.id.c_str(), from.c_str(),
                 status.c_str(),
                 run.attr_string("error").empty() ? "" : (" (" + run.attr_string("error") + ")").c_str());
  if (const std::string over = run.oversubscription(); !over.empty())
    std::fprintf(stderr, "# warning: run %s was oversubscribed (%s): its timings measure the scheduler\n",
                 run.id.c_str(), over.c_str());
  const store::TableData t = store::read_table(from, run.id, kCollectivesTable);
  std::size_t rows = 0;
  for (const auto& row : t.rows) {
    Measurement m;
    m.op = cell_string(t, row, "op");
    m.scope = cell_string(t, row, "scope");
    m.dtype = cell_string(t, row, "dtype");
    m.placement = cell_string(t, row, "placement") == "in" ? Placement::in_place : Placement::out_of_place;
    m.bytes = static_cast<std::size_t>(cell_number(t, row, "bytes"));
    m.time_us = cell_number(t, row, "time_us");
    m.p50_us = cell_number(t, row, "p50_us");
    m.p99_us = cell_number(t, row, "p99_us");
    m.algbw_GBps = cell_number(t, row, "algbw_GBps");
    m.busbw_GBps = cell_number(t, row, "busbw_GBps");
    m.wrong = static_cast<std::uint64_t>(cell_number(t, row, "wrong"));
    measured.wrong += m.wrong;
    const auto key = std::make_tuple(m.op, m.scope, m.dtype, m.bytes);
    // Out-of-place is judged, as when measuring; in-place where an op has only that (broadcast).
    // With -N cycles the last cycle's row counts.
    const auto it = measured.collectives.find(key);
    if (it == measured.collectives.end() || m.placement == Placement::out_of_place ||
        it->second.placement == Placement::in_place)
      measured.collectives[key] = m;
    ++rows;
  }
  const std::string judging = "# judging " + measured.source + ": " + std::to_string(rows) + " collectives rows" +
                              (measured.intra_is_world ? " (one domain: intra metrics read the world rows)" : "") +
                              "\n";
  std::fputs(comment_lines(judging, width).c_str(), log);
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    if (!has_table(*it, kP2pTable)) continue;
    const store::TableData p = store::read_table(from, it->id, kP2pTable);
    for (const auto& row : p.rows) {
      P2pResult r;
      r.rank_a = static_cast<int>(cell_number(p, row, "rank_a"));
      r.rank_b = static_cast<int>(cell_number(p, row, "rank_b"));
      r.bytes = static_cast<std::size_t>(cell_number(p, row, "bytes"));
      r.time_us = cell_number(p, row, "time_us");
      r.p50_us = cell_number(p, row, "p50_us");
      r.p99_us = cell_number(p, row, "p99_us");
      r.bandwidth_GBps = cell_number(p, row, "bandwidth_GBps");
      r.wrong = static_cast<std::uint64_t>(cell_number(p, row, "wrong"));
      measured.wrong += r.wrong;
      measured.p2p_from_file.push_back(r);
    }
    measured.p2p_read = true;
    measured.source += ", p2p matrix from run " + it->id;
    const std::string p2p =
        "# judging p2p metrics from run " + it->id + ": " + std::to_string(p.rows.size()) + " pairs x sizes\n";
    std::fputs(comment_lines(p2p, width).c_str(), log);
    break;
  }
  return measured;
}

}  // namespace ibt::suites
