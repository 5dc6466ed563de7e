#include "models/plan/step_program.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "models/plan/accounting.hpp"

namespace ibt::models {

std::string_view to_string(OpKind k) {
  switch (k) {
    case OpKind::embedding: return "embedding";
    case OpKind::attn_norm: return "attn_norm";
    case OpKind::qkv_gemm: return "qkv_gemm";
    case OpKind::q_down_gemm: return "q_down_gemm";
    case OpKind::q_up_gemm: return "q_up_gemm";
    case OpKind::kv_down_gemm: return "kv_down_gemm";
    case OpKind::kv_up_gemm: return "kv_up_gemm";
    case OpKind::attention_core: return "attention_core";
    case OpKind::out_proj_gemm: return "out_proj_gemm";
    case OpKind::mlp_norm: return "mlp_norm";
    case OpKind::mlp_up_gemm: return "mlp_up_gemm";
    case OpKind::mlp_down_gemm: return "mlp_down_gemm";
    case OpKind::router_gemm: return "router_gemm";
    case OpKind::expert_up_gemm: return "expert_up_gemm";
    case OpKind::expert_down_gemm: return "expert_down_gemm";
    case OpKind::shared_up_gemm: return "shared_up_gemm";
    case OpKind::shared_down_gemm: return "shared_down_gemm";
    case OpKind::moe_permute: return "moe_permute";
    case OpKind::moe_unpermute: return "moe_unpermute";
    case OpKind::final_norm: return "final_norm";
    case OpKind::lm_head_gemm: return "lm_head_gemm";
    case OpKind::loss: return "loss";
    case OpKind::optimizer: return "optimizer";
    case OpKind::tp_all_reduce: return "tp_all_reduce";
    case OpKind::sp_all_gather: return "sp_all_gather";
    case OpKind::sp_reduce_scatter: return "sp_reduce_scatter";
    case OpKind::ep_counts: return "ep_counts";
    case OpKind::ep_dispatch: return "ep_dispatch";
    case OpKind::ep_combine: return "ep_combine";
    case OpKind::pp_exchange: return "pp_exchange";
    case OpKind::grad_all_reduce: return "grad_all_reduce";
    case OpKind::grad_reduce_scatter: return "grad_reduce_scatter";
    case OpKind::param_all_gather: return "param_all_gather";
    case OpKind::load_all_reduce: return "load_all_reduce";
    case OpKind::cp_kv_all_gather: return "cp_kv_all_gather";
    case OpKind::cp_kv_reduce_scatter: return "cp_kv_reduce_scatter";
    case OpKind::cp_kv_pass: return "cp_kv_pass";
    case OpKind::cp_dkv_pass: return "cp_dkv_pass";
  }
  return "?";
}

bool is_comm(OpKind k) { return k >= OpKind::tp_all_reduce; }

std::string_view to_string(Phase p) {
  switch (p) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::recompute: return "recompute";
    case Phase::optimizer: return "optimizer";
  }
  return "?";
}

std::string_view to_string(Stream s) {
  switch (s) {
    case Stream::compute: return "compute";
    case Stream::comm: return "comm";
    case Stream::grad_comm: return "grad_comm";
    case Stream::param_comm: return "param_comm";
    case Stream::p2p: return "p2p";
  }
  return "?";
}

std::string describe(const Op& op, int index) {
  char buf[256];
  std::snprintf(
      buf, sizeof buf, "#%d %s mb%d c%d L%d %s %s%s%s flops=%.4g bytes=%.4g waits=%d,%d", index,
      std::string(to_string(op.phase)).c_str(), op.microbatch, op.chunk, op.layer,
      std::string(to_string(op.kind)).c_str(), std::string(to_string(op.stream)).c_str(),
      op.group == Group::none ? "" : " group=", op.group == Group::none ? "" : std::string(to_string(op.group)).c_str(),
      op.flops, op.bytes, op.waits[0], op.waits[1]);
  return buf;
}

namespace {

// Builds one rank's program. Member functions emit the ops of one block; the
// bookkeeping (which op a new op waits for) lives in compute() and collective().
class StepBuilder {
 public:
  StepBuilder(const ModelConfig& model, const ParallelSplit& split, const PipelineSchedule& schedule, int rank,
              const StepProgramOptions& options)
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

  StepProgram build() {
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
  void interleave_pair(size_t f, size_t b) {
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

  // One forward or backward of `chunk` for any microbatch (build_action_template):
  // the wait on the received input is kWaitReceived.
  ActionTemplate chunk_ops(int chunk, Pass pass, bool reduce_grads) {
    if (pass == Pass::weight && !split_backward_)
      throw UsageError("step program: schedule " + std::string(to_string(split_.schedule)) +
                       " has no separate weight-gradient (W) pass");
    microbatch_ = -1;
    action_ = -1;
    chunk_ = chunk;
    if (pass == Pass::forward)
      forward_chunk();
    else if (pass == Pass::backward)
      backward_chunk(reduce_grads);
    else
      weight_chunk(reduce_grads);
    ActionTemplate t;
    // A W sends nothing.
    t.producer = producer_ >= 0 && pass != Pass::weight ? producer_ : -1;
    t.ops = std::move(program_.ops);
    return t;
  }

  // One part of a chunk template (build_part_template), its input kWaitReceived.
  ActionTemplate part_ops(Pass pass, ChunkPart part, int layer) {
    microbatch_ = -1;
    action_ = -1;
    chunk_ = -1;
    phase_ = pass == Pass::forward ? Phase::forward : Phase::backward;
    pass_ = pass;
    producer_ = kWaitReceived;
    switch (part) {
      case ChunkPart::embedding:
        if (pass == Pass::forward)
          embedding_fwd();
        else if (pass == Pass::backward)
          embedding_bwd();
        break;
      case ChunkPart::layer:
        if (pass == Pass::forward)
          layer_fwd(layer);
        else
          layer_bwd(layer);
        break;
      case ChunkPart::head:
        if (pass == Pass::forward)
          head_fwd();
        else
          head_bwd();
        break;
    }
    layer_ = kNoLayer;
    ActionTemplate t;
    t.producer = producer_;
    t.ops = std::move(program_.ops);
    return t;
  }

  // The gradient reduction and optimizer tail (build_tail_template), as it follows
  // the schedule's last action: the first compute op before it is kWaitLastCompute.
  std::vector<Op> gradient_ops() {
    last_compute_ = kWaitLastCompute;
    all_grad_buckets();
    optimizer_step();
    return std::move(program_.ops);
  }

  // The tail with overlapped gradient reduction: the buckets were reduced in the
  // chunks' last backwards (in `chunk_order`), so only the optimizer (waiting for the
  // last of those reductions, kWaitLastGrad) and what follows it remain.
  std::vector<Op> overlapped_tail_ops(const std::vector<int>& chunk_order) {
    last_compute_ = kWaitLastCompute;
    for (int chunk : chunk_order) {
      chunk_ = chunk;
      const int vs = vstage();
      const LayerRange r = stage_layers(model_, virtual_stages_, vs);
      if (vs == virtual_stages_ - 1) grad_buckets(model_.layers);
      for (int l = r.end() - 1; l >= r.first; --l) grad_buckets(l);
      if (vs == 0) grad_buckets(kEmbeddingLayer);
    }
    chunk_ = -1;
    const bool reduced = !program_.ops.empty();
    program_.ops.clear();
    last_grad_ = reduced ? kWaitLastGrad : -1;
    optimizer_step();
    return std::move(program_.ops);
  }

 private:
  int vstage() const { return split_.virtual_stage(program_.stage, chunk_); }
  bool sp() const { return split_.sequence_parallel; }
  double norm_tokens() const { return sp() ? tokens_ / tp_ : tokens_; }

  // After the first backward: room for every microbatch's forward and backward of every
  // chunk at the size of the first ones, and a fifth more (W passes, the tail). The
  // first guess (estimate_ops) counts 40 ops a layer, and context-parallel rings,
  // ZeRO-3 gathers and recompute make several times that: a million-op program grown
  // by doubling was copied and faulted in again at each step.
  void reserve_like_first_pair(int forwards, size_t backward_begin) {
    if (forwards == 0) return;
    const double per_forward = static_cast<double>(backward_begin) / forwards;
    const double per_backward = static_cast<double>(program_.ops.size() - backward_begin);
    const double pairs = static_cast<double>(split_.microbatches) * split_.vpp;
    const auto wanted = static_cast<size_t>(1.2 * pairs * (per_forward + per_backward)) + program_.actions.size() + 64;
    if (wanted > program_.ops.capacity()) program_.ops.reserve(wanted);
  }

  size_t estimate_ops() const {
    const size_t per_layer = 40;
    const size_t layers = static_cast<size_t>(model_.layers / split_.pp);
    return static_cast<size_t>(split_.microbatches) * layers * per_layer + program_.actions.size() + 64;
  }

  int push(Op op) {
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
  int wait_for_producer(Stream mine) const {
    // A template's received input arrives by a pp_exchange, on the p2p stream.
    if (producer_ == kWaitReceived) return mine != Stream::p2p ? kWaitReceived : -1;
    return producer_ >= 0 && program_.ops[producer_].stream != mine ? producer_ : -1;
  }

  // A compute op of the current action's chain. A W pass (weight_chunk) walks the
  // backward's ops and keeps only its GEMMs' weight halves: everything else is B's.
  void compute(OpKind kind, double flops, double bytes, bool tp_sharded = true) {
    if (pass_ == Pass::weight) return;
    emit_compute(kind, flops, bytes, tp_sharded);
  }
  void emit_compute(OpKind kind, double flops, double bytes, bool tp_sharded) {
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

  // ZeRO-3: the all-gather of a unit's parameters before its forward or backward
  // (step_program.hpp, "ZeRO-3 / FSDP").
  void begin_unit(int layer) {
    if (split_.zero != 3) return;
    unit_end_.push_back(last_compute_);  // the end of the unit before this one
    const int wait = unit_end_.size() >= 2 ? unit_end_[unit_end_.size() - 2] : -1;
    const Bucket b = bucket(layer);
    const double full_dense = b.dense, full_expert = b.expert;
    for (auto [expert, elements] : {std::pair{false, full_dense}, {true, full_expert}}) {
      const Group g = expert ? expert_shard_group() : shard_group();
      if (layout_.group_size(g) == 1 || elements <= 0) continue;
      Op op;
      op.kind = OpKind::param_all_gather;
      op.phase = phase_;
      op.group = g;
      op.stream = Stream::param_comm;
      op.expert = expert;
      op.bytes = elements * options_.param_bytes;
      op.waits[0] = wait;
      op.layer = layer;
      gather_wait_ = push(op);
    }
  }

  // The group the dense weights' states are sharded over.
  Group shard_group() const { return split_.shard_group > 0 ? Group::dp_shard : dense_group(); }

  // A GEMM of [rows x k] x [k x n] (n already this rank's share); backward does both
  // the input and the weight gradient (twice the FLOPs, twice the traffic); a split
  // backward's B the input gradient and its W the weight gradient (one each).
  // `groups` > 1: a grouped GEMM (the rank's local experts), `rows` in total over the
  // groups, each group with its own [k x n] weight (read once per product).
  void gemm(OpKind kind, double rows, double k, double n, bool tp_sharded = true, int groups = 1) {
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

  void norm(OpKind kind) { compute(kind, 0.0, 2.0 * norm_tokens() * model_.hidden * activation_bytes_, sp()); }

  // A collective on the comm stream, next in the action's chain: it waits for its
  // producer when that is a compute op, and the next compute op waits for it.
  // Omitted when the group has one rank.
  void collective(OpKind kind, Group g, double bytes) {
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

  // TP operators (Megatron's f and g): "gather" precedes a column-parallel block,
  // "reduce" follows a row-parallel one; in backward their roles swap.
  void tp_gather_fwd() {
    if (sp()) collective(OpKind::sp_all_gather, Group::tp, tokens_ * model_.hidden * activation_bytes_);
  }
  void tp_reduce_fwd() {
    collective(sp() ? OpKind::sp_reduce_scatter : OpKind::tp_all_reduce, Group::tp,
               tokens_ * model_.hidden * activation_bytes_);
  }
  // Backward of tp_reduce_fwd: identity without SP, all-gather with SP.
  void tp_reduce_bwd() {
    if (sp()) collective(OpKind::sp_all_gather, Group::tp, tokens_ * model_.hidden * activation_bytes_);
  }
  // Backward of the (implicit) copy before a column-parallel block: all-reduce, or
  // reduce-scatter with SP.
  void tp_gather_bwd() {
    collective(sp() ? OpKind::sp_reduce_scatter : OpKind::tp_all_reduce, Group::tp,
               tokens_ * model_.hidden * activation_bytes_);
  }

  void attention_fwd() {
    norm(OpKind::attn_norm);
    tp_gather_fwd();
    attention_body_fwd();
    tp_reduce_fwd();
  }
  // Between the TP operators: projections, core, output projection.
  void attention_body_fwd() {
    attention_projections();
    cp_attention_core();
    gemm(OpKind::out_proj_gemm, tokens_, model_.heads * static_cast<double>(model_.value_head_dim()) / tp_,
         model_.hidden);
  }

  // Standard attention's fused Q, K, V projection width on this rank: heads/tp query
  // heads, and its KV heads (one replicated head when tp > kv_heads).
  double qkv_width() const {
    return (model_.heads / tp_ + 2.0 * model_.kv_heads_per_rank(split_.tp)) * model_.head_dim();
  }

  void attention_projections() {
    const double h = model_.hidden, H = model_.heads;
    if (model_.attention == Attention::standard) {
      gemm(OpKind::qkv_gemm, tokens_, h, qkv_width());
      return;
    }
    const double dqk = model_.qk_head_dim(), dv = model_.value_head_dim();
    if (model_.q_lora_rank > 0) {
      gemm(OpKind::q_down_gemm, tokens_, h, model_.q_lora_rank, false);
      gemm(OpKind::q_up_gemm, tokens_, model_.q_lora_rank, H * dqk / tp_);
    } else {
      gemm(OpKind::q_up_gemm, tokens_, h, H * dqk / tp_);
    }
    gemm(OpKind::kv_down_gemm, tokens_, h, model_.kv_lora_rank + model_.qk_rope_head_dim, false);
    gemm(OpKind::kv_up_gemm, tokens_, model_.kv_lora_rank, H * (model_.qk_nope_head_dim + dv) / tp_);
  }

  void attention_projections_bwd() {
    // Reverse order of attention_projections().
    const double h = model_.hidden, H = model_.heads;
    if (model_.attention == Attention::standard) {
      gemm(OpKind::qkv_gemm, tokens_, h, qkv_width());
      return;
    }
    const double dqk = model_.qk_head_dim(), dv = model_.value_head_dim();
    gemm(OpKind::kv_up_gemm, tokens_, model_.kv_lora_rank, H * (model_.qk_nope_head_dim + dv) / tp_);
    gemm(OpKind::kv_down_gemm, tokens_, h, model_.kv_lora_rank + model_.qk_rope_head_dim, false);
    if (model_.q_lora_rank > 0) {
      gemm(OpKind::q_up_gemm, tokens_, model_.q_lora_rank, H * dqk / tp_);
      gemm(OpKind::q_down_gemm, tokens_, h, model_.q_lora_rank, false);
    } else {
      gemm(OpKind::q_up_gemm, tokens_, h, H * dqk / tp_);
    }
  }

  // softmax(QK^T)V over the full causal sequence (not discounted, accounting.hpp).
  // With CP, tokens_ local queries attend to all seq_len keys.
  void attention_core() {
    const Op op = core_op(1.0);
    compute(OpKind::attention_core, op.flops, op.bytes);
  }
  // The attention core's cost, or `share` of it (a ring step), not yet pushed.
  Op core_op(double share) const {
    const double mult = phase_ == Phase::backward ? 2.0 : 1.0;
    const double H = model_.heads / static_cast<double>(split_.tp);
    const double dqk = model_.qk_head_dim(), dv = model_.value_head_dim();
    Op op;
    op.kind = OpKind::attention_core;
    op.phase = phase_;
    op.stream = Stream::compute;
    op.flops = share * mult * 2.0 * tokens_ * model_.seq_len * H * (dqk + dv);
    op.bytes = share * mult * activation_bytes_ * tokens_ * H * (2 * dqk + 2 * dv);
    return op;
  }

  // Elements of K plus V per token on this rank (TP-split heads).
  double kv_width() const { return kv_elements_per_token_per_rank(model_, split_.tp); }

  // The attention core with the CP communication around it (step_program.hpp).
  // Recompute re-runs the forward's communication; the all-gather variant keeps the
  // gathered K/V for the backward, so the backward only reduce-scatters dK/dV.
  void cp_attention_core() {
    if (pass_ == Pass::weight) return;  // no weights
    if (split_.cp == 1) return attention_core();
    const bool backward = phase_ == Phase::backward;
    const double full_kv =
        static_cast<double>(split_.micro_batch_size) * model_.seq_len * kv_width() * activation_bytes_;
    if (split_.cp_comm == CpComm::all_gather) {
      if (!backward) collective(OpKind::cp_kv_all_gather, Group::cp, full_kv);
      attention_core();
      if (backward) collective(OpKind::cp_kv_reduce_scatter, Group::cp, full_kv);
      return;
    }
    // Ring: cp parts of 1/cp of the core each, one block of full_kv/cp per pass.
    const double block = full_kv / split_.cp;
    const int start = producer_;  // the QKV projection (forward) or out_proj backward
    int kv_prev = -1, dkv_prev = -1, part_prev = -1;
    for (int j = 0; j < split_.cp; ++j) {
      int kv = -1, dkv = -1;
      if (j < split_.cp - 1) kv = ring_pass(OpKind::cp_kv_pass, block, j == 0 ? start : -1);
      if (backward && j >= 1) dkv = ring_pass(OpKind::cp_dkv_pass, block, part_prev);
      Op part_op = core_op(1.0 / split_.cp);
      part_op.waits = {j == 0 ? (start >= 0 && program_.ops[start].stream != Stream::compute ? start : -1) : kv_prev,
                       backward ? dkv_prev : -1};
      last_compute_ = producer_ = part_prev = push(part_op);
      kv_prev = kv;
      dkv_prev = dkv;
    }
    if (backward) producer_ = ring_pass(OpKind::cp_dkv_pass, block, part_prev);
  }

  int ring_pass(OpKind kind, double bytes, int wait) {
    Op op;
    op.kind = kind;
    op.phase = phase_;
    op.group = Group::cp;
    op.stream = Stream::comm;
    op.bytes = bytes;
    op.waits[0] = wait;
    return push(op);
  }

  double gated() const { return model_.activation == Activation::swiglu ? 2.0 : 1.0; }
  // The experts on this rank: their grouped GEMMs share its routed rows evenly.
  int local_experts() const { return model_.num_experts / split_.ep; }

  void mlp_fwd(int layer) {
    norm(OpKind::mlp_norm);
    tp_gather_fwd();
    mlp_body_fwd(layer);
    tp_reduce_fwd();
  }

  // Between the TP operators: the dense MLP or the MoE layer.
  void mlp_body_fwd(int layer) {
    const double h = model_.hidden;
    if (!model_.layer_is_moe(layer)) {
      gemm(OpKind::mlp_up_gemm, tokens_, h, gated() * model_.ffn_hidden / tp_);
      gemm(OpKind::mlp_down_gemm, tokens_, model_.ffn_hidden / static_cast<double>(tp_), h);
    } else {
      const double routed = tokens_ * model_.top_k, fe = model_.expert_ffn_hidden;
      gemm(OpKind::router_gemm, tokens_, h, model_.num_experts, false);
      moe_permute();
      // models/engine/layers/block.cpp: the per-expert row counts go first (each rank learns
      // how many rows it receives), then the rows themselves.
      collective(OpKind::ep_counts, Group::ep, model_.num_experts * 8.0);
      collective(OpKind::ep_dispatch, Group::ep, routed * h * activation_bytes_);
      ep_regroup();
      gemm(OpKind::expert_up_gemm, routed, h, gated() * fe / tp_, true, local_experts());
      gemm(OpKind::expert_down_gemm, routed, fe / tp_, h, true, local_experts());
      ep_regroup();
      collective(OpKind::ep_combine, Group::ep, routed * h * activation_bytes_);
      moe_unpermute();
      if (model_.shared_experts > 0) {
        const double fs = fe * model_.shared_experts;
        gemm(OpKind::shared_up_gemm, tokens_, h, gated() * fs / tp_);
        gemm(OpKind::shared_down_gemm, tokens_, fs / tp_, h);
      }
    }
  }

  // Token permutation around the experts (memory-bound copies, models/engine/layers/moe.cpp),
  // counted as the rows moved once each (the k copies of one token are consecutive
  // slots, so the token's row is read once from memory), R = tokens * top_k routed
  // rows and T tokens of hidden:
  //   moe_permute    forward: dispatch reads T rows, writes R; backward: the R row
  //                  gradients are added into the T token gradients (read R, read +
  //                  write T);
  //   moe_unpermute  forward: combine reads R expert outputs, writes T gate-weighted
  //                  sums; backward: reads dy (T) and the saved outputs (R), writes R
  //                  row gradients;
  //   ep_regroup     with EP only (a moe_permute op): the rows received grouped by
  //                  peer are reordered by local expert before the experts and back
  //                  after them (read + write R).
  void moe_permute() {
    const double R = tokens_ * model_.top_k, row = model_.hidden * activation_bytes_;
    compute(OpKind::moe_permute, 0.0, (phase_ == Phase::backward ? R + 2 * tokens_ : R + tokens_) * row);
  }
  void moe_unpermute() {
    const double R = tokens_ * model_.top_k, row = model_.hidden * activation_bytes_;
    compute(OpKind::moe_unpermute, 0.0, (phase_ == Phase::backward ? 2 * R + tokens_ : R + tokens_) * row);
  }
  void ep_regroup() {
    if (split_.ep > 1)
      compute(OpKind::moe_permute, 0.0, 2.0 * tokens_ * model_.top_k * model_.hidden * activation_bytes_);
  }

  void mlp_bwd(int layer) {
    tp_reduce_bwd();
    mlp_body_bwd(layer);
    tp_gather_bwd();
    norm(OpKind::mlp_norm);
  }

  void mlp_body_bwd(int layer) {
    const double h = model_.hidden;
    if (!model_.layer_is_moe(layer)) {
      gemm(OpKind::mlp_down_gemm, tokens_, model_.ffn_hidden / static_cast<double>(tp_), h);
      gemm(OpKind::mlp_up_gemm, tokens_, h, gated() * model_.ffn_hidden / tp_);
    } else {
      // The engine's order (block.cpp moe_backward): combine backward, the TP sum of
      // the gate-weight gradient (expert outputs are partial over TP, so is dy . out;
      // summed here, the router's own gradient comes out complete on every TP rank),
      // the routed experts between the two all-to-alls, the shared experts, the
      // dispatch backward and the router.
      const double routed = tokens_ * model_.top_k, fe = model_.expert_ffn_hidden;
      moe_unpermute();
      collective(OpKind::tp_all_reduce, Group::tp, routed * 4.0);  // fp32 gate gradients
      collective(OpKind::ep_combine, Group::ep, routed * h * activation_bytes_);
      ep_regroup();
      gemm(OpKind::expert_down_gemm, routed, fe / tp_, h, true, local_experts());
      gemm(OpKind::expert_up_gemm, routed, h, gated() * fe / tp_, true, local_experts());
      ep_regroup();
      collective(OpKind::ep_dispatch, Group::ep, routed * h * activation_bytes_);
      if (model_.shared_experts > 0) {
        const double fs = fe * model_.shared_experts;
        gemm(OpKind::shared_down_gemm, tokens_, fs / tp_, h);
        gemm(OpKind::shared_up_gemm, tokens_, h, gated() * fs / tp_);
      }
      moe_permute();
      gemm(OpKind::router_gemm, tokens_, h, model_.num_experts, false);
    }
  }

  void attention_bwd() {
    tp_reduce_bwd();
    attention_body_bwd();
    tp_gather_bwd();
    norm(OpKind::attn_norm);
  }

  void attention_body_bwd() {
    gemm(OpKind::out_proj_gemm, tokens_, model_.heads * static_cast<double>(model_.value_head_dim()) / tp_,
         model_.hidden);
    if (split_.recompute == Recompute::selective) {
      const Phase saved = phase_;
      phase_ = Phase::recompute;
      cp_attention_core();
      phase_ = saved;
    }
    cp_attention_core();
    attention_projections_bwd();
  }

  // The layer's forward ops. A parallel block (model_config.hpp parallel_block) runs
  // both branches on one norm's (gathered) output and reduces their summed partial
  // outputs once, as block.cpp does; the sequential block has a norm and a TP
  // gather/reduce pair around each branch.
  void layer_body_fwd(int layer) {
    if (!model_.parallel_block) {
      attention_fwd();
      mlp_fwd(layer);
      return;
    }
    norm(OpKind::attn_norm);
    tp_gather_fwd();
    attention_body_fwd();
    mlp_body_fwd(layer);
    tp_reduce_fwd();
  }
  // Backward in the engine's order: the MLP branch, then attention, one reduction.
  void layer_body_bwd(int layer) {
    if (!model_.parallel_block) {
      mlp_bwd(layer);
      attention_bwd();
      return;
    }
    tp_reduce_bwd();
    mlp_body_bwd(layer);
    attention_body_bwd();
    tp_gather_bwd();
    norm(OpKind::attn_norm);
  }

  void layer_fwd(int layer) {
    layer_ = layer;
    begin_unit(layer);
    layer_body_fwd(layer);
  }

  void layer_bwd(int layer) {
    layer_ = layer;
    begin_unit(layer);
    if (split_.recompute == Recompute::full && pass_ != Pass::weight) {
      // Re-run the layer's forward from its saved input; the backward then continues
      // from the incoming gradient, not from the recomputed output.
      const int gradient = producer_;
      phase_ = Phase::recompute;
      layer_body_fwd(layer);
      phase_ = Phase::backward;
      producer_ = gradient;
    }
    layer_body_bwd(layer);
  }

  void embedding_fwd() {
    layer_ = kEmbeddingLayer;
    begin_unit(kEmbeddingLayer);
    compute(OpKind::embedding, 0.0, tokens_ * model_.hidden * activation_bytes_);
    tp_reduce_fwd();  // vocab-parallel lookup: partial rows summed over TP
  }
  void embedding_bwd() {
    layer_ = kEmbeddingLayer;
    begin_unit(kEmbeddingLayer);
    tp_reduce_bwd();
    compute(OpKind::embedding, 0.0, tokens_ * model_.hidden * activation_bytes_);
  }

  void head_fwd() {
    layer_ = model_.layers;
    begin_unit(model_.layers);
    norm(OpKind::final_norm);
    tp_gather_fwd();
    gemm(OpKind::lm_head_gemm, tokens_, model_.hidden, model_.vocab / static_cast<double>(tp_));
    compute(OpKind::loss, 0.0, tokens_ * model_.vocab / static_cast<double>(tp_) * activation_bytes_);
    // Vocab-parallel cross-entropy: max, sum of exp and target logit per token (fp32).
    collective(OpKind::tp_all_reduce, Group::tp, 3.0 * tokens_ * 4.0);
  }
  void head_bwd() {
    layer_ = model_.layers;
    begin_unit(model_.layers);
    compute(OpKind::loss, 0.0, tokens_ * model_.vocab / static_cast<double>(tp_) * activation_bytes_);
    gemm(OpKind::lm_head_gemm, tokens_, model_.hidden, model_.vocab / static_cast<double>(tp_));
    tp_gather_bwd();
    norm(OpKind::final_norm);
  }

  void forward_chunk() {
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

  void backward_chunk(bool reduce_grads_now) {
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
  void weight_chunk(bool reduce_grads_now) {
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

  size_t slot() const { return static_cast<size_t>(microbatch_) * split_.vpp + chunk_; }

  // Every bucket of the stage, in backward order (last chunk's head first).
  void all_grad_buckets() {
    for (int chunk = split_.vpp - 1; chunk >= 0; --chunk) {
      chunk_ = chunk;
      const int vs = vstage();
      const LayerRange r = stage_layers(model_, virtual_stages_, vs);
      auto bucket_done = [this](int layer) {
        if (split_.zero < 2) return grad_buckets(layer);
        pending_bucket_layer_ = layer;  // reduce-scattered in every backward already
        replica_reduce(bucket(layer));
        recorded_buckets_.push_back(layer);
      };
      if (vs == virtual_stages_ - 1) bucket_done(model_.layers);
      for (int l = r.end() - 1; l >= r.first; --l) bucket_done(l);
      if (vs == 0) bucket_done(kEmbeddingLayer);
    }
    chunk_ = -1;
  }

  void exchange(const PipeAction& a) {
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

  // This rank's share of the parameters of `layer` (kEmbeddingLayer, m.layers = head):
  // non-expert weights (reduced over dp), of which tp_partial are TP-replicated weights
  // whose gradients are partial sums over the TP group (reduced over tp first), and
  // expert weights (reduced over expert_dp).
  struct Bucket {
    double dense = 0, tp_partial = 0, expert = 0;
    double kv_replicated = 0;  // of dense: replicated KV heads' Wk, Wv (summed over tp_kv)
  };
  Bucket bucket(int layer) const {
    Bucket b;
    if (layer == kEmbeddingLayer) {
      b.dense = param_counts_.embedding / tp_;
    } else if (layer == model_.layers) {
      b.dense = param_counts_.lm_head / tp_ + param_counts_.final_norm;
      b.tp_partial = sp() ? param_counts_.final_norm : 0.0;
    } else {
      const double replicated = param_counts_.attention_tp_replicated_per_layer;
      b.dense = attention_params_per_rank(model_, param_counts_, split_.tp) + param_counts_.norms_per_layer;
      b.tp_partial = replicated + (sp() ? param_counts_.norms_per_layer : 0.0);
      if (model_.kv_replicas(split_.tp) > 1) b.kv_replicated = param_counts_.attention_kv_per_layer / model_.kv_heads;
      if (model_.layer_is_moe(layer)) {
        // The router's gradient is complete on every TP rank (the gate-weight gradient
        // was TP-summed in the backward), so it needs no TP reduction.
        b.dense += param_counts_.router_per_layer + param_counts_.shared_per_layer / tp_;
        b.expert = (model_.num_experts / split_.ep) * param_counts_.per_expert / tp_;
      } else {
        b.dense += param_counts_.dense_mlp_per_layer / tp_;
      }
    }
    return b;
  }

  void grad_op(OpKind kind, Group g, double bytes, bool expert, int wait) {
    if (layout_.group_size(g) == 1 || bytes <= 0) return;
    Op op;
    op.kind = kind;
    op.phase = Phase::optimizer;
    op.group = g;
    op.stream = Stream::grad_comm;
    op.expert = expert;
    op.bytes = bytes;
    op.waits[0] = wait;
    last_grad_ = push(op);
    // Per-step op: it belongs to a layer's bucket, not to a microbatch.
    Op& pushed = program_.ops.back();
    pushed.layer = pending_bucket_layer_;
    pushed.microbatch = -1;
    pushed.chunk = -1;
  }

  // Where non-expert and expert gradients are reduced (CP ranks are replicas too).
  Group dense_group() const { return split_.cp > 1 ? Group::dp_cp : Group::dp; }
  Group expert_group() const { return split_.cp > 1 ? Group::expert_dp_cp : Group::expert_dp; }
  // The group the expert weights' states are sharded over (HSDP: inside the shard group).
  Group expert_shard_group() const { return split_.shard_group > 0 ? Group::expert_dp_shard : expert_group(); }

  // Gradient reduction of one layer's bucket (after its last backward; with ZeRO-2/3
  // after every backward, record = false except after the last one with overlap: the
  // bucket is recorded, and HSDP's replica all-reduce issued, once).
  void grad_buckets(int layer, bool record = true) {
    pending_bucket_layer_ = layer;
    const Bucket b = bucket(layer);
    const double gb = options_.gradient_bytes;
    const OpKind kind = split_.zero >= 1 ? OpKind::grad_reduce_scatter : OpKind::grad_all_reduce;
    // TP-replicated weights with partial gradients: the MLA down projections (their
    // output gradients come from TP-split consumers) and, with SP, the norms (each TP
    // rank sees only its sequence shard).
    grad_op(OpKind::grad_all_reduce, Group::tp, b.tp_partial * gb, false, last_compute_);
    // Replicated KV heads: each copy's share of its Wk, Wv gradient, summed over the
    // copies (tp_kv) so that they stay identical.
    grad_op(OpKind::grad_all_reduce, Group::tp_kv, b.kv_replicated * gb, false, last_compute_);
    grad_op(kind, split_.zero >= 1 ? shard_group() : dense_group(), b.dense * gb, false, last_compute_);
    grad_op(kind, split_.zero >= 1 ? expert_shard_group() : expert_group(), b.expert * gb, true, last_compute_);
    if (!record) return;
    if (split_.zero >= 1) replica_reduce(b);
    recorded_buckets_.push_back(layer);
  }

  // Hybrid sharding: the reduced shard summed over the replicas of the shard group.
  void replica_reduce(const Bucket& b) {
    if (split_.shard_group > 0) {
      grad_op(OpKind::grad_all_reduce, Group::dp_replica,
              b.dense / layout_.group_size(Group::dp_shard) * options_.gradient_bytes, false, last_compute_);
      grad_op(OpKind::grad_all_reduce, Group::dp_replica,
              b.expert / layout_.group_size(Group::expert_dp_shard) * options_.gradient_bytes, true, last_compute_);
    }
  }

  void optimizer_step() {
    double dense = 0, expert = 0;
    for (int l : recorded_buckets_) {
      const Bucket b = bucket(l);
      dense += b.dense;
      expert += b.expert;
    }
    if (recorded_buckets_.empty()) {  // no reduction emitted buckets (never happens; defensive)
      return;
    }
    const double shard =
        split_.zero >= 1 ? dense / layout_.group_size(shard_group()) + expert / layout_.group_size(expert_shard_group())
                         : dense + expert;
    Op op;
    op.kind = OpKind::optimizer;
    op.phase = Phase::optimizer;
    op.stream = Stream::compute;
    op.flops = options_.optimizer_flops_per_param * shard;
    op.bytes = shard * (2.0 * options_.param_bytes + options_.gradient_bytes + 16.0);  // w, g, fp32 m, v
    op.waits[0] = last_grad_;  // the grad_comm stream is in order: its last op covers all
    layer_ = kNoLayer;
    microbatch_ = chunk_ = action_ = -1;
    const int opt = push(op);
    last_compute_ = opt;
    // Aux-loss-free balancing: each MoE layer's per-expert load of the step is summed
    // over dp (fp64 counts) before its bias update (cpu_executor.cpp, after the
    // optimizer).
    if (model_.balance == RoutingBalance::aux_loss_free)
      for (int l : recorded_buckets_)
        if (l >= 0 && l < model_.layers && model_.layer_is_moe(l)) {
          pending_bucket_layer_ = l;
          grad_op(OpKind::load_all_reduce, dense_group(), model_.num_experts * 8.0, false, opt);
        }
    // ZeRO-1/2: the updated shards gathered back into whole weights (ZeRO-3 keeps them
    // sharded: the next step gathers each unit before its use).
    if (split_.zero != 1 && split_.zero != 2) return;
    for (int l : recorded_buckets_) {
      pending_bucket_layer_ = l;
      const Bucket b = bucket(l);
      grad_op(OpKind::param_all_gather, shard_group(), b.dense * options_.param_bytes, false, opt);
      grad_op(OpKind::param_all_gather, expert_shard_group(), b.expert * options_.param_bytes, true, opt);
    }
  }

  const ModelConfig& model_;
  const ParallelSplit& split_;
  const StepProgramOptions& options_;
  RankLayout layout_;
  ParamCounts param_counts_;
  StepProgram program_;
  double tp_ = 1, tokens_ = 0, activation_bytes_ = 4;
  int virtual_stages_ = 1;
  Phase phase_ = Phase::forward;
  Pass pass_ = Pass::forward;    // the action being expanded
  bool split_backward_ = false;  // backward = B only, weight gradients in W actions
  int layer_ = kNoLayer, microbatch_ = -1, chunk_ = -1, action_ = -1;
  int last_compute_ = -1, producer_ = -1, last_grad_ = -1;
  int pending_bucket_layer_ = kNoLayer;
  int gather_wait_ = -1;       // ZeRO-3: the gather the next compute op waits for
  std::vector<int> unit_end_;  // ZeRO-3: last compute op before each unit began
  std::vector<int> received_activation_, received_gradient_;
  std::vector<int> recorded_buckets_;
};

}  // namespace

StepProgram build_step_program(const ModelConfig& model, const ParallelSplit& split, const PipelineSchedule& schedule,
                               int rank, const StepProgramOptions& options) {
  validate(split, model, split.world_size());
  if (schedule.stages != split.pp || schedule.chunks != split.vpp || schedule.microbatches != split.microbatches ||
      schedule.kind != split.schedule)
    throw UsageError("step program: the schedule does not match split " + describe(split));
  return StepBuilder(model, split, schedule, rank, options).build();
}

StepProgram build_step_program(const ModelConfig& model, const ParallelSplit& split, int rank,
                               const StepProgramOptions& options) {
  validate(split, model, split.world_size());
  const PipelineSchedule schedule = build_schedule(split);
  return StepBuilder(model, split, schedule, rank, options).build();
}

namespace {
// The rank (0, 0, stage) stands for its stage; the schedule is not consulted by the
// template builders, so an empty one with the split's shape is enough.
PipelineSchedule shape_only(const ParallelSplit& split) {
  PipelineSchedule s;
  s.kind = split.schedule;
  s.stages = split.pp;
  s.chunks = split.vpp;
  s.microbatches = split.microbatches;
  s.per_stage.resize(split.pp);
  return s;
}
}  // namespace

double pipeline_message_bytes(const ModelConfig& model, const ParallelSplit& split, const StepProgramOptions& options) {
  // This rank's tokens: its 1/cp of the sequence (as the StepBuilder's tokens_).
  const double tokens = static_cast<double>(split.micro_batch_size) * model.seq_len / split.cp;
  // With SP each TP rank holds (and sends) its sequence shard.
  return (split.sequence_parallel ? tokens / split.tp : tokens) * model.hidden * options.activation_bytes;
}

ActionTemplate build_action_template(const ModelConfig& model, const ParallelSplit& split, int stage, int chunk,
                                     Pass pass, bool reduce_grads, const StepProgramOptions& options) {
  validate(split, model, split.world_size());
  if (stage < 0 || stage >= split.pp || chunk < 0 || chunk >= split.vpp)
    throw UsageError("step program: no stage " + std::to_string(stage) + " chunk " + std::to_string(chunk) +
                     " in split " + describe(split));
  const PipelineSchedule shape = shape_only(split);
  const int rank = RankLayout(split).rank_of({0, 0, stage, 0, 0});
  const Pass completes = splits_backward(split.schedule) ? Pass::weight : Pass::backward;
  return StepBuilder(model, split, shape, rank, options).chunk_ops(chunk, pass, reduce_grads && pass == completes);
}

ActionTemplate build_part_template(const ModelConfig& model, const ParallelSplit& split, int stage, Pass pass,
                                   ChunkPart part, int layer, const StepProgramOptions& options) {
  validate(split, model, split.world_size());
  if (split.zero >= 2) throw std::logic_error("step program: ZeRO-2/3 chunks are not built part by part");
  if (stage < 0 || stage >= split.pp)
    throw UsageError("step program: no stage " + std::to_string(stage) + " in split " + describe(split));
  if (pass == Pass::weight && !splits_backward(split.schedule))
    throw UsageError("step program: schedule " + std::string(to_string(split.schedule)) +
                     " has no separate weight-gradient (W) pass");
  if (part == ChunkPart::layer && (layer < 0 || layer >= model.layers))
    throw std::logic_error("step program: no layer " + std::to_string(layer));
  const PipelineSchedule shape = shape_only(split);
  const int rank = RankLayout(split).rank_of({0, 0, stage, 0, 0});
  return StepBuilder(model, split, shape, rank, options).part_ops(pass, part, layer);
}

std::vector<Op> build_tail_template(const ModelConfig& model, const ParallelSplit& split, int stage,
                                    const std::vector<int>& chunk_order, const StepProgramOptions& options) {
  validate(split, model, split.world_size());
  const PipelineSchedule shape = shape_only(split);
  const int rank = RankLayout(split).rank_of({0, 0, stage, 0, 0});
  StepBuilder b(model, split, shape, rank, options);
  return options.overlap_grad_reduce ? b.overlapped_tail_ops(chunk_order) : b.gradient_ops();
}

namespace {
// The template builders' markers mean nothing outside the fast sim: as documented,
// build_chunk_ops and build_gradient_ops leave those waits out.
std::vector<Op> without_markers(std::vector<Op> ops) {
  for (Op& op : ops)
    for (int& w : op.waits)
      if (w < -1) w = -1;
  return ops;
}
}  // namespace

std::vector<Op> build_chunk_ops(const ModelConfig& model, const ParallelSplit& split, int stage, int chunk, Pass pass,
                                const StepProgramOptions& options) {
  validate(split, model, split.world_size());
  if (stage < 0 || stage >= split.pp || chunk < 0 || chunk >= split.vpp)
    throw UsageError("step program: no stage " + std::to_string(stage) + " chunk " + std::to_string(chunk) +
                     " in split " + describe(split));
  const PipelineSchedule shape = shape_only(split);
  const int rank = RankLayout(split).rank_of({0, 0, stage, 0, 0});
  return without_markers(StepBuilder(model, split, shape, rank, options).chunk_ops(chunk, pass, false).ops);
}

std::vector<Op> build_gradient_ops(const ModelConfig& model, const ParallelSplit& split, int stage,
                                   const StepProgramOptions& options) {
  validate(split, model, split.world_size());
  const PipelineSchedule shape = shape_only(split);
  const int rank = RankLayout(split).rank_of({0, 0, stage, 0, 0});
  return without_markers(StepBuilder(model, split, shape, rank, options).gradient_ops());
}

}  // namespace ibt::models
