#include "reports/text/run_selection.hpp"

#include <algorithm>
#include <set>

#include "core/errors.hpp"

namespace ibt::reports {

namespace {

// A run id's number, or nothing for a name that is not a (reasonably short) number.
std::optional<unsigned long long> id_number(const std::string& id) {
  if (id.empty() || id.size() > 18 || id.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoull(id);
}

std::string describe_runs(const std::vector<store::RunInfo>& runs) {
  if (runs.empty()) return "the file holds no runs";
  if (runs.size() == 1) return "the file holds run " + runs.front().id;
  return "the file holds runs " + runs.front().id + " to " + runs.back().id;
}

}  // namespace

const store::RunInfo& find_run(const std::vector<store::RunInfo>& runs, const std::string& spec,
                               const std::string& path) {
  if (spec == "last" && !runs.empty()) return runs.back();
  const auto number = id_number(spec);
  for (const auto& run : runs)
    if (run.id == spec || (number && id_number(run.id) == number)) return run;
  throw UsageError(path + ": no run '" + spec + "' (" + describe_runs(runs) + ")");
}

std::vector<store::RunInfo> select_runs(const std::vector<store::RunInfo>& runs, const std::optional<std::string>& run,
                                        const std::string& path) {
  if (!run) return runs;
  return {find_run(runs, *run, path)};
}

std::vector<std::string> select_tables(const store::RunInfo& run, const std::optional<std::string>& table) {
  if (!table) return run.tables;
  if (std::find(run.tables.begin(), run.tables.end(), *table) == run.tables.end()) return {};
  return {*table};
}

void require_table_somewhere(const std::vector<store::RunInfo>& runs, const std::optional<std::string>& table,
                             const std::string& path) {
  if (!table) return;
  std::set<std::string> names;
  for (const auto& run : runs) {
    names.insert(run.tables.begin(), run.tables.end());
    if (names.count(*table)) return;
  }
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  throw UsageError(path + ": no table '" + *table +
                   "' in the selected runs (tables: " + (known.empty() ? "none" : known) + ")");
}

}  // namespace ibt::reports
