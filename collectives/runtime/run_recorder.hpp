#pragma once
// Rank 0's handle on the run it is recording. Thread-safe: the main thread appends rows
// while the watchdog or signal thread may have to mark the run failed or partial and end
// the process. The first finish() wins; later ones are ignored. While the run is open a
// thread refreshes its heartbeat (reports/store/writer_liveness.hpp), so readers can tell a
// live writer from a dead one.
#include <mpi.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/row_schema.hpp"
#include "reports/store/store.hpp"

namespace ibt::suites {

class RunRecorder {
 public:
  // Opens (or creates) the file and starts a run of this kind. Empty path: record
  // nothing (every call is then a no-op).
  RunRecorder(const std::string& path, const std::string& kind);
  ~RunRecorder();

  bool active() const { return run_ != nullptr; }
  std::string run_id() const;
  void set_attr(const std::string& name, const store::AttrValue& value);
  void set_environment(const std::vector<std::pair<std::string, std::string>>& vars);
  void append(const std::string& table, const std::vector<store::Column>& columns, const store::Row& row);
  // A row of a table with a schema (core/row_schema.hpp): every field, or the fields of
  // a layout, under the table's name.
  template <class T>
  void append(const T& row) {
    static const std::vector<store::Column> columns = store::columns_of<T>();  // made once: tables of 10^5 rows
    append(std::string(T::kTable), columns, store::to_row(row));
  }
  template <class T>
  void append(const store::Layout<T>& layout, const T& row) {
    append(std::string(T::kTable), layout.columns(), layout.row(row));
  }
  // Marks the run finished with this status, once.
  void finish(store::RunStatus status, const std::string& message = "");

 private:
  void beat();
  void stop_heartbeat();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread heartbeat_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<store::Run> run_;
  bool finished_ = false;
};

// Collective: runs `attempt` on rank 0 only (the others skip it) and broadcasts its
// outcome before anyone goes on: if it threw, every rank throws the same error type
// (UsageError, StorageError, else RuntimeError) with rank 0's message. For work only rank
// 0 does (opening the results file) that must not leave the other ranks waiting in the
// next collective when it fails.
void agree_on_rank0(MPI_Comm world, const std::function<void()>& attempt);

// Collective: rank 0 checks that results can be appended to `path` (empty: nothing to
// check) and every rank throws the same UsageError if not, before anything is measured:
// not an ibt file, damaged, locked by another process, no room for the append.
// Only rank 0 sees the file system the results go to; the others must fail alike.
void check_output_on_all_ranks(const std::string& path, MPI_Comm world);

// Collective: rank 0 opens `path` and starts a run of this kind (a RunRecorder; nullptr on
// the other ranks), then tells every rank whether it could, before anyone enters the next
// collective. If not, every rank throws the same error (UsageError, StorageError or
// RuntimeError, as rank 0's was) with rank 0's message: what check_output_on_all_ranks
// cannot see ahead of the open, such as a reader that opened the file since (its lock
// refuses the writer's), ends every rank alike instead of leaving the others waiting.
std::unique_ptr<RunRecorder> open_run_on_all_ranks(const std::string& path, const std::string& kind, MPI_Comm world);

}  // namespace ibt::suites
