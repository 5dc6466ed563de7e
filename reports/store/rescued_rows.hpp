#pragma once
// Where the rows of a run go when its append to the results file fails (a full disk, a
// file-size limit, an I/O error). The store undoes the failed append so that every
// earlier run stays intact, which takes the failing run's rows out of the file too; they
// were measured, so they are written instead as CSV, one file per table, in a folder
// beside the results file or in $TMPDIR (else /tmp), whichever can be written first.
// After a full disk $TMPDIR is tried first: the space the undo gave back beside the file
// is what recording the run as failed needs. The error message names the folder.
#include <string>
#include <vector>

#include "core/columns.hpp"

namespace ibt::store {

struct KeptTable {
  std::string name;
  std::vector<Column> columns;
  std::vector<Row> rows;
};

struct RescueResult {
  std::string folder;  // where the CSV files are; "" when none could be written
  std::string error;   // why not, when folder is ""
};

// Writes `tables` as <folder>/<table>.csv with a header of column names. Tables without
// rows are skipped; with no rows at all nothing is written and folder is "".
// `disk_full`: try $TMPDIR before the folder beside the results file.
RescueResult rescue_rows(const std::string& results_path, const std::string& run_id,
                         const std::vector<KeptTable>& tables, bool disk_full = false);

}  // namespace ibt::store
