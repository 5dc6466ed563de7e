// ibt accept --from: a results file's collectives run (and its newest p2p matrix) read
// back as the measurements to judge.
#include "collectives/acceptance/accept_from_file.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <variant>

#include "collectives/runtime/p2p_tables.hpp"
#include "core/errors.hpp"
#include "core/text_wrap.hpp"
#include "reports/tables/collectives_table.hpp"
#include "reports/text/run_selection.hpp"

namespace ibt::suites {
namespace {

using tables::CollectiveRow;

bool has_table(const store::RunInfo& run, const std::string& table) {
  return std::find(run.tables.begin(), run.tables.end(), table) != run.tables.end();
}

// A run that started on a busy host (load average above its cores: recorded by the job
// facts since 0.1.0's load_average_1m) measured other work too; said, not refused.
void warn_about_load(const store::RunInfo& run, const std::string& from) {
  const auto load = run.attr("load_average_1m");
  if (!load || !std::holds_alternative<double>(*load)) return;
  const std::string cores_text = run.attr_string("cores_per_host");
  const int cores = std::atoi(cores_text.c_str());  // the first host's: rank 0's, where the load was read
  if (cores > 0 && std::get<double>(*load) > cores)
    std::fprintf(stderr,
                 "# warning: run %s of %s started with a load average of %.1f on a %d-core host: other work "
                 "shared the machine, and its timings include it\n",
                 run.id.c_str(), from.c_str(), std::get<double>(*load), cores);
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
    if (has_table(r, std::string(CollectiveRow::kTable))) with_collectives.push_back(r);
  if (with_collectives.empty())
    throw UsageError("--from " + from + ": no run with a collectives table (write one with `ibt collectives --out " +
                     from + "`)");
  const store::RunInfo& run = run_spec == "last" ? with_collectives.back() : reports::find_run(runs, run_spec, from);
  if (!has_table(run, std::string(CollectiveRow::kTable)))
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
  warn_about_load(run, from);
  const store::TableData t = store::read_table(from, run.id, std::string(CollectiveRow::kTable));
  const store::RowReader<CollectiveRow> reader(t.columns);
  const std::string lacking =
      reader.missing(&CollectiveRow::op, &CollectiveRow::scope, &CollectiveRow::dtype, &CollectiveRow::placement,
                     &CollectiveRow::bytes, &CollectiveRow::time_us, &CollectiveRow::p50_us, &CollectiveRow::p99_us,
                     &CollectiveRow::algbw_GBps, &CollectiveRow::busbw_GBps, &CollectiveRow::wrong);
  if (!t.rows.empty() && !lacking.empty()) throw UsageError("the table has no column '" + lacking + "'");
  std::size_t rows = 0;
  for (const auto& cells : t.rows) {
    const CollectiveRow row = reader.read(cells);
    Measurement m;
    m.op = row.op;
    m.scope = row.scope;
    m.dtype = row.dtype;
    m.placement = row.placement == "in" ? Placement::in_place : Placement::out_of_place;
    m.bytes = row.bytes;
    m.time_us = row.time_us;
    m.p50_us = row.p50_us;
    m.p99_us = row.p99_us;
    m.algbw_GBps = row.algbw_GBps;
    m.busbw_GBps = row.busbw_GBps;
    m.wrong = row.wrong;
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
    if (!has_table(*it, std::string(P2pRow::kTable))) continue;
    const store::TableData p = store::read_table(from, it->id, std::string(P2pRow::kTable));
    const store::RowReader<P2pRow> pairs(p.columns);
    const std::string lacks = pairs.missing(&P2pRow::rank_a, &P2pRow::rank_b, &P2pRow::bytes, &P2pRow::time_us,
                                            &P2pRow::p50_us, &P2pRow::p99_us, &P2pRow::bandwidth_GBps, &P2pRow::wrong);
    if (!p.rows.empty() && !lacks.empty()) throw UsageError("the table has no column '" + lacks + "'");
    for (const auto& cells : p.rows) {
      const P2pRow row = pairs.read(cells);
      P2pResult r;
      r.rank_a = static_cast<int>(row.rank_a);
      r.rank_b = static_cast<int>(row.rank_b);
      r.bytes = row.bytes;
      r.time_us = row.time_us;
      r.p50_us = row.p50_us;
      r.p99_us = row.p99_us;
      r.bandwidth_GBps = row.bandwidth_GBps;
      r.wrong = row.wrong;
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
