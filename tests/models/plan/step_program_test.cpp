// Step programs: op counts per layer for TP / SP / EP, the model-FLOPs identity with
// the accounting, well-formed waits, and generation speed for a 1T MoE.
#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "core/errors.hpp"
#include "models/plan/accounting.hpp"
#include "models/plan/model_file.hpp"
#include "models/plan/step_program.hpp"

namespace ibt::models {
namespace {

// Ops of one layer for one microbatch and phase, by kind.
std::map<OpKind, int> ops_of(const StepProgram& p, int layer, Phase phase, int mb = 0) {
  std::map<OpKind, int> n;
  for (const Op& op : p.ops)
    if (op.layer == layer && op.phase == phase && op.microbatch == mb) ++n[op.kind];
  return n;
}

int comm_ops(const std::map<OpKind, int>& n) {
  int c = 0;
  for (auto [k, v] : n)
    if (is_comm(k)) c += v;
  return c;
}

TEST(PlanStepProgram, TensorParallelOpsPerLayer) {
  const ModelConfig m = load_model("tiny-dense");
  ParallelSplit s{1, 2, 1, 1, 1, 1, 1, ScheduleKind::one_f_one_b};
  const StepProgram p = build_step_program(m, s, 0);
  auto f = ops_of(p, 1, Phase::forward);
  EXPECT_EQ(f[OpKind::tp_all_reduce], 2);  // after out-proj and after mlp-down
  EXPECT_EQ(f[OpKind::qkv_gemm], 1);
  EXPECT_EQ(f[OpKind::attention_core], 1);
  EXPECT_EQ(f[OpKind::mlp_up_gemm], 1);
  EXPECT_EQ(comm_ops(f), 2);
  auto b = ops_of(p, 1, Phase::backward);
  EXPECT_EQ(b[OpKind::tp_all_reduce], 2);  // after qkv and mlp-up input gradients
  EXPECT_EQ(comm_ops(b), 2);
  // Sequence parallel: an all-gather and a reduce-scatter per block instead.
  s.sequence_parallel = true;
  const StepProgram q = build_step_program(m, s, 1);
  f = ops_of(q, 1, Phase::forward);
  EXPECT_EQ(f[OpKind::sp_all_gather], 2);
  EXPECT_EQ(f[OpKind::sp_reduce_scatter], 2);
  EXPECT_EQ(f[OpKind::tp_all_reduce], 0);
  b = ops_of(q, 1, Phase::backward);
  EXPECT_EQ(b[OpKind::sp_all_gather], 2);
  EXPECT_EQ(b[OpKind::sp_reduce_scatter], 2);
  // No TP: no collectives inside layers at all.
  const StepProgram r = build_step_program(m, {1, 1, 1, 1, 1, 1, 1, ScheduleKind::one_f_one_b}, 0);
  EXPECT_EQ(comm_ops(ops_of(r, 1, Phase::forward)), 0);
  EXPECT_EQ(comm_ops(ops_of(r, 1, Phase::backward)), 0);
}

TEST(PlanStepProgram, ExpertParallelOpsPerLayer) {
  const ModelConfig m = load_model("tiny-moe");
  const ParallelSplit s{2, 1, 1, 2, 1, 2, 1, ScheduleKind::one_f_one_b};
  const StepProgram p = build_step_program(m, s, 1);
  for (int mb : {0, 1}) {
    auto f = ops_of(p, 2, Phase::forward, mb);  // an MoE layer
    EXPECT_EQ(f[OpKind::ep_dispatch], 1);
    EXPECT_EQ(f[OpKind::ep_combine], 1);
    EXPECT_EQ(f[OpKind::router_gemm], 1);
    EXPECT_EQ(f[OpKind::expert_up_gemm], 1);
    EXPECT_EQ(f[OpKind::shared_up_gemm], 1);
    auto b = ops_of(p, 2, Phase::backward, mb);
    EXPECT_EQ(b[OpKind::ep_dispatch], 1);
    EXPECT_EQ(b[OpKind::ep_combine], 1);
    auto d = ops_of(p, 0, Phase::forward, mb);  // the leading dense layer
    EXPECT_EQ(d[OpKind::ep_dispatch], 0);
    EXPECT_EQ(d[OpKind::mlp_up_gemm], 1);
  }
  // Gradient reduction: dp all-reduce per layer, plus expert_dp for expert weights when
  // expert_dp > 1 (here dp 2 / ep 2 = 1: none).
  int dp_grads = 0, edp_grads = 0;
  for (const Op& op : p.ops) {
    if (op.kind != OpKind::grad_all_reduce) continue;
    (op.group == Group::dp ? dp_grads : edp_grads) += 1;
  }
  EXPECT_EQ(dp_grads, m.layers + 2);  // layers + embedding + head
  EXPECT_EQ(edp_grads, 0);
  const ParallelSplit s4{4, 1, 1, 2, 1, 1, 1, ScheduleKind::one_f_one_b};
  edp_grads = 0;
  for (const Op& op : build_step_program(m, s4, 0).ops)
    if (op.group == Group::expert_dp) ++edp_grads;
  EXPECT_EQ(edp_grads, m.moe_layers());
}

// One MoE layer of tiny-moe (hidden 64, 8 experts, top-2, expert_ffn 64, SwiGLU, one
// shared expert), counted by hand from models/engine/layers/moe.cpp and block.cpp, against
// the ops of that layer for one microbatch of b = 2 sequences of 32 (T = 64 tokens,
// 128 routed rows), fp32 (4 B), at dp 4 ep 2 (4 local experts) and tp 2.
TEST(PlanStepProgram, MoeLayerFlopsAndBytesByHand) {
  const ModelConfig m = load_model("tiny-moe");
  ASSERT_EQ(m.hidden, 64);
  ASSERT_EQ(m.num_experts, 8);
  ASSERT_EQ(m.top_k, 2);
  ASSERT_EQ(m.expert_ffn_hidden, 64);
  ASSERT_EQ(m.shared_experts, 1);
  const ParallelSplit s{4, 2, 1, 2, 1, 1, 2, ScheduleKind::one_f_one_b};
  const StepProgram p = build_step_program(m, s, 0);
  const double T = 64, R = 128, h = 64, E = 8, fe = 64, e = 4, tp = 2;
  std::map<std::pair<OpKind, Phase>, std::vector<const Op*>> by;
  for (const Op& op : p.ops)
    if (op.layer == 1 && op.microbatch == 0) by[{op.kind, op.phase}].push_back(&op);
  auto one = [&](OpKind k, Phase ph) -> const Op& {
    const auto& v = by[{k, ph}];
    EXPECT_EQ(v.size(), 1u) << to_string(k) << " " << to_string(ph);
    return *v.at(0);
  };
  const Phase F = Phase::forward, B = Phase::backward;
  // Router: [T, h] x [h, E], replicated over TP; backward = input + weight gradient.
  EXPECT_DOUBLE_EQ(one(OpKind::router_gemm, F).flops, 2 * T * h * E);
  EXPECT_DOUBLE_EQ(one(OpKind::router_gemm, F).bytes, e * (T * h + h * E + T * E));
  EXPECT_FALSE(one(OpKind::router_gemm, F).tp_sharded);
  EXPECT_DOUBLE_EQ(one(OpKind::router_gemm, B).flops, 2 * 2 * T * h * E);
  // Routed experts: every EP rank runs R rows on average (balanced), SwiGLU up (gate
  // and up fused: 2 fe columns) and down, each TP-split.
  EXPECT_DOUBLE_EQ(one(OpKind::expert_up_gemm, F).flops, 2 * R * h * 2 * fe / tp);
  EXPECT_DOUBLE_EQ(one(OpKind::expert_down_gemm, F).flops, 2 * R * (fe / tp) * h);
  EXPECT_DOUBLE_EQ(one(OpKind::expert_up_gemm, B).flops, 2 * 2 * R * h * 2 * fe / tp);
  // A grouped GEMM over the E / ep = 4 local experts: each reads its own weight, and
  // its shape (for pricing by tiles) is 4 products of R / 4 rows each.
  const double local = E / 2;
  EXPECT_DOUBLE_EQ(one(OpKind::expert_up_gemm, F).bytes, e * (R * h + local * h * 2 * fe / tp + R * 2 * fe / tp));
  const GemmShape up = one(OpKind::expert_up_gemm, F).gemm;
  EXPECT_EQ(up, (GemmShape{static_cast<float>(R / local), static_cast<float>(h), static_cast<float>(2 * fe / tp),
                           static_cast<std::uint16_t>(local), gemm_product}));
  EXPECT_EQ(one(OpKind::expert_down_gemm, B).gemm.passes, gemm_input_grad | gemm_weight_grad);
  EXPECT_EQ(one(OpKind::router_gemm, F).gemm.groups, 1);
  EXPECT_EQ(one(OpKind::router_gemm, F).gemm.n, E);
  // Shared expert: every token, one MLP of 1 * fe.
  EXPECT_DOUBLE_EQ(one(OpKind::shared_up_gemm, F).flops, 2 * T * h * 2 * fe / tp);
  EXPECT_DOUBLE_EQ(one(OpKind::shared_down_gemm, B).flops, 2 * 2 * T * (fe / tp) * h);
  // All-to-alls on the ep group: counts (E fp64) once in the forward; the rows (R x h
  // fp32, what one rank sends in total) dispatched and combined, forward and backward.
  EXPECT_DOUBLE_EQ(one(OpKind::ep_counts, F).bytes, E * 8);
  const auto& counts_b = by[{OpKind::ep_counts, B}];
  EXPECT_TRUE(counts_b.empty());
  for (Phase ph : {F, B})
    for (OpKind k : {OpKind::ep_dispatch, OpKind::ep_combine}) {
      EXPECT_DOUBLE_EQ(one(k, ph).bytes, R * h * e);
      EXPECT_EQ(one(k, ph).group, Group::ep);
    }
  // Token permutation copies, rows moved once: dispatch reads T writes R, the EP
  // regroup reads and writes R before and after the experts, combine reads R writes T;
  // backward: combine's reads dy (T) and the outputs (R) and writes R, the dispatch's
  // scatter-add reads R and updates T.
  double permute_f = 0, permute_b = 0;
  for (const Op* op : by[{OpKind::moe_permute, F}]) permute_f += op->bytes;
  for (const Op* op : by[{OpKind::moe_permute, B}]) permute_b += op->bytes;
  EXPECT_DOUBLE_EQ(permute_f, (T + R + 2 * R + 2 * R) * h * e);
  EXPECT_DOUBLE_EQ(permute_b, (R + 2 * T + 2 * R + 2 * R) * h * e);
  EXPECT_DOUBLE_EQ(one(OpKind::moe_unpermute, F).bytes, (R + T) * h * e);
  EXPECT_DOUBLE_EQ(one(OpKind::moe_unpermute, B).bytes, (2 * R + T) * h * e);
  // TP: the block's two all-reduces of [T, h] forward and backward, plus in the
  // backward the gate-weight gradient (R fp32).
  double tp_f = 0, tp_b = 0;
  for (const Op* op : by[{OpKind::tp_all_reduce, F}]) tp_f += op->bytes;
  for (const Op* op : by[{OpKind::tp_all_reduce, B}]) tp_b += op->bytes;
  EXPECT_DOUBLE_EQ(tp_f, 2 * T * h * e);
  EXPECT_DOUBLE_EQ(tp_b, 2 * T * h * e + R * 4);
  // Gradients of the layer (once per step): the expert weights of this rank's 4
  // experts (up 2 fe h / tp + down fe h / tp each) over expert_dp (4 / 2 = 2 ranks),
  // the rest (attention, norms, router, shared expert) over dp; none over tp.
  double expert_grads = 0, tp_grads = 0, loads = 0;
  for (const Op& op : p.ops) {
    if (op.layer != 1 || op.microbatch != -1) continue;
    if (op.group == Group::expert_dp) expert_grads += op.bytes;
    if (op.group == Group::tp) tp_grads += op.bytes;
    if (op.kind == OpKind::load_all_reduce) {
      loads += op.bytes;
      EXPECT_EQ(op.group, Group::dp);
    }
  }
  EXPECT_DOUBLE_EQ(expert_grads, 4 * (2 * fe * h + fe * h) / tp * e);
  EXPECT_DOUBLE_EQ(tp_grads, 0);
  EXPECT_DOUBLE_EQ(loads, E * 8);  // aux-loss-free balancing: the layer's loads over dp
}

TEST(PlanStepProgram, TensorParallelGradientReductions) {
  // The router's weight gradient is complete on every TP rank (the cpu engine TP-sums
  // the gate-weight gradient in the backward, block.cpp), so MoE layers add no tp
  // gradient reduction. Dense norms need it only with SP.
  const ModelConfig moe = load_model("tiny-moe");
  auto tp_grads = [](const StepProgram& p) {
    int n = 0;
    for (const Op& op : p.ops) n += op.kind == OpKind::grad_all_reduce && op.group == Group::tp;
    return n;
  };
  ParallelSplit s{1, 2, 1, 1, 1, 1, 1, ScheduleKind::one_f_one_b};
  EXPECT_EQ(tp_grads(build_step_program(moe, s, 0)), 0);
  EXPECT_EQ(tp_grads(build_step_program(load_model("tiny-dense"), s, 0)), 0);
  s.sequence_parallel = true;  // every layer's norms + the final norm
  EXPECT_EQ(tp_grads(build_step_program(moe, s, 0)), moe.layers + 1);
  // MLA down projections are replicated over TP: every layer needs it.
  const ModelConfig ds = load_model("deepseek-v3");
  ParallelSplit d{1, 8, 1, 1, 1, 1, 1, ScheduleKind::one_f_one_b};
  EXPECT_EQ(tp_grads(build_step_program(ds, d, 0)), ds.layers);
}

// One model replica's FLOPs of a phase: Σ over stages of its ops' flops, TP-sharded ops
// x tp (every TP rank does a 1/tp share), replicated ops (router, MLA down projections,
// run identically on each TP rank) counted once. Forward + backward == model FLOPs / dp.
double replica_model_flops(const ModelConfig& m, const ParallelSplit& s, Phase phase) {
  RankLayout layout(s);
  double total = 0;
  for (int stage = 0; stage < s.pp; ++stage) {
    const int rank = layout.rank_of({0, 0, stage, 0, 0});
    const StepProgram p = build_step_program(m, s, rank);
    for (const Op& op : p.ops)
      if (op.phase == phase) total += op.tp_sharded ? op.flops * s.tp : op.flops;
  }
  return total;
}

TEST(PlanStepProgram, FlopsMatchAccounting) {
  struct Case {
    const char* model;
    ParallelSplit split;
  };
  using S = ScheduleKind;
  const std::vector<Case> cases = {
      {"tiny-dense", {1, 1, 1, 1, 1, 1, 1, S::one_f_one_b}},
      {"tiny-dense", {2, 2, 2, 1, 1, 4, 1, S::one_f_one_b, true}},
      {"tiny-dense", {1, 1, 2, 1, 2, 4, 2, S::interleaved}},
      {"tiny-dense", {2, 2, 1, 1, 1, 3, 1, S::afab}},
      {"tiny-moe", {4, 1, 1, 4, 1, 2, 1, S::one_f_one_b}},
      {"tiny-moe", {2, 2, 2, 2, 1, 2, 1, S::one_f_one_b, true, true}},
      {"deepseek-v3", {8, 8, 4, 8, 1, 8, 1, S::one_f_one_b, true}},
      {"mixtral-8x7b", {8, 4, 4, 8, 2, 8, 1, S::interleaved}},
      {"tiny-dense", {2, 2, 2, 1, 1, 4, 1, S::zb_h1, true}},
      {"deepseek-v3", {8, 8, 4, 8, 1, 8, 1, S::zb_h1, true}},
  };
  for (const auto& c : cases) {
    const ModelConfig m = load_model(c.model);
    const double sequences_per_replica = c.split.microbatches * c.split.micro_batch_size;
    const double want = model_flops_per_step(m, sequences_per_replica);
    const double got =
        replica_model_flops(m, c.split, Phase::forward) + replica_model_flops(m, c.split, Phase::backward);
    EXPECT_NEAR(got / want, 1.0, 1e-12) << c.model << " " << describe(c.split);
  }
}

TEST(PlanStepProgram, RecomputeFlopsMatchAccounting) {
  const ModelConfig m = load_model("tiny-dense");
  for (auto rc : {Recompute::selective, Recompute::full}) {
    ParallelSplit s{1, 2, 2, 1, 1, 2, 1, ScheduleKind::one_f_one_b};
    s.recompute = rc;
    const double tokens = 2.0 * m.seq_len;
    EXPECT_NEAR(replica_model_flops(m, s, Phase::recompute) / (recompute_flops_per_token(m, rc) * tokens), 1.0, 1e-12)
        << to_string(rc);
  }
}

TEST(PlanStepProgram, WaitsPointBackwardsAcrossStreams) {
  const ModelConfig m = load_model("tiny-moe");
  StepProgramOptions o;
  for (bool overlap : {false, true}) {
    o.overlap_grad_reduce = overlap;
    ParallelSplit s{2, 2, 2, 2, 1, 4, 1, ScheduleKind::one_f_one_b, true, true};
    for (int rank = 0; rank < 8; ++rank) {
      const StepProgram p = build_step_program(m, s, rank, o);
      int exchanges = 0;
      for (int i = 0; i < static_cast<int>(p.ops.size()); ++i) {
        const Op& op = p.ops[i];
        EXPECT_EQ(is_comm(op.kind), op.group != Group::none) << to_string(op.kind);
        EXPECT_EQ(is_comm(op.kind), op.stream != Stream::compute) << to_string(op.kind);
        for (int w : op.waits) {
          if (w < 0) continue;
          ASSERT_LT(w, i);
          EXPECT_NE(p.ops[w].stream, op.stream) << "op " << i << " " << to_string(op.kind);
        }
        if (op.kind == OpKind::pp_exchange) {
          ++exchanges;
          ASSERT_GE(op.action, 0);
          EXPECT_EQ(p.actions[op.action].kind, ActionKind::exchange);
        }
      }
      int want = 0;
      for (const auto& a : p.actions) want += a.kind == ActionKind::exchange;
      EXPECT_EQ(exchanges, want);
      EXPECT_EQ(p.ops.back().kind, OpKind::param_all_gather);  // zero1 ends with the gathers
    }
  }
}

TEST(PlanStepProgram, ForwardConsumesTheReceivedActivation) {
  const ModelConfig m = load_model("tiny-dense");
  const StepProgram p = build_step_program(m, {1, 1, 2, 1, 1, 2, 1, ScheduleKind::one_f_one_b}, 1);
  // Stage 1's first compute op of each forward waits for the exchange that received it.
  for (int i = 0; i < static_cast<int>(p.ops.size()); ++i) {
    const Op& op = p.ops[i];
    if (op.kind != OpKind::attn_norm || op.phase != Phase::forward || op.layer != 2) continue;
    ASSERT_GE(op.waits[0], 0);
    const Op& x = p.ops[op.waits[0]];
    EXPECT_EQ(x.kind, OpKind::pp_exchange);
    ASSERT_TRUE(p.actions[x.action].recv.has_value());
    EXPECT_EQ(p.actions[x.action].recv->microbatch, op.microbatch);
  }
}

TEST(PlanStepProgram, ChunkTemplatesMatchTheFullProgram) {
  const ModelConfig m = load_model("tiny-moe");
  for (const ParallelSplit& s :
       {ParallelSplit{2, 2, 2, 2, 2, 4, 1, ScheduleKind::interleaved, true, true, Recompute::full},
        ParallelSplit{2, 2, 2, 2, 1, 4, 1, ScheduleKind::zb_h1, true, true, Recompute::full}}) {
    RankLayout layout(s);
    for (int stage = 0; stage < s.pp; ++stage) {
      const StepProgram p = build_step_program(m, s, layout.rank_of({1, 1, stage, 1, 0}));
      for (int i = 0; i < static_cast<int>(p.actions.size()); ++i) {
        const PipeAction& a = p.actions[i];
        if (a.kind == ActionKind::exchange) continue;
        const Pass pass = a.kind == ActionKind::forward    ? Pass::forward
                          : a.kind == ActionKind::backward ? Pass::backward
                                                           : Pass::weight;
        const std::vector<Op> t = build_chunk_ops(m, s, stage, a.chunk, pass);
        std::vector<const Op*> full;
        for (const Op& op : p.ops)
          if (op.action == i) full.push_back(&op);
        ASSERT_EQ(full.size(), t.size()) << "stage " << stage << " action " << i;
        for (size_t k = 0; k < t.size(); ++k) {
          EXPECT_EQ(full[k]->kind, t[k].kind);
          EXPECT_EQ(full[k]->group, t[k].group);
          EXPECT_EQ(full[k]->layer, t[k].layer);
          EXPECT_DOUBLE_EQ(full[k]->flops, t[k].flops);
          EXPECT_DOUBLE_EQ(full[k]->bytes, t[k].bytes);
        }
      }
      // The tail: everything after the last action's ops.
      const std::vector<Op> g = build_gradient_ops(m, s, stage);
      ASSERT_GE(p.ops.size(), g.size());
      for (size_t k = 0; k < g.size(); ++k) {
        const Op& full = p.ops[p.ops.size() - g.size() + k];
        EXPECT_EQ(full.kind, g[k].kind);
        EXPECT_DOUBLE_EQ(full.bytes, g[k].bytes);
        EXPECT_EQ(full.action, -1);
      }
    }
  }
}

// A split backward (zb-h1): B keeps every op of the backward with each GEMM at its
// input-gradient half, W holds only the weight-gradient halves (no communication, no
// attention core, no norms), and B + W is the unsplit backward's FLOPs.
TEST(PlanStepProgram, ZeroBubbleSplitsEveryGemmIntoBAndW) {
  const ModelConfig m = load_model("tiny-moe");
  ParallelSplit one{2, 2, 2, 2, 1, 4, 1, ScheduleKind::one_f_one_b, true};
  ParallelSplit zb = one;
  zb.schedule = ScheduleKind::zb_h1;
  for (int stage = 0; stage < 2; ++stage) {
    const std::vector<Op> whole = build_chunk_ops(m, one, stage, 0, Pass::backward);
    const std::vector<Op> b = build_chunk_ops(m, zb, stage, 0, Pass::backward);
    const std::vector<Op> w = build_chunk_ops(m, zb, stage, 0, Pass::weight);
    ASSERT_EQ(b.size(), whole.size());
    double flops_whole = 0, flops_split = 0;
    int gemms = 0;
    for (size_t k = 0; k < whole.size(); ++k) {
      EXPECT_EQ(b[k].kind, whole[k].kind);
      const bool gemm = to_string(whole[k].kind).ends_with("_gemm");
      gemms += gemm;
      EXPECT_DOUBLE_EQ(b[k].flops, gemm ? whole[k].flops / 2 : whole[k].flops) << to_string(whole[k].kind);
      // The shape says which products each runs (the pricer tiles each pass's output).
      EXPECT_EQ(whole[k].gemm.passes, gemm ? gemm_input_grad | gemm_weight_grad : 0);
      EXPECT_EQ(b[k].gemm.passes, gemm ? gemm_input_grad : 0);
      flops_whole += whole[k].flops;
      flops_split += b[k].flops;
    }
    ASSERT_EQ(static_cast<int>(w.size()), gemms) << "stage " << stage;
    for (const Op& op : w) {
      EXPECT_TRUE(to_string(op.kind).ends_with("_gemm")) << to_string(op.kind);
      EXPECT_EQ(op.stream, Stream::compute);
      EXPECT_EQ(op.phase, Phase::backward);
      EXPECT_EQ(op.gemm.passes, gemm_weight_grad);
      flops_split += op.flops;
    }
    EXPECT_NEAR(flops_split / flops_whole, 1.0, 1e-12);
  }
  EXPECT_THROW(build_chunk_ops(m, one, 0, 0, Pass::weight), UsageError);
  // ZeRO-2/3 reduce inside the backward: refused with a split one.
  zb.zero = 2;
  EXPECT_THROW(build_step_program(m, zb, 0), UsageError);
}

TEST(PlanStepProgram, GradientBucketsHoldTheRanksParameters) {
  // The dp and expert_dp reductions together move every parameter of the rank once:
  // the same count memory_per_rank() gives (fp32: 4 bytes per gradient element).
  for (const char* name : {"tiny-moe", "deepseek-v3"}) {
    const ModelConfig m = load_model(name);
    const ParallelSplit s{4, 2, 2, 2, 1, 2, 1, ScheduleKind::one_f_one_b, true};
    RankLayout layout(s);
    for (int stage = 0; stage < s.pp; ++stage) {
      double dense = 0, expert = 0;
      for (const Op& op : build_step_program(m, s, layout.rank_of({0, 0, stage, 0, 0})).ops) {
        if (op.kind != OpKind::grad_all_reduce) continue;
        if (op.group == Group::dp) dense += op.bytes / 4;
        if (op.group == Group::expert_dp) expert += op.bytes / 4;
      }
      const RankMemory r = memory_per_rank(m, s, fp32_adam(), stage);
      EXPECT_NEAR(dense + expert, r.params, 1e-6 * r.params) << name << " stage " << stage;
      EXPECT_NEAR(expert, r.expert_params, 1e-6 * r.params) << name << " stage " << stage;
    }
  }
}

TEST(PlanStepProgram, GeneratesATrillionParameterStageInMilliseconds) {
  const ModelConfig m = load_model("kimi-k2");
  // 16,384 GPUs: tp 8, pp 16 (61 layers: uneven stages), dp 128 with ep 64, 128 microbatches.
  ParallelSplit s{128, 8, 16, 64, 1, 128, 1, ScheduleKind::one_f_one_b, true, true, Recompute::selective};
  const PipelineSchedule sched = build_schedule(s);
  const auto t0 = std::chrono::steady_clock::now();
  const StepProgram p = build_step_program(m, s, sched, 8 * 128 * 7, {});
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("kimi-k2 stage 7 of 16, 128 microbatches: %zu ops in %.2f ms\n", p.ops.size(), ms);
  EXPECT_GT(p.ops.size(), 10000u);
  EXPECT_LT(ms, 250.0);
}

}  // namespace
}  // namespace ibt::models
