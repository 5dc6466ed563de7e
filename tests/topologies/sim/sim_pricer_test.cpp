// The framework choices' costs priced by hand (sim_pricer.hpp states them): TP overlap,
// FP8 GEMMs, parallel attention+MLP blocks, replicated KV heads, a segmented job's EP groups,
// eager element-wise kernels.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/errors.hpp"
#include "models/plan/model_file.hpp"
#include "topologies/hardware/collective_model.hpp"
#include "topologies/projection/projection.hpp"
#include "topologies/sim/sim_pricer.hpp"

namespace ibt::topo {
namespace {

using models::OpKind;

TEST(Pricer, TensorParallelOverlapHidesTheCollectiveBehindTheAdjacentGemm) {
  const auto m = models::load_model("llama3-70b");
  Topology t = load_topology("dgx-h100");
  models::ParallelSplit s;
  s.tp = 8;
  s.sequence_parallel = true;
  models::StepProgram none;
  models::Op ag;
  ag.kind = OpKind::sp_all_gather;
  ag.group = models::Group::tp;
  ag.phase = models::Phase::forward;
  ag.bytes = 8192.0 * m.hidden * 2;  // one 8192-token microbatch, bf16
  TopologyPricer plain(t, s, "bf16");
  const double comm = plain.op_us(none, ag);
  TopologyPricer overlapped(t, s, "bf16");
  overlapped.set_tp_comm_overlap(m, 2);
  const double gemm_us = 2.0 * 8192 * m.hidden * m.hidden / s.tp / (989.5e6 * t.model.gemm_efficiency.get());
  EXPECT_NEAR(overlapped.op_us(none, ag), std::max(comm / s.tp, comm - gemm_us), 1e-9 * comm);
  EXPECT_LT(overlapped.op_us(none, ag), comm);
  // Without sequence parallelism Megatron-Core does not overlap the TP all-reduce.
  models::Op ar = ag;
  ar.kind = OpKind::tp_all_reduce;
  EXPECT_DOUBLE_EQ(overlapped.op_us(none, ar), plain.op_us(none, ar));
}

TEST(Pricer, Fp8GemmsRunAtTheFp8PeakAndPayTheirCasts) {
  Topology t = load_topology("dgx-h100");
  t.model.op_overhead_us.value = 0;
  models::ParallelSplit s;
  models::StepProgram none;
  models::Op g;
  g.kind = OpKind::mlp_up_gemm;
  g.flops = 2.0 * 8192 * 8192 * 28672;
  g.bytes = 2.0 * (8192.0 * 8192 + 8192.0 * 28672 + 8192.0 * 28672);
  TopologyPricer bf16(t, s, "bf16");
  TopologyPricer fp8(t, s, "bf16");
  fp8.set_fp8_gemms();
  const double rate8 = 1979e6 * t.model.gemm_efficiency.get(), bw = 3350e3 * 0.8;  // FLOP and bytes per us
  EXPECT_NEAR(fp8.op_us(none, g), std::max(g.flops / rate8, g.bytes / bw) + 1.5 * g.bytes / bw, 1e-9 * g.flops / rate8);
  EXPECT_LT(fp8.op_us(none, g), bf16.op_us(none, g));
  // Attention stays at the bf16 rate.
  models::Op a = g;
  a.kind = OpKind::attention_core;
  EXPECT_DOUBLE_EQ(fp8.op_us(none, a), bf16.op_us(none, a));
  // A device without an fp8 peak cannot price fp8 GEMMs.
  // A pricer keeps a reference to its topology: the topologies outlive them.
  const Topology v5p_topology = load_topology("tpu-v5p"), cpu_topology = load_topology("local-cpu");
  TopologyPricer v5p(v5p_topology, s, "bf16");
  EXPECT_NO_THROW(v5p.set_fp8_gemms());  // v5p lists fp8 at the bf16 rate
  TopologyPricer cpu(cpu_topology, s, "fp32");
  EXPECT_THROW(cpu.set_fp8_gemms(), UsageError);
}

// Parallel attention+MLP blocks: one TP reduction per layer and pass instead of two, so
// at tp8 with SP the priced TP collectives take about half the time (the GEMMs are the same).
TEST(Projection, ParallelBlockHalvesTheTensorParallelCollectives) {
  models::ModelConfig par = models::load_model("gpt-j-6b");
  models::ModelConfig seq = par;
  seq.parallel_block = false;
  const Topology t = load_topology("dgx-h100");
  models::ParallelSplit s;
  s.tp = 8;
  s.dp = 2;
  s.microbatches = 4;
  s.sequence_parallel = true;
  ProjectionOptions o;
  o.keep_sim = true;
  const Projection a = project(par, t, s, o), b = project(seq, t, s, o);
  ASSERT_TRUE(a.feasible && b.feasible) << a.reason << b.reason;
  const auto tp_us = [](const Projection& p) {
    double us = 0;
    for (auto k : {models::OpKind::sp_all_gather, models::OpKind::sp_reduce_scatter})
      us += p.sim.stages.at(0).op_us[static_cast<int>(k)];
    return us;
  };
  EXPECT_LT(a.step_s, b.step_s);
  // Per layer 2 instead of 4 SP collectives each way; the head's and embedding's stay.
  EXPECT_NEAR(tp_us(a) / tp_us(b), 0.5, 0.05);
  EXPECT_DOUBLE_EQ(a.sim.stages.at(0).op_us[static_cast<int>(models::OpKind::qkv_gemm)],
                   b.sim.stages.at(0).op_us[static_cast<int>(models::OpKind::qkv_gemm)]);
}

// Replicated KV heads: Llama 3 70B (8 KV heads) at tp16 on one NVL72 domain is a valid,
// priced split; the tp_kv gradient sum is a 2-rank group inside the domain.
TEST(Projection, ReplicatedKvHeadsArePricedWithTheirGradientSum) {
  const auto m = models::load_model("llama3-70b");
  const Topology t = load_topology("gb200-nvl72");
  models::ParallelSplit s;
  s.tp = 16;
  s.dp = 2;
  s.microbatches = 4;
  s.sequence_parallel = true;
  ProjectionOptions o;
  o.keep_sim = true;
  const Projection p = project(m, t, s, o);
  ASSERT_TRUE(p.priced) << p.reason;
  TopologyPricer pricer(t, s, "bf16");
  pricer.set_kv_replicas(m.kv_replicas(s.tp));
  EXPECT_EQ(pricer.placement(models::Group::tp_kv).n, 2);
  EXPECT_EQ(pricer.placement(models::Group::tp_kv).per_domain, 2);
  const auto prog = models::build_step_program(m, s, 0, program_options(o));
  int sums = 0;
  for (const auto& op : prog.ops) sums += op.group == models::Group::tp_kv;
  EXPECT_EQ(sums, m.layers);
}

// DeepSeek-V3 at EP32 on 256 GB200 GPUs (Megatron-Bridge's published split): the job
// is placed 64 GPUs per rack (Topology::placement_domain), so every EP group is inside
// one NVLink domain and the all-to-all never uses the racks' NICs; filling racks to 72
// put the group at ranks 64..95 across two racks and priced its all-to-all on them.
TEST(TopologyPricer, EpGroupsOfASegmentedJobStayInsideARack) {
  const Topology t = load_topology("gb200-nvl72");
  models::ParallelSplit s;
  s.pp = 8;
  s.vpp = 4;
  s.dp = 32;
  s.ep = 32;
  s.microbatches = 128;
  s.schedule = models::ScheduleKind::interleaved;
  TopologyPricer pricer(t, s, "bf16");
  EXPECT_TRUE(pricer.placement(models::Group::ep).intra());
  EXPECT_EQ(pricer.placement(models::Group::ep).per_domain, 32);
  // The pipeline's stages are 32 ranks apart: two per rack, so stage 1 -> 2 crosses.
  EXPECT_EQ(pricer.placement(models::Group::pp).per_domain, 2);
}

// Eager element-wise kernels (eager_elementwise.hpp): a block's norm op pays the bytes the
// header counts, per token of the op, at memory bandwidth; other ops pay nothing more.
// The figures below are the header's table written out for llama2-7b (hidden 4096, 32
// heads of 128, MHA, SwiGLU ffn 11008) in bf16 (b = 2, fp32 4).
TEST(Pricer, EagerElementwiseKernelsAddTheirBytesToTheBlockNorms) {
  const auto m = models::load_model("llama2-7b");
  const Topology t = load_topology("dgx-h100");
  models::ParallelSplit s;
  models::StepProgram none;
  const double tokens = 8192,
               bytes_per_us = t.device.memory_bandwidth_GBps.get() * 1e3 * t.model.memory_efficiency.get();
  const auto norm_op = [&](OpKind kind, models::Phase phase, double op_tokens) {
    models::Op op;
    op.kind = kind;
    op.phase = phase;
    op.layer = 3;
    op.bytes = 2.0 * op_tokens * m.hidden * 2;  // step_emit.cpp's fused norm
    return op;
  };
  // Per token: norm beyond its fused pass + residual add, per hidden element; rotary on q
  // and k (20 B per element); SwiGLU 10 B forward, 18 B backward per ffn element.
  const double attn_fwd = 4096.0 * (32 + 6) + 2 * 4096.0 * 20, attn_bwd = 4096.0 * (60 + 6) + 2 * 4096.0 * 20;
  const double mlp_fwd = 4096.0 * (32 + 6) + 11008.0 * 10, mlp_bwd = 4096.0 * (60 + 6) + 11008.0 * 18;
  const auto extra_us = [&](const models::ParallelSplit& split, const models::Op& op) {
    TopologyPricer fused(t, split, "bf16"), eager(t, split, "bf16");
    eager.set_eager_elementwise(m, 2);
    return eager.op_us(none, op) - fused.op_us(none, op);
  };
  using models::Phase;
  EXPECT_NEAR(extra_us(s, norm_op(OpKind::attn_norm, Phase::forward, tokens)), tokens * attn_fwd / bytes_per_us, 1e-6);
  EXPECT_NEAR(extra_us(s, norm_op(OpKind::attn_norm, Phase::backward, tokens)), tokens * attn_bwd / bytes_per_us, 1e-6);
  EXPECT_NEAR(extra_us(s, norm_op(OpKind::mlp_norm, Phase::forward, tokens)), tokens * mlp_fwd / bytes_per_us, 1e-6);
  EXPECT_NEAR(extra_us(s, norm_op(OpKind::mlp_norm, Phase::backward, tokens)), tokens * mlp_bwd / bytes_per_us, 1e-6);
  // Recompute replays the forward's kernels.
  EXPECT_NEAR(extra_us(s, norm_op(OpKind::mlp_norm, Phase::recompute, tokens)), tokens * mlp_fwd / bytes_per_us, 1e-6);
  // TP2 without sequence parallelism: the norm runs on every token, rotary and SwiGLU on
  // half the width; with it the norm op counts half the tokens and the same rank does
  // the halves at full width per norm token.
  models::ParallelSplit tp2 = s;
  tp2.tp = 2;
  EXPECT_NEAR(extra_us(tp2, norm_op(OpKind::mlp_norm, Phase::forward, tokens)),
              tokens * (4096.0 * 38 + 11008.0 * 10 / 2) / bytes_per_us, 1e-6);
  tp2.sequence_parallel = true;
  EXPECT_NEAR(extra_us(tp2, norm_op(OpKind::mlp_norm, Phase::forward, tokens / 2)),
              tokens / 2 * (4096.0 * 38 + 11008.0 * 10) / bytes_per_us, 1e-6);
  // The final norm pays the norm's chain only; a GEMM nothing.
  EXPECT_NEAR(extra_us(s, norm_op(OpKind::final_norm, Phase::forward, tokens)), tokens * 4096.0 * 32 / bytes_per_us,
              1e-6);
  models::Op gemm = norm_op(OpKind::mlp_down_gemm, Phase::forward, tokens);
  gemm.flops = 2.0 * tokens * m.hidden * m.ffn_hidden;
  EXPECT_DOUBLE_EQ(extra_us(s, gemm), 0);
  // GQA (llama3-8b: 8 KV heads for 32): repeat_kv writes k and v at 32 heads from 8.
  const auto gqa = models::load_model("llama3-8b");
  const EagerElementwise e = eager_elementwise_bytes(gqa, s, 2);
  EXPECT_DOUBLE_EQ(e.attention_forward, 4096.0 * 38 + (32 + 8) * 128.0 * 20 + 2 * (8 + 32) * 128.0 * 2);
}

}  // namespace
}  // namespace ibt::topo
