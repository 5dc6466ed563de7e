#include "topologies/calibration/train_runs.hpp"

#include <algorithm>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/stats.hpp"
#include "reports/store/store.hpp"
#include "reports/tables/steps_table.hpp"

namespace ibt::topo {

namespace {

// "dp2" -> 2 when the text starts with `prefix` followed by digits only.
bool degree(const std::string& token, const std::string& prefix, int& out) {
  if (token.size() <= prefix.size() || token.compare(0, prefix.size(), prefix) != 0) return false;
  const std::string digits = token.substr(prefix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  out = std::stoi(digits);
  return true;
}

MeasuredTrainRun from_run(const std::string& path, const store::RunInfo& run) {
  MeasuredTrainRun m;
  m.file = path;
  m.run_id = run.id;
  m.model = run.attr_string("model");
  m.oversubscription = run.oversubscription();
  m.source_format = run.attr_string("source_format");
  m.dtype = run.attr_string("dtype");
  const std::string where = path + ": run " + run.id + ": ";
  if (m.model.empty()) throw UsageError(where + "has no 'model' attribute (not an `ibt train` run)");
  try {
    m.split = parse_split(run.attr_string("split"));
  } catch (const UsageError& e) {
    throw UsageError(where + e.what());
  }
  const std::string config = run.attr_string("config");
  if (!config.empty()) {
    const auto j = nlohmann::json::parse(config, nullptr, false);
    m.checked = j.is_object() && j.value("check", false);
  }
  using tables::StepRow;
  const store::TableData t = store::read_table(path, run.id, std::string(StepRow::kTable));
  const store::RowReader<StepRow> steps(t.columns);
  if (!steps.has(&StepRow::step) || !steps.has(&StepRow::step_time) || !steps.has(&StepRow::compute) ||
      !steps.has(&StepRow::tp_comm) || !steps.has(&StepRow::pp_comm_and_bubble) || !steps.has(&StepRow::dp_comm) ||
      !steps.has(&StepRow::ep_comm) || !steps.has(&StepRow::other))
    throw UsageError(where +
                     "table 'steps' lacks step, step_time or a time-breakdown column "
                     "(compute, tp_comm, pp_comm_and_bubble, dp_comm, ep_comm, other)");
  // The fastest timed step, all figures from that one row (they add up): interference
  // from other processes only ever adds time, so the least-disturbed step is the best
  // estimate of what the machine does alone.
  std::optional<StepRow> best;
  std::vector<double> times;
  for (const auto& cells : t.rows) {
    const StepRow row = steps.read(cells);
    if (row.step < 1 && t.rows.size() > 1) continue;  // warm-up step
    ++m.timed_steps;
    times.push_back(row.step_time);
    if (!best || row.step_time < best->step_time) best = row;
  }
  if (!best) throw UsageError(where + "table 'steps' has no rows");
  m.step_s = best->step_time;
  // A log comes from a cluster the job had to itself, and its framework and `import-log`
  // state the median iteration: the figure the user saw is the one compared and fitted.
  if (!m.source_format.empty()) m.step_s = median(times);
  m.compute_s = best->compute;
  m.tp_s = best->tp_comm;
  m.pp_s = best->pp_comm_and_bubble;
  m.dp_s = best->dp_comm;
  m.ep_s = best->ep_comm;
  m.other_s = best->other;
  return m;
}

bool is_train_run(const store::RunInfo& run) {
  return std::find(run.tables.begin(), run.tables.end(), "steps") != run.tables.end() &&
         !run.attr_string("split").empty();
}

}  // namespace

models::ParallelSplit parse_split(const std::string& text) {
  models::ParallelSplit s;
  std::istringstream in(text);
  std::string token;
  bool schedule = false;
  int seen = 0;
  while (in >> token) {
    if (degree(token, "dp", s.dp) || degree(token, "tp", s.tp) || degree(token, "pp", s.pp) ||
        degree(token, "ep", s.ep) || degree(token, "vpp", s.vpp) || degree(token, "m", s.microbatches) ||
        degree(token, "b", s.micro_batch_size)) {
      ++seen;
    } else if (degree(token, "cp", s.cp)) {
      // context parallel (absent at cp 1)
    } else if (token == "ring") {
      s.cp_comm = models::CpComm::ring;
    } else if (token == "sp") {
      s.sequence_parallel = true;
    } else if (token.size() == 5 && token.rfind("zero", 0) == 0 && token[4] >= '1' && token[4] <= '3') {
      s.zero = token[4] - '0';
    } else if (degree(token, "shard", s.shard_group)) {
    } else if (token.rfind("recompute=", 0) == 0) {
      s.recompute = models::parse_recompute(token.substr(10));
    } else if (!schedule) {
      s.schedule = models::parse_schedule(token);
      schedule = true;
    } else {
      throw UsageError("split '" + text + "': unexpected '" + token + "'");
    }
  }
  if (seen != 7 || !schedule)
    throw UsageError(
        "split '" + text +
        "': expected 'dpN tpN ppN [cpN [ring]] epN vppN mN bN SCHEDULE [sp] [zeroN] [shardN] recompute=R'");
  return s;
}

std::vector<MeasuredTrainRun> read_train_runs(const std::string& path) {
  std::vector<MeasuredTrainRun> out;
  for (const auto& run : store::list_runs(path)) {
    if (!is_train_run(run) || run.attr_string("status") != "complete") continue;
    out.push_back(from_run(path, run));
  }
  return out;
}

std::vector<MeasuredTrainRun> read_train_runs_spec(const std::string& spec) {
  // A run id never contains '/', a path may contain ':': split at the last ':' only
  // when what follows names a run of the file.
  const size_t colon = spec.rfind(':');
  if (colon != std::string::npos && spec.find('/', colon) == std::string::npos) {
    const std::string path = spec.substr(0, colon), id = spec.substr(colon + 1);
    for (const auto& run : store::list_runs(path)) {
      if (run.id != id) continue;
      if (!is_train_run(run)) throw UsageError(spec + ": run " + id + " is not an `ibt train` run (no 'steps' table)");
      return {from_run(path, run)};
    }
    throw UsageError(spec + ": " + path + " has no run '" + id + "'");
  }
  std::vector<MeasuredTrainRun> runs = read_train_runs(spec);
  if (runs.empty()) throw UsageError(spec + ": holds no complete `ibt train` run");
  return runs;
}

}  // namespace ibt::topo
