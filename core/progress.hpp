#pragma once
// A progress line on stderr for long commands: "what: done/total (pct%), ETA 12 s",
// redrawn in place. Shown only when stderr is a terminal, and only once the work has
// run for `quiet_s` (a search that ends in a second prints nothing); the line is
// cleared by finish() or the destructor. Thread-safe: workers may call advance().
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace ibt {

class Progress {
 public:
  Progress(std::string what, size_t total, double quiet_s = 2.0);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void advance(size_t n = 1);
  // Prints `line` (with its newline) above the progress line, e.g. a result just known.
  void print(const std::string& line);
  void finish();
  size_t done() const { return done_; }
  // For tests: draw even when stderr is not a terminal.
  void force_visible() { terminal_ = true; }
  // The text of the line as it would be drawn now.
  std::string line() const;

 private:
  void draw_locked();
  void clear_locked();
  std::string what_;
  size_t total_ = 0, done_ = 0;
  double quiet_s_ = 2.0;
  bool terminal_ = false, shown_ = false, finished_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
  mutable std::mutex mutex_;
};

}  // namespace ibt
