#include "collectives/runtime/run_recorder.hpp"

#include <chrono>
#include <functional>

#include "core/errors.hpp"
#include "reports/store/writer_liveness.hpp"

namespace ibt::suites {

RunRecorder::RunRecorder(const std::string& path, const std::string& kind) {
  if (path.empty()) return;
  store_ = store::open_for_append(path);
  run_ = store_->begin_run(kind);
  heartbeat_ = std::thread([this] { beat(); });
}

RunRecorder::~RunRecorder() {
  // A run never finished explicitly ended by an exception: say so rather than leave
  // it "running".
  try {
    finish(store::RunStatus::failed, "ended without completing (an error was reported on stderr)");
  } catch (...) {
  }
  stop_heartbeat();
}

void RunRecorder::beat() {
  std::unique_lock lock(mutex_);
  while (!finished_) {
    wake_.wait_for(lock, std::chrono::seconds(store::kHeartbeatSeconds));
    if (finished_) break;
    try {
      run_->heartbeat();
    } catch (...) {
      return;  // the store has undone the append; the next write reports it
    }
  }
}

void RunRecorder::stop_heartbeat() {
  {
    std::lock_guard lock(mutex_);
    finished_ = true;
  }
  wake_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
}

std::string RunRecorder::run_id() const { return run_ ? run_->id() : ""; }

void RunRecorder::set_attr(const std::string& name, const store::AttrValue& value) {
  std::lock_guard lock(mutex_);
  if (run_ && !finished_) run_->set_attr(name, value);
}

void RunRecorder::set_environment(const std::vector<std::pair<std::string, std::string>>& vars) {
  std::lock_guard lock(mutex_);
  if (run_ && !finished_) run_->set_environment(vars);
}

void RunRecorder::append(const std::string& table, const std::vector<store::Column>& columns, const store::Row& row) {
  std::lock_guard lock(mutex_);
  if (run_ && !finished_) run_->table(table, columns).append(row);
}

void RunRecorder::finish(store::RunStatus status, const std::string& message) {
  std::lock_guard lock(mutex_);
  if (!run_ || finished_) return;
  finished_ = true;
  wake_.notify_all();
  run_->finish(status, message);
}

namespace {
enum class Verdict : int { ok = 0, usage = 1, storage = 2, runtime = 3 };
}  // namespace

void agree_on_rank0(MPI_Comm world, const std::function<void()>& attempt) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  int verdict = static_cast<int>(Verdict::ok);
  std::string error;
  if (rank == 0) {
    try {
      attempt();
    } catch (const UsageError& e) {
      verdict = static_cast<int>(Verdict::usage), error = e.what();
    } catch (const StorageError& e) {
      verdict = static_cast<int>(Verdict::storage), error = e.what();
    } catch (const std::exception& e) {
      verdict = static_cast<int>(Verdict::runtime), error = e.what();
    }
  }
  int head[2] = {verdict, static_cast<int>(error.size())};
  MPI_Bcast(head, 2, MPI_INT, 0, world);
  if (head[0] == static_cast<int>(Verdict::ok)) return;
  error.resize(static_cast<size_t>(head[1]));
  MPI_Bcast(error.data(), head[1], MPI_CHAR, 0, world);
  switch (static_cast<Verdict>(head[0])) {
    case Verdict::usage: throw UsageError(error);
    case Verdict::storage: throw StorageError(error);
    default: throw RuntimeError(error);
  }
}

void check_output_on_all_ranks(const std::string& path, MPI_Comm world) {
  agree_on_rank0(world, [&] {
    if (!path.empty()) store::check_appendable(path);
  });
}

std::unique_ptr<RunRecorder> open_run_on_all_ranks(const std::string& path, const std::string& kind, MPI_Comm world) {
  std::unique_ptr<RunRecorder> recorder;
  agree_on_rank0(world, [&] { recorder = std::make_unique<RunRecorder>(path, kind); });
  return recorder;
}

}  // namespace ibt::suites
