#pragma once
// Choosing runs and tables of a results file by what a user types on the command line.
#include <optional>
#include <string>
#include <vector>

#include "reports/store/store.hpp"

namespace ibt::reports {

// The run named by `spec`: its id ("000003"), the number alone ("3"), or "last" for the
// newest run. Throws UsageError naming the file and the runs it holds.
const store::RunInfo& find_run(const std::vector<store::RunInfo>& runs, const std::string& spec,
                               const std::string& path);

// All runs, or just the one `run` names.
std::vector<store::RunInfo> select_runs(const std::vector<store::RunInfo>& runs, const std::optional<std::string>& run,
                                        const std::string& path);

// The tables of `run` to show or export: all of them, or just `table` when given and present.
std::vector<std::string> select_tables(const store::RunInfo& run, const std::optional<std::string>& table);

// Throws UsageError when `table` is given but none of `runs` holds it.
void require_table_somewhere(const std::vector<store::RunInfo>& runs, const std::optional<std::string>& table,
                             const std::string& path);

}  // namespace ibt::reports
