#include "collectives/watchdog.hpp"

#include <algorithm>

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
    quiet_since_ = std::chrono::steady_clock::now();
  }
  wake_.notify_all();
}

void Watchdog::disarm() {
  std::lock_guard lock(mutex_);
  armed_ = false;
}

double Watchdog::look_seconds() const { return std::max(0.01, std::min(1.0, seconds_ / 10)); }

namespace {
std::chrono::steady_clock::duration in_ticks(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}
}  // namespace

void Watchdog::loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (!armed_) {
      wake_.wait(lock);
      continue;
    }
    const auto deadline = quiet_since_ + in_ticks(seconds_);
    const auto look = std::min(deadline, std::chrono::steady_clock::now() + in_ticks(look_seconds()));
    // Woken early (armed again, disarmed, stopping): start over with the new state.
    if (wake_.wait_until(lock, look) != std::cv_status::timeout || !armed_ || stopping_) continue;
    const auto now = std::chrono::steady_clock::now();
    const std::uint64_t progress = progress_.load(std::memory_order_relaxed);
    if (progress != progress_seen_) {  // slow, not stalled: quiet from now on
      progress_seen_ = progress;
      quiet_since_ = now;
      continue;
    }
    if (now < deadline) continue;
    armed_ = false;
    const std::string what = what_;
    const double seconds = seconds_;
    lock.unlock();
    on_expiry_(what, seconds);  // expected to end the process
    lock.lock();
  }
}

}  // namespace ibt
