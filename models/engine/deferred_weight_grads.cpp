#include "models/engine/deferred_weight_grads.hpp"

#include <stdexcept>

#include "models/engine/blas.hpp"

namespace ibt::models {

namespace {
thread_local WeightGradQueue* active_queue = nullptr;
}  // namespace

void WeightGradQueue::push(const float* dy, const float* x, float* dw, int64_t tokens, int64_t in, int64_t out) {
  Item item;
  item.dy.assign(dy, dy + tokens * out);
  item.x.assign(x, x + tokens * in);
  item.dw = dw;
  item.tokens = tokens;
  item.in = in;
  item.out = out;
  items_.push_back(std::move(item));
}

void WeightGradQueue::run() {
  if (active_queue) throw std::logic_error("WeightGradQueue::run: called while deferring (it would queue again)");
  for (const Item& item : items_)
    linear_backward_weight(item.dy.data(), item.x.data(), item.dw, item.tokens, item.in, item.out);
  items_.clear();
}

double WeightGradQueue::bytes() const {
  double total = 0;
  for (const Item& item : items_) total += static_cast<double>(item.dy.size() + item.x.size()) * sizeof(float);
  return total;
}

DeferWeightGrads::DeferWeightGrads(WeightGradQueue& queue) {
  if (active_queue) throw std::logic_error("DeferWeightGrads: already deferring on this thread");
  active_queue = &queue;
}

DeferWeightGrads::~DeferWeightGrads() { active_queue = nullptr; }

WeightGradQueue* deferred_weight_grads() { return active_queue; }

}  // namespace ibt::models
