#pragma once
// No rank ever blocks forever. A Watchdog runs a thread that fires a handler when an
// armed deadline passes; the harness arms it around every stretch of communication it
// starts. The handler runs on the watchdog thread while the main thread is stuck inside
// MPI or NCCL, so it must not call MPI: it records what it can (rank 0 marks the run
// failed in the HDF5 file) and ends the process, which makes the launcher end the job.
//
// Slow is not stalled: work that calls progress() (the harness does after every call of
// an op) is judged by progress, not by a budget for the whole stretch. The thread looks
// at the progress count every min(1 s, T/10) (at least 10 ms) and fires the handler when
// no look for T seconds saw it move; as the last call completed at most one look before
// the look that saw it, the handler fires between T and T + min(1 s, T/10) after the last
// completed call, so a 128 MiB measurement of 46 calls of 1 s each survives a 60 s
// timeout, while a hung call is noticed 60-61 s after it started. (Waiting a whole
// period and extending by a whole period noticed it only after one to two periods: 2 T.)
// Work that never calls progress() has the fixed deadline T after arming.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace ibt {

class Watchdog {
 public:
  using Handler = std::function<void(const std::string& what, double seconds)>;
  explicit Watchdog(Handler on_expiry);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Starts (or restarts) the countdown; `what` names the work for the message.
  void arm(double seconds, std::string what);
  void disarm();
  // A unit of work completed (a call of an op): the deadline may move on. Called by the
  // armed thread only; one relaxed store, cheap enough for a timed loop.
  void progress() { progress_.store(progress_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

 private:
  void loop();
  // How often the armed thread looks at the progress count.
  double look_seconds() const;

  Handler on_expiry_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool armed_ = false;
  bool stopping_ = false;
  double seconds_ = 0;
  std::chrono::steady_clock::time_point quiet_since_;  // arming, or the last look that saw progress
  std::string what_;
  std::atomic<std::uint64_t> progress_{0};
  std::uint64_t progress_seen_ = 0;  // progress_ at that time
  std::thread thread_;
};

// RAII: arms on construction, disarms on scope exit.
class WatchdogScope {
 public:
  WatchdogScope(Watchdog* dog, double seconds, std::string what) : dog_(dog) {
    if (dog_) dog_->arm(seconds, std::move(what));
  }
  ~WatchdogScope() {
    if (dog_) dog_->disarm();
  }
  WatchdogScope(const WatchdogScope&) = delete;
  WatchdogScope& operator=(const WatchdogScope&) = delete;

 private:
  Watchdog* dog_;
};

}  // namespace ibt
