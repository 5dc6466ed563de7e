#pragma once
// Runs body(i) for i in [0, n) on `jobs` threads (std::thread). Searches are
// embarrassingly parallel; each body writes only its own slot of a result vector, so
// the results are the same, in the same order, whatever the thread count. The first
// exception (by index) is rethrown after every thread has stopped.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace ibt {

template <typename Body>
void parallel_for(size_t n, int jobs, Body&& body) {
  const size_t threads = std::min<size_t>(n, static_cast<size_t>(std::max(1, jobs)));
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) body(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::exception_ptr> errors(n);
  std::atomic<bool> failed{false};
  auto work = [&] {
    for (size_t i = next++; i < n && !failed; i = next++) {
      try {
        body(i);
      } catch (...) {
        errors[i] = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace ibt
