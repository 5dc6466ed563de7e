#pragma once
// No rank ever blocks forever. A Watchdog runs a thread that fires a handler when an
// armed deadline passes; the harness arms it around every stretch of communication it
// starts. The handler runs on the watchdog thread while the main thread is stuck inside
// MPI or NCCL, so it must not call MPI: it records what it can (rank 0 marks the run
// failed in the HDF5 file) and ends the process, which makes the launcher end the job.
#include <chrono>
#include <condition_variable>
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

 private:
  void loop();

  Handler on_expiry_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool armed_ = false;
  bool stopping_ = false;
  double seconds_ = 0;
  std::chrono::steady_clock::time_point deadline_;
  std::string what_;
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
