// How one op joins the step program: the bookkeeping of the action's data chain
// (which op a new op waits for, on which stream), and the cost of the basic op kinds
// (a compute op, a GEMM by its shape, a norm, a collective). Private to models/plan
// (step_builder.hpp).
#include "models/plan/step_builder.hpp"

namespace ibt::models::detail {

int StepBuilder::push(Op op) {
  op.layer = op.layer == kNoLayer ? layer_ : op.layer;
  op.microbatch = microbatch_;
  op.chunk = chunk_;
  op.action = action_;
  program_.ops.push_back(op);
  return static_cast<int>(program_.ops.size()) - 1;
}

// Index of the op whose output the next op consumes: the data dependency chain of
// the current action. An op waits for it only when it runs on another stream (ops of
// one stream run in order anyway).
int StepBuilder::wait_for_producer(Stream mine) const {
  // A template's received input arrives by a pp_exchange, on the p2p stream.
  if (producer_ == kWaitReceived) return mine != Stream::p2p ? kWaitReceived : -1;
  return producer_ >= 0 && program_.ops[producer_].stream != mine ? producer_ : -1;
}

// A compute op of the current action's chain. A W pass (weight_chunk) walks the
// backward's ops and keeps only its GEMMs' weight halves: everything else is B's.
void StepBuilder::compute(OpKind kind, double flops, double bytes, bool tp_sharded) {
  if (pass_ == Pass::weight) return;
  emit_compute(kind, flops, bytes, tp_sharded);
}

void StepBuilder::emit_compute(OpKind kind, double flops, double bytes, bool tp_sharded) {
  Op op;
  op.kind = kind;
  op.phase = phase_;
  op.stream = Stream::compute;
  op.tp_sharded = tp_sharded;
  op.flops = flops;
  op.bytes = bytes;
  op.waits[0] = wait_for_producer(Stream::compute);
  op.waits[1] = gather_wait_;  // ZeRO-3: the unit's first compute op needs its weights
  gather_wait_ = -1;
  last_compute_ = producer_ = push(op);
}

// A GEMM of [rows x k] x [k x n] (n already this rank's share); backward does both
// the input and the weight gradient (twice the FLOPs, twice the traffic); a split
// backward's B the input gradient and its W the weight gradient (one each).
// `groups` > 1: a grouped GEMM (the rank's local experts), `rows` in total over the
// groups, each group with its own [k x n] weight (read once per product).
void StepBuilder::gemm(OpKind kind, double rows, double k, double n, bool tp_sharded, int groups) {
  const double mult = phase_ == Phase::backward && !split_backward_ ? 2.0 : 1.0;
  emit_compute(kind, mult * 2.0 * rows * k * n, mult * activation_bytes_ * (rows * k + groups * k * n + rows * n),
               tp_sharded);
  Op& op = program_.ops.back();
  op.gemm.rows = static_cast<float>(rows / groups);
  op.gemm.k = static_cast<float>(k);
  op.gemm.n = static_cast<float>(n);
  op.gemm.groups = static_cast<std::uint16_t>(groups);
  if (phase_ != Phase::backward)
    op.gemm.passes = gemm_product;
  else if (!split_backward_)
    op.gemm.passes = gemm_input_grad | gemm_weight_grad;
  else
    op.gemm.passes = pass_ == Pass::weight ? gemm_weight_grad : gemm_input_grad;
}

void StepBuilder::norm(OpKind kind) {
  compute(kind, 0.0, 2.0 * norm_tokens() * model_.hidden * activation_bytes_, sp());
}

// A collective on the comm stream, next in the action's chain: it waits for its
// producer when that is a compute op, and the next compute op waits for it.
// Omitted when the group has one rank.
void StepBuilder::collective(OpKind kind, Group g, double bytes) {
  if (layout_.group_size(g) == 1 || pass_ == Pass::weight) return;
  Op op;
  op.kind = kind;
  op.phase = phase_;
  op.group = g;
  op.stream = Stream::comm;
  op.bytes = bytes;
  op.waits[0] = wait_for_producer(Stream::comm);
  producer_ = push(op);
}

}  // namespace ibt::models::detail
