// Each pipeline stage's compute order, schedule by schedule (schedule.hpp, "Compute
// orders"): the forwards, backwards and W's a stage runs, in the order it runs them,
// before the lock-step construction places them in rounds. Also the checks on
// (kind, pp, vpp, microbatches) every builder runs first.
#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "models/plan/schedule_internal.hpp"

namespace ibt::models::schedule_internal {

namespace {

// DualPipeV's order on rank r of p (m microbatches), as the eight steps of the
// DeepSeek DualPipe repository's dualpipev.py lay it out (github.com/deepseek-ai/DualPipe,
// dualpipe/dualpipev.py, step(): counts per step read there; the code is not copied).
// F0/F1, B0/B1: forward/backward of chunk 0/1; "full" backwards run their W right after
// their B, zero-bubble ones (zb) leave it in a FIFO that each W step pops; (F, B) pairs
// are the overlapped forward-backward chunks.
std::vector<ComputeTask> dualpipev_order(int p, int m, int r) {
  std::vector<ComputeTask> order;
  int f[2] = {0, 0}, b[2] = {0, 0};
  std::vector<std::pair<int, int>> deferred;  // (microbatch, chunk) of zb B's, FIFO
  size_t popped = 0;
  auto fwd = [&](int c, bool pair = false) { order.push_back({Pass::forward, f[c]++, c, pair}); };
  auto bwd = [&](int c, bool zb, bool pair = false) {
    const int mb = b[c]++;
    order.push_back({Pass::backward, mb, c, pair});
    if (zb)
      deferred.emplace_back(mb, c);
    else
      order.push_back({Pass::weight, mb, c});
  };
  auto weight = [&] {
    const auto [mb, c] = deferred.at(popped++);
    order.push_back({Pass::weight, mb, c});
  };
  const bool last = r == p - 1;
  for (int i = 0; i < 2 * (p - r - 1); ++i) fwd(0);  // 1: warm-up forwards of chunk 0
  for (int i = 0; i < r + 1; ++i) fwd(0), fwd(1);    // 2: F0 F1
  for (int i = 0; i < p - r - 1; ++i) {              // 3: B1 W F1 (zero bubble)
    bwd(1, true);
    weight();
    fwd(1);
  }
  for (int i = 0; i < m - 2 * p + r + 1; ++i) {  // 4, the steady state: (F0 & B1) (F1 & B0)
    const bool pair = !(i == 0 && last);         // the repository runs the last rank's first two apart
    fwd(0, pair);
    bwd(1, false, pair);
    fwd(1, true);
    bwd(0, false, true);
  }
  for (int i = 0; i < p - r - 1; ++i) {  // 5: B1 (F1 & B0)
    bwd(1, false);
    fwd(1, true);
    bwd(0, false, true);
  }
  for (int i = 0; i < r + 1; ++i) {  // 6: B1 B0, the second half zero bubble
    const int half = (r + 1) / 2;
    bwd(1, i > half || (i == half && r % 2 == 1));
    bwd(0, i >= half);
  }
  for (int i = 0; i < p - r - 1; ++i) {  // 7: W B0 (zero bubble)
    weight();
    bwd(0, true);
  }
  while (popped < deferred.size()) weight();  // 8: the W's left
  return order;
}

}  // namespace

// The order in which stage s runs its forwards and backwards (see schedule.hpp).
std::vector<ComputeTask> stage_compute_tasks(ScheduleKind kind, int p, int v, int m, int s) {
  std::vector<ComputeTask> order;
  order.reserve((splits_backward(kind) ? 3 : 2) * static_cast<size_t>(m) * v);  // F, B (and W) per microbatch and chunk
  switch (kind) {
    case ScheduleKind::afab:
      for (int mb = 0; mb < m; ++mb) order.push_back({Pass::forward, mb, 0});
      for (int mb = 0; mb < m; ++mb) order.push_back({Pass::backward, mb, 0});
      break;
    case ScheduleKind::one_f_one_b: {
      const int warmup = std::min(p - s - 1, m);
      for (int mb = 0; mb < warmup; ++mb) order.push_back({Pass::forward, mb, 0});
      for (int i = 0; i < m - warmup; ++i) {
        order.push_back({Pass::forward, warmup + i, 0});
        order.push_back({Pass::backward, i, 0});
      }
      for (int mb = m - warmup; mb < m; ++mb) order.push_back({Pass::backward, mb, 0});
      break;
    }
    case ScheduleKind::interleaved: {
      // ComputeTask k of a direction visits microbatches in groups of p per chunk.
      const int total = m * v;
      auto mb_of = [&](int k) { return (k / (p * v)) * p + k % p; };
      auto fwd = [&](int k) { return ComputeTask{Pass::forward, mb_of(k), (k / p) % v}; };
      auto bwd = [&](int k) { return ComputeTask{Pass::backward, mb_of(k), v - 1 - (k / p) % v}; };
      const int warmup = (m == p) ? total : std::min((p - s - 1) * 2 + (v - 1) * p, total);
      for (int k = 0; k < warmup; ++k) order.push_back(fwd(k));
      for (int i = 0; i < total - warmup; ++i) {
        order.push_back(fwd(warmup + i));
        order.push_back(bwd(i));
      }
      for (int k = total - warmup; k < total; ++k) order.push_back(bwd(k));
      break;
    }
    case ScheduleKind::zb_h1: {
      // 1F1B's F and B order; W of microbatch w once the B of w + s is done
      // (schedule.hpp), the deferred ones after the last B.
      const int warmup = std::min(p - s - 1, m);
      int weights = 0;
      auto b_then_due_w = [&](int mb) {
        order.push_back({Pass::backward, mb, 0});
        if (mb - weights >= s) order.push_back({Pass::weight, weights++, 0});
      };
      for (int mb = 0; mb < warmup; ++mb) order.push_back({Pass::forward, mb, 0});
      for (int i = 0; i < m - warmup; ++i) {
        order.push_back({Pass::forward, warmup + i, 0});
        b_then_due_w(i);
      }
      for (int mb = m - warmup; mb < m; ++mb) b_then_due_w(mb);
      while (weights < m) order.push_back({Pass::weight, weights++, 0});
      break;
    }
    case ScheduleKind::dualpipev: return dualpipev_order(p, m, s);
  }
  return order;
}

void check_parameters(ScheduleKind kind, int p, int v, int m) {
  auto fail = [&](const std::string& why) {
    throw UsageError("pipeline schedule " + std::string(to_string(kind)) + " with pp " + std::to_string(p) + ", vpp " +
                     std::to_string(v) + ", microbatches " + std::to_string(m) + ": " + why);
  };
  if (p < 1 || v < 1 || m < 1) fail("pp, vpp and microbatches must be >= 1");
  if (kind == ScheduleKind::dualpipev) {
    if (p < 2 || v != 2) fail("dualpipev needs pp >= 2 and vpp 2 (two chunks per rank in a V)");
    if (m < 2 * p) fail("dualpipev needs microbatches >= 2 pp");
  } else if (kind != ScheduleKind::interleaved && v != 1) {
    fail("vpp > 1 needs the interleaved schedule");
  }
  if (kind == ScheduleKind::one_f_one_b && m < p) fail("1f1b needs microbatches >= pp");
  if (kind == ScheduleKind::zb_h1 && m < p) fail("zb-h1 needs microbatches >= pp");
  if (kind == ScheduleKind::interleaved) {
    if (p < 2 || v < 2) fail("interleaved needs pp >= 2 and vpp >= 2");
    if (m % p != 0) fail("interleaved needs microbatches divisible by pp");
  }
}

}  // namespace ibt::models::schedule_internal
