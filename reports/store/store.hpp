#pragma once
// The HDF5 results store. One file holds many runs; each invocation of a suite appends
// a new group /runs/<id> and never touches earlier ones. Layout (schema version 2):
//
//   /                        attrs: ibt_schema ("ibt-results"), ibt_schema_version (2)
//   /runs/<id>               one run; <id> is a zero-padded sequence number "000001"
//       attrs                kind, status, command_line, ibt_version, git_commit,
//                            start_time, end_time (ISO 8601 UTC), world_size, ...
//                            (docs/results-format.md)
//   /runs/<id>/environment   attrs: the allow-listed environment variables, verbatim
//   /runs/<id>/<table>       compound dataset, one row per measurement, chunked and
//                            extendible, flushed after every append; each column's unit
//                            is an attribute "unit:<column>" of the dataset, and the
//                            CRC-32 of its rows ibt_crc32 / ibt_crc32_rows
//                            (table_digest.hpp); string columns are variable-length
//
// Only rank 0 writes. Every failure to open or validate throws UsageError (a file that
// is not ibt's, a path that is a directory, a lock held elsewhere, no room), with a
// message that names the file and the problem. A write that fails (disk full, I/O
// error) undoes the append, records the run as failed and throws StorageError
// (store_undo.hpp): every earlier run stays readable. Each run records its writer
// (host, pid, start) and a heartbeat, so readers show a run whose writer died as
// "interrupted" (writer_liveness.hpp).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/columns.hpp"

namespace ibt::store {

// Column, Row, Value and AttrValue: core/columns.hpp.
// Version 2: string columns are variable-length (version 1's were fixed-length; both read).
inline constexpr int kSchemaVersion = 2;
inline constexpr const char* kSchemaName = "ibt-results";

enum class RunStatus { running, complete, partial, failed };
const char* to_string(RunStatus s);

class Table {
 public:
  virtual ~Table() = default;
  // Appends one row (values in column order, types matching) and flushes the file.
  virtual void append(const Row& row) = 0;
  virtual const std::vector<Column>& columns() const = 0;
};

class Run {
 public:
  virtual ~Run() = default;
  virtual std::string id() const = 0;
  virtual void set_attr(const std::string& name, const AttrValue& value) = 0;
  virtual void set_environment(const std::vector<std::pair<std::string, std::string>>& vars) = 0;
  // Refreshes the "heartbeat" attribute (writer_liveness.hpp): a writer alive.
  virtual void heartbeat() = 0;
  // Creates (once) and returns the named table of this run.
  virtual Table& table(const std::string& name, const std::vector<Column>& columns) = 0;
  // Stores a dense float64 array (e.g. gathered parameters) under this run.
  virtual void write_array(const std::string& path, const std::vector<std::uint64_t>& shape, const double* data) = 0;
  // Sets status, end_time and (when not empty) the "error" attribute, and flushes.
  virtual void finish(RunStatus status, const std::string& message = "") = 0;
};

class Store {
 public:
  virtual ~Store() = default;
  // Starts a new run of the given kind with status "running" and start_time now.
  virtual std::unique_ptr<Run> begin_run(const std::string& kind) = 0;
};

// Opens path for appending, creating it if missing. Refuses a directory, an unwritable
// location, a non-HDF5 file and an HDF5 file without ibt's schema attributes; in every
// such case the existing file is left untouched.
std::unique_ptr<Store> open_for_append(const std::string& path);
// Performs the same checks as open_for_append without creating or changing anything,
// so a job can refuse bad output paths before it measures.
void check_appendable(const std::string& path);

// ---- Reading (ibt show, ibt export, reports, calibration) ----
struct RunInfo {
  std::string id;
  std::vector<std::pair<std::string, AttrValue>> attrs;  // every attribute of the run group
  std::vector<std::pair<std::string, std::string>> environment;
  std::vector<std::string> tables;
  std::optional<AttrValue> attr(const std::string& name) const;
  std::string attr_string(const std::string& name) const;  // "" when absent
  // "" unless a multi-rank run recorded oversubscribed = 1 (collectives/runtime/job_facts.hpp); then
  // its description, e.g. "4 ranks on 2 cores of host-a". Older runs recorded nothing: "".
  std::string oversubscription() const;
};
struct TableData {
  std::vector<Column> columns;
  std::vector<Row> rows;
  int column_index(const std::string& name) const;  // -1 when absent
};
// Throws UsageError when the file is missing, not HDF5 or not ibt's schema.
std::vector<RunInfo> list_runs(const std::string& path);
TableData read_table(const std::string& path, const std::string& run_id, const std::string& table);
// Every table of every run read once, each against its digest (table_digest.hpp): for a
// reader that hands the file on (the HTML report's renderer) or an append, so a damaged
// table is named (UsageError) before anything else reads it. Returns the runs.
std::vector<RunInfo> check_tables(const std::string& path);

}  // namespace ibt::store
