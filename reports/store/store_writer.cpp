// Writing side of the store: open_for_append, runs, tables and arrays.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>

#include <unistd.h>
#include <cerrno>
#include <cstring>

#include "core/errors.hpp"
#include "core/hdf5.hpp"
#include "reports/store/rescued_rows.hpp"
#include "reports/store/row_layout.hpp"
#include "reports/store/store.hpp"
#include "reports/store/store_file.hpp"
#include "reports/store/store_undo.hpp"
#include "reports/store/table_digest.hpp"
#include "reports/store/writer_liveness.hpp"

namespace ibt::store {

const char* to_string(RunStatus s) {
  switch (s) {
    case RunStatus::running: return "running";
    case RunStatus::complete: return "complete";
    case RunStatus::partial: return "partial";
    case RunStatus::failed: return "failed";
  }
  return "unknown";
}

namespace {

constexpr const char* kRunsGroup = "runs";
constexpr const char* kEnvironmentGroup = "environment";

std::string utc_now() { return utc_now_iso(); }

// The open file, shared by the store and its runs so that whichever is destroyed last
// closes it. Every change is followed by flush(): H5Fflush hands all dirty metadata and
// chunks to the OS, so a killed process loses at most what it was writing (a power cut
// can lose more: there is no fsync).
// A write that fails (disk full, file-size limit, I/O error) undoes the whole append
// (store_undo.hpp): `failed` is then set and every later write throws StorageError
// with `failure` at once, without touching HDF5.
struct OpenFile {
  std::string path;
  h5::Handle file;
  bool created = false;  // this append created the file: undoing it removes the file
  bool failed = false;
  std::string failure;
  void flush() const { h5::check(H5Fflush(file.get(), H5F_SCOPE_LOCAL), path + ": flushing"); }
  ~OpenFile() {
    // The append ended with the file intact: its undo copy is no longer needed.
    if (!failed && file.valid() && !created && H5Fflush(file.get(), H5F_SCOPE_LOCAL) >= 0) discard_undo_copy(path);
  }
};

// What is needed to record a run again after its append was undone.
struct RunMemo {
  std::string id;
  std::vector<std::pair<std::string, AttrValue>> attrs;  // in the order set
  std::map<std::string, long long> rows;                 // rows appended per table
  // Every row handed to a table, the one being written included: what rescue_rows saves
  // when the append fails (rescued_rows.hpp).
  std::vector<KeptTable> kept;
  void keep(const std::string& table, const std::vector<Column>& columns, const Row& row) {
    for (auto& t : kept)
      if (t.name == table) {
        t.rows.push_back(row);
        return;
      }
    kept.push_back({table, columns, {row}});
  }
  void set(const std::string& name, const AttrValue& value) {
    for (auto& [key, old] : attrs)
      if (key == name) {
        old = value;
        return;
      }
    attrs.emplace_back(name, value);
  }
};

// Writes the memo's run as `failed` with `reason` into the file at `path` by
// copy-on-write (a temporary copy, written, then renamed over the file), so that this
// write, too, can fail without harm. Returns "" or why it could not.
std::string record_failed_run(const std::string& path, bool file_exists, const RunMemo& memo,
                              const std::string& reason) {
  const std::string temporary = undo_path(path) + ".failed-run";
  std::string error;
  if (file_exists && !copy_file(path, temporary, &error)) return error;
  try {
    h5::Handle fapl = h5::file_access_plist();
    const hid_t id = file_exists ? H5Fopen(temporary.c_str(), H5F_ACC_RDWR, fapl.get())
                                 : H5Fcreate(temporary.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get());
    h5::Handle file = h5::checked_file(id, temporary);
    // A file from an older ibt (checked not newer before this) gets this version's
    // number, since the run appended now is written in this version's layout.
    if (!file_exists) h5::set_attribute(file.get(), "ibt_schema", std::string(kSchemaName));
    h5::set_attribute(file.get(), "ibt_schema_version", std::int64_t{kSchemaVersion});
    h5::Handle runs = h5::checked_group(h5::has_child(file.get(), "runs")
                                            ? H5Gopen2(file.get(), "runs", H5P_DEFAULT)
                                            : H5Gcreate2(file.get(), "runs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                                        temporary);
    h5::Handle run =
        h5::checked_group(H5Gcreate2(runs.get(), memo.id.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), temporary);
    for (const auto& [name, value] : memo.attrs) h5::set_attribute(run.get(), name, value);
    h5::set_attribute(run.get(), "status", std::string(to_string(RunStatus::failed)));
    h5::set_attribute(run.get(), "end_time", utc_now());
    h5::set_attribute(run.get(), "error", reason);
    run.reset();
    runs.reset();
    h5::check(H5Fflush(file.get(), H5F_SCOPE_LOCAL), temporary);
  } catch (const std::exception& e) {
    unlink(temporary.c_str());
    return e.what();
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    error = std::strerror(errno);
    unlink(temporary.c_str());
    return error;
  }
  return "";
}

// Undoes the append after a failed write and throws StorageError saying what happened.
[[noreturn]] void undo_failed_append(OpenFile& file, const RunMemo& memo, const std::string& what,
                                     const std::string& detail, int saved_errno) {
  std::string cause = describe_write_errno(detail, saved_errno);
  if (cause.empty()) cause = "write failed (HDF5: " + detail + ")";
  std::string message = file.path + ": " + cause + " while " + what;
  bool restored = false;
  if (file.created) {
    restored = unlink(file.path.c_str()) == 0 || errno == ENOENT;
  } else {
    restored = restore_undo_copy(file.path);
  }
  if (restored) {
    // The old inode is unlinked but still open here: give its blocks back now.
    void* handle = nullptr;
    if (H5Fget_vfd_handle(file.file.get(), H5P_DEFAULT, &handle) >= 0 && handle)
      (void)ftruncate(*static_cast<int*>(handle), 0);
    std::size_t rows = 0;  // every row handed to the run, the one being written included
    for (const auto& table : memo.kept) rows += table.rows.size();
    // The cause names the errno HDF5 reported (describe_write_errno), errno itself may not.
    const bool disk_full = saved_errno == ENOSPC || saved_errno == EDQUOT ||
                           cause.find("ENOSPC") != std::string::npos || cause.find("EDQUOT") != std::string::npos;
    const RescueResult rescued = rescue_rows(file.path, memo.id, memo.kept, disk_full);
    const std::string where_rows =
        !rescued.folder.empty() ? "they were saved as CSV in " + rescued.folder + " (one file per table)"
        : rescued.error.empty() ? "they were printed"
                                : "they were printed; saving them as CSV failed: " + rescued.error;
    const std::string rows_note =
        "the " + std::to_string(rows) + " rows this run measured are not in the file: " + where_rows;
    const std::string reason = cause + " while " + what + "; the append was undone, so " + rows_note;
    const std::string not_recorded = record_failed_run(file.path, !file.created, memo, reason);
    message += file.created ? "; the new file was removed" : "; the append was undone: every earlier run is intact";
    message += not_recorded.empty() ? ", and run " + memo.id + " is recorded as failed with this reason"
                                    : " (run " + memo.id + " could not be recorded as failed: " + not_recorded + ")";
    message += "; " + rows_note;
  } else {
    message += "; the undo copy " + undo_path(file.path) + " could not be moved back (" + std::strerror(errno) +
               "): it holds the file as it was before this append";
  }
  file.failed = true;
  file.failure = message;
  throw StorageError(message);
}

// Rows per chunk: about 16 KiB of rows, so one flush rewrites little.
hsize_t chunk_rows(std::size_t row_bytes) {
  return std::clamp<hsize_t>(16384 / std::max<std::size_t>(row_bytes, 1), 16, 1024);
}

bool same_columns(const std::vector<Column>& a, const std::vector<Column>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].type != b[i].type || a[i].unit != b[i].unit) return false;
    if (a[i].type == ColumnType::str && a[i].str_bytes != b[i].str_bytes) return false;
  }
  return true;
}

class TableWriter final : public Table {
 public:
  TableWriter(std::shared_ptr<OpenFile> file, std::shared_ptr<RunMemo> memo, hid_t run_group, const std::string& where,
              const std::string& name, const std::vector<Column>& columns)
      : file_(std::move(file)),
        memo_(std::move(memo)),
        name_(name),
        where_(where + "/" + name),
        layout_(columns),
        buffer_(layout_.row_bytes()) {
    const std::string what = file_->path + ": creating table " + where_;
    const hsize_t empty = 0, unlimited = H5S_UNLIMITED, chunk = chunk_rows(layout_.row_bytes());
    h5::Handle space = h5::checked_space(H5Screate_simple(1, &empty, &unlimited), what);
    h5::Handle dcpl = h5::checked_plist(H5Pcreate(H5P_DATASET_CREATE), what);
    h5::check(H5Pset_chunk(dcpl.get(), 1, &chunk), what);
    h5::Handle file_type = layout_.file_type();
    dataset_ = h5::checked_dataset(
        H5Dcreate2(run_group, name.c_str(), file_type.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT), what);
    for (const auto& c : layout_.columns()) h5::set_attribute(dataset_.get(), "unit:" + c.name, c.unit);
    write_digest();
    memory_type_ = layout_.memory_type();
    file_->flush();
  }

  void append(const Row& row) override {
    layout_.pack(row, buffer_.data(), where_);
    if (file_->failed) throw StorageError(file_->failure);
    memo_->keep(name_, layout_.columns(), row);
    try {
      write_row(row);
    } catch (const RuntimeError& e) {
      undo_failed_append(*file_, *memo_, "appending row " + std::to_string(rows_ + 1) + " to " + where_, e.what(),
                         errno);
    }
    memo_->rows[name_] = static_cast<long long>(rows_);
  }

  const std::vector<Column>& columns() const override { return layout_.columns(); }

 private:
  void write_row(const Row& row) {
    const std::string what = file_->path + ": appending a row to " + where_;
    const hsize_t new_rows = rows_ + 1, one = 1;
    h5::check(H5Dset_extent(dataset_.get(), &new_rows), what);
    h5::Handle file_space = h5::checked_space(H5Dget_space(dataset_.get()), what);
    h5::check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &rows_, nullptr, &one, nullptr), what);
    h5::Handle memory_space = h5::checked_space(H5Screate_simple(1, &one, nullptr), what);
    h5::check(
        H5Dwrite(dataset_.get(), memory_type_.get(), memory_space.get(), file_space.get(), H5P_DEFAULT, buffer_.data()),
        what);
    rows_ = new_rows;
    digest_.add(row);
    write_digest();
    file_->flush();
  }

  // The digest of every row so far (table_digest.hpp), beside the rows.
  void write_digest() {
    h5::set_attribute(dataset_.get(), kDigestAttribute, std::int64_t{digest_.crc()});
    h5::set_attribute(dataset_.get(), kDigestRowsAttribute, std::int64_t{digest_.rows()});
  }

  std::shared_ptr<OpenFile> file_;
  std::shared_ptr<RunMemo> memo_;
  std::string name_;
  std::string where_;
  RowLayout layout_;
  std::vector<unsigned char> buffer_;
  h5::Handle dataset_;
  h5::Handle memory_type_;
  hsize_t rows_ = 0;
  RowDigest digest_;
};

// Table and array names are single path components below the run (arrays may nest).
void require_valid_name(const std::string& name, const char* kind, bool allow_slash) {
  const bool bad = name.empty() || name.front() == '/' || name.back() == '/' || name == kEnvironmentGroup ||
                   (!allow_slash && name.find('/') != std::string::npos) || name.find("//") != std::string::npos ||
                   name == "." || name.find("./") != std::string::npos;
  if (bad) throw RuntimeError(std::string("invalid ") + kind + " name '" + name + "'");
}

class RunWriter final : public Run {
 public:
  RunWriter(std::shared_ptr<OpenFile> file, hid_t runs_group, std::string id, const std::string& kind)
      : file_(std::move(file)), memo_(std::make_shared<RunMemo>()), id_(std::move(id)), where_("/runs/" + id_) {
    memo_->id = id_;
    memo_->set("kind", kind);
    memo_->set("start_time", utc_now());
    for (const auto& [name, value] : writer_identity()) memo_->set(name, value);
    guarded("creating run " + where_, [&] {
      const std::string what = file_->path + ": creating run " + where_;
      group_ = h5::checked_group(H5Gcreate2(runs_group, id_.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), what);
      environment_ =
          h5::checked_group(H5Gcreate2(group_.get(), kEnvironmentGroup, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), what);
      h5::set_attribute(group_.get(), "status", std::string(to_string(RunStatus::running)));
      for (const auto& [name, value] : memo_->attrs) h5::set_attribute(group_.get(), name, value);
      file_->flush();
    });
  }

  // A run dropped without finish() (an exception unwinding, say) did not complete:
  // record that rather than leave it "running" forever.
  ~RunWriter() override {
    if (finished_) return;
    try {
      finish(RunStatus::failed, "the run ended without recording a final status");
    } catch (...) {
    }
  }

  std::string id() const override { return id_; }

  void set_attr(const std::string& name, const AttrValue& value) override {
    memo_->set(name, value);
    guarded("setting attribute '" + name + "' of run " + id_, [&] {
      h5::set_attribute(group_.get(), name, value);
      file_->flush();
    });
  }

  void heartbeat() override {
    if (finished_ || file_->failed) return;
    set_attr("heartbeat", utc_now());
  }

  void set_environment(const std::vector<std::pair<std::string, std::string>>& vars) override {
    guarded("recording the environment of run " + id_, [&] {
      for (const auto& old : h5::read_attributes(environment_.get()))
        h5::check(H5Adelete(environment_.get(), old.first.c_str()), file_->path + ": replacing the environment");
      for (const auto& [name, value] : vars) h5::set_attribute(environment_.get(), name, value);
      file_->flush();
    });
  }

  Table& table(const std::string& name, const std::vector<Column>& columns) override {
    require_valid_name(name, "table", false);
    if (auto it = tables_.find(name); it != tables_.end()) {
      if (!same_columns(it->second->columns(), columns))
        throw RuntimeError("table '" + name + "' of run " + id_ + " already exists with other columns");
      return *it->second;
    }
    std::unique_ptr<TableWriter> table;
    guarded("creating table " + where_ + "/" + name,
            [&] { table = std::make_unique<TableWriter>(file_, memo_, group_.get(), where_, name, columns); });
    return *tables_.emplace(name, std::move(table)).first->second;
  }

  void write_array(const std::string& path, const std::vector<std::uint64_t>& shape, const double* data) override {
    require_valid_name(path, "array", true);
    guarded("writing array " + where_ + "/" + path, [&] {
      const std::string what = file_->path + ": writing array " + where_ + "/" + path;
      h5::Handle lcpl = h5::checked_plist(H5Pcreate(H5P_LINK_CREATE), what);
      h5::check(H5Pset_create_intermediate_group(lcpl.get(), 1), what);
      const std::vector<hsize_t> dims(shape.begin(), shape.end());
      h5::Handle space = h5::checked_space(
          dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
          what);
      h5::Handle dataset = h5::checked_dataset(
          H5Dcreate2(group_.get(), path.c_str(), H5T_IEEE_F64LE, space.get(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT),
          what);
      if (H5Sget_simple_extent_npoints(space.get()) > 0)
        h5::check(H5Dwrite(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), what);
      file_->flush();
    });
  }

  void finish(RunStatus status, const std::string& message) override {
    finished_ = true;
    if (file_->failed) return;  // already recorded as failed, with the storage error
    guarded("recording the end of run " + id_, [&] {
      h5::set_attribute(group_.get(), "status", std::string(to_string(status)));
      h5::set_attribute(group_.get(), "end_time", utc_now());
      if (!message.empty()) h5::set_attribute(group_.get(), "error", message);
      file_->flush();
    });
  }

 private:
  // Runs one write; a failure undoes the append (store_undo.hpp) and throws StorageError.
  template <class Body>
  void guarded(const std::string& what, Body&& body) {
    if (file_->failed) throw StorageError(file_->failure);
    try {
      body();
    } catch (const RuntimeError& e) {
      undo_failed_append(*file_, *memo_, what, e.what(), errno);
    }
  }

  std::shared_ptr<OpenFile> file_;  // first member: outlives the handles below
  std::shared_ptr<RunMemo> memo_;
  std::string id_;
  std::string where_;
  h5::Handle group_;
  h5::Handle environment_;
  std::map<std::string, std::unique_ptr<TableWriter>> tables_;
  bool finished_ = false;
};

// The next run id: one past the largest numeric id present, zero-padded to 6 digits.
std::string next_run_id(hid_t runs_group) {
  long long largest = 0;
  for (const auto& name : h5::child_names(runs_group)) {
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isdigit(c); }))
      continue;
    largest = std::max(largest, std::stoll(name));
  }
  char id[32];
  std::snprintf(id, sizeof id, "%06lld", largest + 1);
  return id;
}

class StoreWriter final : public Store {
 public:
  explicit StoreWriter(std::shared_ptr<OpenFile> file) : file_(std::move(file)) {
    const std::string what = file_->path + ": opening /runs";
    if (!h5::has_child(file_->file.get(), kRunsGroup)) {
      h5::Handle created =
          h5::checked_group(H5Gcreate2(file_->file.get(), kRunsGroup, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), what);
      file_->flush();
    }
    runs_ = h5::checked_group(H5Gopen2(file_->file.get(), kRunsGroup, H5P_DEFAULT), what);
  }

  std::unique_ptr<Run> begin_run(const std::string& kind) override {
    return std::make_unique<RunWriter>(file_, runs_.get(), next_run_id(runs_.get()), kind);
  }

 private:
  std::shared_ptr<OpenFile> file_;
  h5::Handle runs_;
};

std::shared_ptr<OpenFile> create_results_file(const std::string& path) {
  auto file = std::make_shared<OpenFile>();
  file->path = path;
  h5::Handle fapl = h5::file_access_plist();
  // EXCL: never truncate a file that appeared since the checks.
  const hid_t id = H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get());
  if (id < 0) h5::fail<UsageError>(path + ": cannot create the results file");
  file->file = h5::Handle(id, H5Fclose);
  file->created = true;
  h5::set_attribute(id, "ibt_schema", std::string(kSchemaName));
  h5::set_attribute(id, "ibt_schema_version", std::int64_t{kSchemaVersion});
  return file;
}

std::shared_ptr<OpenFile> open_results_file(const std::string& path) {
  auto file = std::make_shared<OpenFile>();
  file->path = path;
  h5::Handle fapl = h5::file_access_plist();
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl.get());
  if (id < 0) {
    if (h5::error_detail().find("unable to lock file") != std::string::npos)
      throw UsageError(path +
                       ": is locked by another process (an ibt run writing to it, or a reader holding it open: h5py, "
                       "h5dump, a notebook); try again when it is closed");
    h5::fail<UsageError>(path + ": cannot open the results file for writing");
  }
  file->file = h5::Handle(id, H5Fclose);
  // Holding the lock now: nobody else appends between this copy and our writes.
  take_undo_copy(path);
  return file;
}

}  // namespace

void check_appendable(const std::string& path) { detail::check_append_target(path); }

std::unique_ptr<Store> open_for_append(const std::string& path) {
  const detail::PathState state = detail::check_append_target(path);
  auto file = state == detail::PathState::missing_but_creatable ? create_results_file(path) : open_results_file(path);
  return std::make_unique<StoreWriter>(std::move(file));
}

}  // namespace ibt::store
