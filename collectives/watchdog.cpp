#include "collectives/watchdog.hpp"

namespace ibt {

Watchdog::Watchdog(Handler on_expiry) : on_expiry_(std::move(on_expiry)), thread_([this] { loop(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Watchdog::arm(double seconds, std::string what) {
  {
    std::lock_guard lock(mutex_);
    armed_ = true;
    seconds_ = seconds;
    what_ = std::move(what);
    progress_seen_ = progress_.load(std::memory_order_relaxed);
    deadline_ = std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
  }
  wake_.notify_all();
}

void Watchdog::disarm() {
  std::lock_guard lock(mutex_);
  armed_ = false;
}

void Watchdog::loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (!armed_) {
      wake_.wait(lock);
      continue;
    }
    if (wake_.wait_until(lock, deadline_) == std::cv_status::timeout && armed_ && !stopping_ &&
        std::chrono::steady_clock::now() >= deadline_) {
      const std::uint64_t progress = progress_.load(std::memory_order_relaxed);
      if (progress != progress_seen_) {  // slow, not stalled: another period
        progress_seen_ = progress;
        deadline_ = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                           std::chrono::duration<double>(seconds_));
        continue;
      }
      armed_ = false;
      const std::string what = what_;
      const double seconds = seconds_;
      lock.unlock();
      on_expiry_(what, seconds);  // expected to end the process
      lock.lock();
    }
  }
}

}  // namespace ibt
