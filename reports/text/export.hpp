#pragma once
// Runs of a results file as CSV or JSON, for pandas, spreadsheets and scripts
// (`ibt export`). Numbers are written exactly (shortest text that reads back to the
// same double), strings without their NUL padding.
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "reports/store/csv_text.hpp"
#include "reports/store/store.hpp"

namespace ibt::reports {

struct ExportSelection {
  std::optional<std::string> run;    // a run id, its number, or "last"; all runs when absent
  std::optional<std::string> table;  // one table name; all tables when absent
};

// One CSV: a header (run_id, kind, then the table's columns) and one line per table row
// of every selected run. Rows of several runs are concatenated only when their table
// has the same name and the same columns (without --table, runs of one kind give the
// table named after the kind when they hold several); otherwise a UsageError asks for --table or
// --run. Fields holding a comma, quote or line break are quoted (RFC 4180).
void write_csv(std::ostream& out, const std::string& path, const ExportSelection& selection);

// {"file", "schema", "schema_version", "runs": [{"id", "attributes", "environment",
//   "tables": {name: {"columns": [{"name", "type", "unit"}], "rows": [{column: value}]}}}]}
// Keys keep this order (and rows their column order), so
// `pandas.DataFrame(table["rows"])` builds a frame with the columns as stored.
// JSON has no NaN or infinity: such values become null.
nlohmann::ordered_json export_json(const std::string& path, const ExportSelection& selection);

// The shortest decimal text that reads back as exactly `v`, and a CSV field quoted when
// it must be: the store's (reports/store/csv_text.hpp), which rescued rows use too.
using store::csv_field;
using store::exact_number;

}  // namespace ibt::reports
