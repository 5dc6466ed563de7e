// The step program's driver: one rank's whole training step, the schedule's actions
// expanded in order (forward, backward, W, pipeline exchange), a paired F&B
// (dualpipev) interleaved into one issue order, then the gradient tail and the
// optimizer. The ops of one layer are step_layers.cpp's, the gradient reductions
// step_gradients.cpp's; step_program.hpp describes the program.
#include <algorithm>
#include <utility>
#include <vector>

#include "models/plan/step_builder.hpp"

namespace ibt::models::detail {

StepBuilder::StepBuilder(const ModelConfig& model, const ParallelSplit& split, const PipelineSchedule& schedule,
                         int rank, const StepProgramOptions& options)
    : model_(model),
      split_(split),
      options_(options),
      layout_(split, model.kv_replicas(split.tp)),
      param_counts_(count_parameters(model)) {
  program_.rank = rank;
  program_.coord = layout_.coord(rank);
  program_.stage = program_.coord.pp;
  program_.actions = schedule.per_stage.at(program_.stage);
  split_backward_ = splits_backward(split.schedule);
  tp_ = split.tp;
  // This rank's tokens of a microbatch (its 1/cp of each sequence with CP).
  tokens_ = static_cast<double>(split.micro_batch_size) * model.seq_len / split.cp;
  activation_bytes_ = options.activation_bytes;
  virtual_stages_ = split.pp * split.vpp;
  const size_t slots = static_cast<size_t>(split.microbatches) * split.vpp;
  received_activation_.assign(slots, -1);
  received_gradient_.assign(slots, -1);
}

StepProgram StepBuilder::build() {
  // The action that completes each chunk's gradients (its last backward, or last W
  // with a split backward): where overlapped grad reduction goes.
  const ActionKind completes = split_backward_ ? ActionKind::weight : ActionKind::backward;
  std::vector<int> last_backward(split_.vpp, -1);
  for (int i = 0; i < static_cast<int>(program_.actions.size()); ++i)
    if (program_.actions[i].kind == completes) last_backward[program_.actions[i].chunk] = i;
  program_.ops.reserve(estimate_ops());
  size_t pair_begin = 0;  // first op of a paired F&B's forward (dualpipev)
  int forwards = 0;       // built before the first backward
  size_t forward_ops = 0;
  for (int i = 0; i < static_cast<int>(program_.actions.size()); ++i) {
    action_ = i;
    const PipeAction& a = program_.actions[i];
    forwards += forward_ops == 0 && a.kind == ActionKind::forward;
    if (forward_ops == 0 && a.kind == ActionKind::backward) forward_ops = program_.ops.size();
    microbatch_ = a.microbatch;
    chunk_ = a.chunk;
    switch (a.kind) {
      case ActionKind::forward:
        if (a.overlapped) pair_begin = program_.ops.size();
        forward_chunk();
        break;
      case ActionKind::backward: {
        const size_t backward_begin = program_.ops.size();
        backward_chunk(options_.overlap_grad_reduce && last_backward[chunk_] == i);
        if (a.overlapped) interleave_pair(pair_begin, backward_begin);
        if (backward_begin == forward_ops) reserve_like_first_pair(forwards, backward_begin);
        break;
      }
      case ActionKind::weight: weight_chunk(options_.overlap_grad_reduce && last_backward[chunk_] == i); break;
      case ActionKind::exchange: exchange(a); break;
    }
  }
  action_ = -1;
  microbatch_ = -1;
  chunk_ = -1;
  // ZeRO-2/3 reduce-scatter inside every backward; the last backward of a chunk (with
  // overlap) or the tail registers the buckets (and, with a shard group, all-reduces
  // the shards across replicas).
  if (!options_.overlap_grad_reduce) all_grad_buckets();
  optimizer_step();
  for (const Op& op : program_.ops) program_.flops_by_phase[static_cast<int>(op.phase)] += op.flops;
  return std::move(program_);
}

// A paired F&B (dualpipev, schedule.hpp): the forward's ops [f, b) and the
// backward's [b, end) are reordered into one issue order that alternates between
// the two, switching after every op that is not on the compute stream (an EP
// all-to-all, a TP collective): so while one chunk's dispatch or combine is in
// flight the compute stream runs the other chunk's attention or MLP, the overlap of
// the DeepSeek-V3 report's Figure 4 (attention, dispatch, MLP, combine of a forward
// chunk against those of a backward chunk). The streams stay in order, so what the
// sim prices is the pair's compute with only the communication it cannot cover
// exposed. An op whose wait reaches the other half's unplaced ops switches sides
// first (each half's own order is kept, so the result respects every wait).
void StepBuilder::interleave_pair(size_t f, size_t b) {
  const size_t end = program_.ops.size();
  std::vector<int> moved_to(end - f, -1);  // old index - f -> new index
  std::vector<Op> merged;
  merged.reserve(end - f);
  size_t next[2] = {f, b};
  const size_t stop[2] = {b, end};
  auto placeable = [&](size_t i) {
    for (int w : program_.ops[i].waits)
      if (w >= static_cast<int>(f) && moved_to[static_cast<size_t>(w) - f] < 0) return false;
    return true;
  };
  for (int side = 0; merged.size() < end - f; side ^= 1) {
    while (next[side] < stop[side] && placeable(next[side])) {
      const size_t i = next[side]++;
      moved_to[i - f] = static_cast<int>(f + merged.size());
      merged.push_back(program_.ops[i]);
      if (merged.back().stream != Stream::compute) break;
    }
  }
  auto remap = [&](int& idx) {
    if (idx >= static_cast<int>(f)) idx = moved_to[static_cast<size_t>(idx) - f];
  };
  for (Op& op : merged)
    for (int& w : op.waits) remap(w);
  std::copy(merged.begin(), merged.end(), program_.ops.begin() + static_cast<std::ptrdiff_t>(f));
  for (int* idx : {&last_compute_, &producer_, &last_grad_}) remap(*idx);
  for (int& idx : unit_end_) remap(idx);
}

// After the first backward: room for every microbatch's forward and backward of every
// chunk at the size of the first ones, and a fifth more (W passes, the tail). The
// first guess (estimate_ops) counts 40 ops a layer, and context-parallel rings,
// ZeRO-3 gathers and recompute make several times that: a million-op program grown
// by doubling was copied and faulted in again at each step.
void StepBuilder::reserve_like_first_pair(int forwards, size_t backward_begin) {
  if (forwards == 0) return;
  const double per_forward = static_cast<double>(backward_begin) / forwards;
  const double per_backward = static_cast<double>(program_.ops.size() - backward_begin);
  const double pairs = static_cast<double>(split_.microbatches) * split_.vpp;
  const auto wanted = static_cast<size_t>(1.2 * pairs * (per_forward + per_backward)) + program_.actions.size() + 64;
  if (wanted > program_.ops.capacity()) program_.ops.reserve(wanted);
}

size_t StepBuilder::estimate_ops() const {
  const size_t per_layer = 40;
  const size_t layers = static_cast<size_t>(model_.layers / split_.pp);
  return static_cast<size_t>(split_.microbatches) * layers * per_layer + program_.actions.size() + 64;
}

void StepBuilder::forward_chunk() {
  phase_ = Phase::forward;
  pass_ = Pass::forward;
  const int vs = vstage();
  // microbatch_ < 0: a chunk template (build_action_template): kWaitReceived stands for
  // the exchange that received the activation.
  producer_ = vs > 0 ? (microbatch_ >= 0 ? received_activation_.at(slot()) : kWaitReceived) : -1;
  if (vs == 0) embedding_fwd();
  const LayerRange r = stage_layers(model_, virtual_stages_, vs);
  for (int l = r.first; l < r.end(); ++l) layer_fwd(l);
  if (vs == virtual_stages_ - 1) head_fwd();
  layer_ = kNoLayer;
}

void StepBuilder::backward_chunk(bool reduce_grads_now) {
  phase_ = Phase::backward;
  pass_ = Pass::backward;
  const int vs = vstage();
  // The last virtual stage starts from its own loss (same stream, in order).
  producer_ = vs < virtual_stages_ - 1 ? (microbatch_ >= 0 ? received_gradient_.at(slot()) : kWaitReceived) : -1;
  // ZeRO-2/3 reduce-scatter every unit's gradient after every backward.
  const bool every = split_.zero >= 2;
  if (vs == virtual_stages_ - 1) {
    head_bwd();
    if (reduce_grads_now || every) grad_buckets(model_.layers, reduce_grads_now);
  }
  const LayerRange r = stage_layers(model_, virtual_stages_, vs);
  for (int l = r.end() - 1; l >= r.first; --l) {
    layer_bwd(l);
    if (reduce_grads_now || every) grad_buckets(l, reduce_grads_now);
  }
  if (vs == 0) {
    embedding_bwd();
    if (reduce_grads_now || every) grad_buckets(kEmbeddingLayer, reduce_grads_now);
  }
  layer_ = kNoLayer;
}

// The W of a split backward (zb-h1): the weight-gradient half of every GEMM of the
// chunk, in the backward's order; nothing it needs arrives by message (its B ran
// before it on this stage). The norms' and the embedding's gradients are cheap
// elementwise sums the engine keeps in B. ZeRO-2/3 are refused (validate()).
void StepBuilder::weight_chunk(bool reduce_grads_now) {
  phase_ = Phase::backward;
  pass_ = Pass::weight;
  producer_ = -1;
  const int vs = vstage();
  if (vs == virtual_stages_ - 1) {
    head_bwd();
    if (reduce_grads_now) grad_buckets(model_.layers);
  }
  const LayerRange r = stage_layers(model_, virtual_stages_, vs);
  for (int l = r.end() - 1; l >= r.first; --l) {
    layer_bwd(l);
    if (reduce_grads_now) grad_buckets(l);
  }
  if (vs == 0 && reduce_grads_now) {
    layer_ = kEmbeddingLayer;
    grad_buckets(kEmbeddingLayer);
  }
  pass_ = Pass::backward;
  layer_ = kNoLayer;
}

void StepBuilder::exchange(const PipeAction& a) {
  Op op;
  op.kind = OpKind::pp_exchange;
  op.phase = a.send ? (a.send->payload == Payload::activation ? Phase::forward : Phase::backward)
                    : (a.recv->payload == Payload::activation ? Phase::forward : Phase::backward);
  op.group = Group::pp;
  op.stream = Stream::p2p;
  op.bytes = pipeline_message_bytes(model_, split_, options_);
  // The data sent is the output of the action just before this exchange (the
  // exchange does not change producer_: a later exchange of the same round may
  // send it).
  if (a.send) op.waits[0] = wait_for_producer(Stream::p2p);
  // microbatch_/chunk_ describe the message received (or sent when there is no receive).
  const Transfer& t = a.recv ? *a.recv : *a.send;
  microbatch_ = t.microbatch;
  chunk_ = a.recv ? t.dst_chunk : placement_of(split_.schedule, split_.pp, t.src_virtual_stage).chunk;
  layer_ = kNoLayer;
  const int idx = push(op);
  if (a.recv) {
    auto& table = a.recv->payload == Payload::activation ? received_activation_ : received_gradient_;
    table.at(static_cast<size_t>(a.recv->microbatch) * split_.vpp + a.recv->dst_chunk) = idx;
  }
}

}  // namespace ibt::models::detail
