#pragma once
// Runs of a results file as text for people (`ibt show`).
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "reports/store/store.hpp"

namespace ibt::reports {

// A table value for reading, not for round-tripping: floats with two decimals (or
// three significant digits below 1), integers and strings as they are.
std::string display_value(const store::Value& value);

// `width`: the columns every line fits (0: none, `ibt show --wide`): a long command line or
// attribute continues under itself, a table with more columns than fit continues each row
// on the lines below it.

// One line per run: id, kind, status, start time, world size, command line.
void print_run_list(std::ostream& out, const std::vector<store::RunInfo>& runs, std::size_t width = 0);

// A run's attributes (the usual ones first), its environment and its tables (all of
// them, or only `table_filter`), each table aligned, units under the column names.
void print_run(std::ostream& out, const std::string& path, const store::RunInfo& run,
               const std::optional<std::string>& table_filter, std::size_t width = 0);

void print_table(std::ostream& out, const store::TableData& table, const std::string& indent = "  ",
                 std::size_t width = 0);

}  // namespace ibt::reports
