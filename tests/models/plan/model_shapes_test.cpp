// Model shapes in the plan: replicated KV heads (tp > kv_heads) and parallel
// attention+MLP blocks (parallel_block) in the split rules, the parameter and memory
// accounting, and the step program's ops (the tp_kv gradient sum; one TP reduction
// per layer and pass for a parallel block). The engine side: engine_conformance_kv_*
// and engine_conformance_parallel_* (tests/models/CMakeLists.txt) and
// engine_activation_memory_test.cpp.
#include <gtest/gtest.h>

#include <map>

#include "core/errors.hpp"
#include "models/plan/accounting.hpp"
#include "models/plan/model_file.hpp"
#include "models/plan/parallel_split.hpp"
#include "models/plan/rank_groups.hpp"
#include "models/plan/step_program.hpp"

namespace ibt::models {
namespace {

ParallelSplit tp_split(int tp, bool sp = false) {
  ParallelSplit s;
  s.tp = tp;
  s.sequence_parallel = sp;
  return s;
}

// Ops of one kind in layer `layer`'s forward (or backward) of rank 0's program.
int count_ops(const StepProgram& p, OpKind kind, Phase phase, int layer) {
  int n = 0;
  for (const Op& op : p.ops) n += op.kind == kind && op.phase == phase && op.layer == layer;
  return n;
}

TEST(PlanModelShapes, ReplicatedKvHeadsAreFoundBySearch) {
  ModelConfig m = load_model("tiny-dense");  // 4 heads, 2 KV heads
  EXPECT_EQ(m.kv_replicas(2), 1);
  EXPECT_EQ(m.kv_replicas(4), 2);
  EXPECT_EQ(m.kv_heads_per_rank(2), 1);
  EXPECT_EQ(m.kv_heads_per_rank(4), 1);
  m.kv_heads = 1;  // MQA: every tp > 1 replicates
  EXPECT_EQ(m.kv_replicas(4), 4);
  SplitSearch q;
  q.schedules = {ScheduleKind::one_f_one_b};
  bool tp4 = false;
  for (const ParallelSplit& s : enumerate_splits(m, 4, q)) tp4 |= s.tp == 4;
  EXPECT_TRUE(tp4) << "tp 4 with one KV head must be searched (the head replicated 4 times)";
}

// tiny-dense (h 64, 4 heads of 16, 2 KV heads, SwiGLU f 128, vocab 256) at tp4: each
// rank holds one query head and one whole KV head (each KV head on 2 ranks).
TEST(PlanModelShapes, ReplicatedKvHeadsCountWholeHeadsPerRank) {
  const ModelConfig m = load_model("tiny-dense");
  const ParamCounts c = count_parameters(m);
  EXPECT_DOUBLE_EQ(c.attention_kv_per_layer, 2.0 * 64 * 2 * 16);
  // Wq, Wo: 2*64*64/4; Wk, Wv: one head each, 2*16*64 (not 2*2*16*64/4 = 1024).
  EXPECT_DOUBLE_EQ(attention_params_per_rank(m, c, 4), 2048.0 + 2048.0);
  EXPECT_DOUBLE_EQ(attention_params_per_rank(m, c, 2), c.attention_per_layer / 2);  // split, no copies
  const double layer = 4096.0 + 2 * 64 + 3.0 * 64 * 128 / 4;                        // attention, 2 RMSNorms, MLP
  const double want = 256.0 * 64 / 4 * 2 + 64 + 4 * layer;  // embedding, head, final norm, layers
  EXPECT_DOUBLE_EQ(memory_per_rank(m, tp_split(4), fp32_adam(), 0).params, want);
  // K and V activations: one head each per rank (2*16 per token), whole on every rank.
  const double tokens = m.seq_len;
  const double elements = 4 * 64 + 2 * 16 + (2.0 * 64 + 3 * 128 + 4 * 32) / 4;  // norms, K/V, Q+ctx+MLP+probs
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, tp_split(4), fp32_adam(), 0), tokens * (elements * 4 + 2 * 4));
}

TEST(PlanModelShapes, ReplicatedKvGradientsAreSummedOverTheirCopies) {
  const ModelConfig m = load_model("tiny-dense");
  const RankLayout layout(tp_split(4), m.kv_replicas(4));
  EXPECT_EQ(layout.group_size(Group::tp_kv), 2);
  EXPECT_EQ(layout.members(Group::tp_kv, 3), (std::vector<int>{2, 3}));  // ranks 2, 3 hold KV head 1
  const StepProgram p = build_step_program(m, tp_split(4), 0);
  int sums = 0;
  for (const Op& op : p.ops)
    if (op.group == Group::tp_kv) {
      ++sums;
      EXPECT_EQ(op.kind, OpKind::grad_all_reduce);
      EXPECT_DOUBLE_EQ(op.bytes, 2.0 * 16 * 64 * 4);  // one head's Wk + Wv, fp32
    }
  EXPECT_EQ(sums, m.layers);  // one per layer's bucket
  for (const Op& op : build_step_program(m, tp_split(2), 0).ops) EXPECT_NE(op.group, Group::tp_kv);
  // The QKV GEMM computes one query head and the whole replicated K/V head.
  for (const Op& op : p.ops)
    if (op.kind == OpKind::qkv_gemm && op.phase == Phase::forward) {
      EXPECT_DOUBLE_EQ(op.flops, 2.0 * m.seq_len * 64 * (1 + 2) * 16);
      break;
    }
}

TEST(PlanModelShapes, ParallelBlockFromTheModelFile) {
  const std::string base =
      R"({"name": "p", "source": "test", "layers": 2, "hidden": 64, "heads": 4, "ffn_hidden": 128,
          "vocab": 256, "seq_len": 32)";
  EXPECT_FALSE(parse_model(base + "}", "t").parallel_block);
  EXPECT_TRUE(parse_model(base + R"(, "parallel_block": true})", "t").parallel_block);
  try {
    parse_model(base + R"(, "parallel_block": 1})", "t");
    ADD_FAILURE() << "a non-boolean parallel_block must be refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("parallel_block"), std::string::npos) << e.what();
  }
}

TEST(PlanModelShapes, ParallelBlockHasOneNormAndOneTpReductionPerPass) {
  ModelConfig seq = load_model("tiny-dense");
  ModelConfig par = seq;
  par.parallel_block = true;
  EXPECT_DOUBLE_EQ(count_parameters(seq).total - count_parameters(par).total, seq.layers * 64.0);  // one RMSNorm less
  // Activations: one norm's input and output (2h) and its rstd instead of two.
  const double tokens = seq.seq_len;
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(seq, tp_split(1), fp32_adam()) -
                       activation_bytes_per_layer(par, tp_split(1), fp32_adam()),
                   tokens * (2 * 64 * 4 + 4));
  for (bool sp : {false, true}) {
    const StepProgram s = build_step_program(seq, tp_split(2, sp), 0);
    const StepProgram p = build_step_program(par, tp_split(2, sp), 0);
    const OpKind reduce = sp ? OpKind::sp_reduce_scatter : OpKind::tp_all_reduce;
    for (Phase ph : {Phase::forward, Phase::backward}) {
      EXPECT_EQ(count_ops(s, reduce, ph, 1), 2) << "sp " << sp;
      EXPECT_EQ(count_ops(p, reduce, ph, 1), 1) << "sp " << sp;
      EXPECT_EQ(count_ops(p, OpKind::mlp_norm, ph, 1), 0);
      EXPECT_EQ(count_ops(p, OpKind::attn_norm, ph, 1), 1);
      if (sp) {
        EXPECT_EQ(count_ops(p, OpKind::sp_all_gather, ph, 1), 1);
      }
    }
    // The same GEMM and attention FLOPs: only the norm and the collectives differ.
    std::map<OpKind, double> fs, fp;
    for (const Op& op : s.ops) fs[op.kind] += op.flops;
    for (const Op& op : p.ops) fp[op.kind] += op.flops;
    for (OpKind k :
         {OpKind::qkv_gemm, OpKind::attention_core, OpKind::out_proj_gemm, OpKind::mlp_up_gemm, OpKind::mlp_down_gemm})
      EXPECT_DOUBLE_EQ(fs[k], fp[k]);
  }
}

// Model FLOPs identity (step_program.hpp) for a parallel block: the ops of one replica,
// TP-sharded ones times tp, give accounting's model FLOPs.
TEST(PlanModelShapes, ParallelBlockFlopsMatchAccounting) {
  ModelConfig m = load_model("tiny-moe");
  m.parallel_block = true;
  ParallelSplit s = tp_split(2, true);
  s.pp = 2;
  s.microbatches = 2;
  const RankLayout layout(s);
  double total = 0;
  for (int stage = 0; stage < s.pp; ++stage) {
    RankCoord rc;
    rc.pp = stage;
    for (const Op& op : build_step_program(m, s, layout.rank_of(rc)).ops)
      if (op.phase == Phase::forward || op.phase == Phase::backward)
        total += op.tp_sharded ? op.flops * s.tp : op.flops;
  }
  EXPECT_NEAR(total / model_flops_per_step(m, s.microbatches), 1.0, 1e-12);
}

}  // namespace
}  // namespace ibt::models
