#include "core/progress.hpp"

#include <unistd.h>
#include <cstdio>

namespace ibt {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

Progress::Progress(std::string what, size_t total, double quiet_s)
    : what_(std::move(what)),
      total_(total),
      quiet_s_(quiet_s),
      terminal_(isatty(2) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() { finish(); }

std::string Progress::line() const {
  const double elapsed = seconds_since(start_);
  char buf[160];
  const double pct = total_ ? 100.0 * static_cast<double>(done_) / static_cast<double>(total_) : 100.0;
  if (done_ > 0 && done_ < total_) {
    const double eta = elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_);
    std::snprintf(buf, sizeof buf, "%s: %zu/%zu (%.0f%%), ETA %.0f s", what_.c_str(), done_, total_, pct, eta);
  } else {
    std::snprintf(buf, sizeof buf, "%s: %zu/%zu (%.0f%%), %.0f s", what_.c_str(), done_, total_, pct, elapsed);
  }
  return buf;
}

void Progress::draw_locked() {
  if (!terminal_ || finished_) return;
  if (seconds_since(start_) < quiet_s_) return;
  if (shown_ && seconds_since(last_draw_) < 0.2 && done_ < total_) return;
  std::fprintf(stderr, "\r\033[K%s", line().c_str());
  std::fflush(stderr);
  shown_ = true;
  last_draw_ = std::chrono::steady_clock::now();
}

void Progress::clear_locked() {
  if (!shown_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

void Progress::advance(size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  done_ += n;
  draw_locked();
}

void Progress::set(size_t done, size_t total) {
  std::lock_guard<std::mutex> lock(mutex_);
  done_ = done;
  total_ = total;
  draw_locked();
}

void Progress::print(const std::string& text) {
  std::lock_guard<std::mutex> lock(mutex_);
  const bool was_shown = shown_;
  clear_locked();
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  if (was_shown) {
    last_draw_ = start_;  // redraw now
    draw_locked();
  }
}

void Progress::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  clear_locked();
  finished_ = true;
}

}  // namespace ibt
