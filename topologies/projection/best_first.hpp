#pragma once
// Best-first branch and bound, the order project_all() and crossover() price splits in.
// Each item (a split) has a lower bound on its step time that tightens in steps (a
// family's bound, then its own, then its price): the items are taken smallest bound
// first, each one step further, while it can still enter the result; an item that can
// no longer is dropped for good (the bars it is held to only fall). The cheap bounds
// thus rule out most items before their dearer steps are paid for.
//
// Items are taken in batches of a fixed size in (bound, index) order, advanced in
// parallel, and the bars are raised between batches: which items are advanced, and so
// the result, does not depend on the thread count.
#include <cstddef>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "core/parallel.hpp"

namespace ibt::topo {

// Runs the search over the items whose `start` is set:
// - bound(i): item i's current lower bound (its order);
// - wanted(i): whether it can still enter the result at its current bound;
// - advance(i): its next step (a tighter bound, or its price), on any thread; returns
//   true when the item is finished;
// - settle(i, finished): after each batch, in batch order: raise the bars with a
//   finished item's result; report progress;
// - dropped(i): an item that was not wanted (never advanced again).
template <typename Bound, typename Wanted, typename Advance, typename Settle, typename Dropped>
void best_first(const std::vector<char>& start, int jobs, Bound&& bound, Wanted&& wanted, Advance&& advance,
                Settle&& settle, Dropped&& dropped) {
  constexpr size_t kBatch = 32;
  using Entry = std::pair<double, size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  for (size_t i = 0; i < start.size(); ++i)
    if (start[i]) queue.push({bound(i), i});
  std::vector<size_t> batch;
  std::vector<char> finished;
  while (!queue.empty()) {
    batch.clear();
    while (!queue.empty() && batch.size() < kBatch) {
      const size_t i = queue.top().second;
      queue.pop();
      if (wanted(i))
        batch.push_back(i);
      else
        dropped(i);
    }
    finished.assign(batch.size(), 0);
    parallel_for(batch.size(), jobs, [&](size_t k) { finished[k] = advance(batch[k]); });
    for (size_t k = 0; k < batch.size(); ++k) {
      settle(batch[k], finished[k] != 0);
      if (!finished[k]) queue.push({bound(batch[k]), batch[k]});
    }
  }
}

}  // namespace ibt::topo
