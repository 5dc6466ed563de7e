// FLOP, parameter and memory accounting against values computed by hand for the tiny
// models (arithmetic in the comments), Megatron's closed forms, and published totals.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "models/plan/accounting.hpp"
#include "models/plan/model_file.hpp"
#include "models/plan/schedule.hpp"

namespace ibt::models {
namespace {

// tiny-dense: L=4, h=64, H=4 heads, G=2 kv heads, d=16, F=128 (SwiGLU), V=256, s=32,
// RMSNorm, untied head.
TEST(PlanAccounting, TinyDenseParametersByHand) {
  const ParamCounts c = count_parameters(load_model("tiny-dense"));
  EXPECT_EQ(c.attention_per_layer, 12288);  // 64*(4*16 + 2*2*16) + 4*16*64 = 8192 + 4096
  EXPECT_EQ(c.norms_per_layer, 128);        // 2 RMSNorms of 64
  EXPECT_EQ(c.dense_mlp_per_layer, 24576);  // 3 * 64 * 128
  EXPECT_EQ(c.embedding, 16384);            // 256 * 64
  EXPECT_EQ(c.lm_head, 16384);
  EXPECT_EQ(c.final_norm, 64);
  EXPECT_EQ(c.total, 180800);  // 4*(12288+128+24576) + 2*16384 + 64
  EXPECT_EQ(c.active, 180800);
  EXPECT_EQ(c.matmul_active, 163840);  // 4*(12288+24576) + 16384 (head)
}

TEST(PlanAccounting, TinyDenseFlopsByHand) {
  const ModelConfig m = load_model("tiny-dense");
  // Attention core, forward, per token: 2 * L * s * H * (d + d) = 2*4*32*4*32.
  EXPECT_EQ(attention_forward_flops_per_token(m), 32768);
  // 6 * 163840 + 3 * 32768; the attention term equals 12 * L * h * s = 98304.
  EXPECT_EQ(model_flops_per_token(m), 1081344);
  // 8 sequences of 32 tokens.
  EXPECT_EQ(model_flops_per_step(m, 8), 1081344.0 * 256);
  EXPECT_EQ(recompute_flops_per_token(m, Recompute::none), 0);
  EXPECT_EQ(recompute_flops_per_token(m, Recompute::selective), 32768);
  // Full: the layers' forward again, 2 * 147456 + 32768 (no LM head).
  EXPECT_EQ(recompute_flops_per_token(m, Recompute::full), 327680);
  EXPECT_EQ(hardware_flops_per_step(m, 8, Recompute::full), (1081344.0 + 327680) * 256);
}

// tiny-moe: as tiny-dense, layer 0 dense, layers 1-3 MoE with 8 experts (top-2),
// 1 shared expert, expert FFN 64.
TEST(PlanAccounting, TinyMoeParametersByHand) {
  const ParamCounts c = count_parameters(load_model("tiny-moe"));
  EXPECT_EQ(c.per_expert, 12288);      // 3 * 64 * 64
  EXPECT_EQ(c.router_per_layer, 512);  // 64 * 8
  EXPECT_EQ(c.shared_per_layer, 12288);
  EXPECT_EQ(c.dense_layers, 1);
  EXPECT_EQ(c.moe_layers, 3);
  // Dense layer 36992; MoE layer 12288 + 128 + 512 + 8*12288 + 12288 = 123520.
  EXPECT_EQ(c.total, 440384);   // 36992 + 3*123520 + 2*16384 + 64
  EXPECT_EQ(c.active, 219200);  // minus 3 layers * 6 unused experts * 12288
  // 4*12288 + 24576 + 3*(512 + 2*12288 + 12288) + 16384
  EXPECT_EQ(c.matmul_active, 202240);
}

// For a GPT block (LayerNorm, GELU MLP of 4h, MHA) ibt's count equals Megatron's
// 72·B·s·l·h²(1 + s/6h + V/12lh) exactly, and 96·(...) with full recompute.
TEST(PlanAccounting, MatchesMegatronFormulaForGpt) {
  const ModelConfig gpt = parse_model(R"({"name": "gpt-test", "source": "test",
      "layers": 6, "hidden": 256, "heads": 8, "ffn_hidden": 1024, "vocab": 1000,
      "seq_len": 512, "norm": "layernorm", "activation": "gelu"})",
                                      "inline");
  const double B = 16;
  EXPECT_DOUBLE_EQ(model_flops_per_step(gpt, B), megatron_model_flops(B, 512, 6, 256, 1000));
  EXPECT_DOUBLE_EQ(hardware_flops_per_step(gpt, B, Recompute::full),
                   megatron_full_recompute_flops(B, 512, 6, 256, 1000));
  // The real GPT-3 shape.
  const ModelConfig g3 = load_model("gpt3-175b");
  EXPECT_DOUBLE_EQ(model_flops_per_step(g3, 1536), megatron_model_flops(1536, 2048, 96, 12288, 50304));
}

TEST(PlanAccounting, PublishedTotalsOfRealShapes) {
  struct Expect {
    const char* name;
    double total, active, rel;
  };
  // Published totals (model cards / papers); our counts omit biases and MTP modules.
  for (const Expect& e :
       {Expect{"gpt3-175b", 175e9, 175e9, 0.01}, Expect{"llama3-8b", 8.03e9, 8.03e9, 0.01},
        Expect{"llama3-70b", 70.6e9, 70.6e9, 0.01}, Expect{"llama3-405b", 405.9e9, 405.9e9, 0.01},
        Expect{"mixtral-8x7b", 46.7e9, 12.9e9, 0.01}, Expect{"deepseek-v3", 671e9, 37e9, 0.02},
        Expect{"kimi-k2", 1.04e12, 32.6e9, 0.02}, Expect{"gpt-j-6b", 6053381344.0, 6053381344.0, 0.001}}) {
    const ParamCounts c = count_parameters(load_model(e.name));
    EXPECT_NEAR(c.total / e.total, 1.0, e.rel) << e.name << " total " << c.total;
    EXPECT_NEAR(c.active / e.active, 1.0, e.rel) << e.name << " active " << c.active;
  }
}

// Memory of tiny-dense at dp2 tp2 pp2, 4 microbatches 1F1B, fp32 (16 bytes/param).
TEST(PlanAccounting, TinyDenseMemoryByHand) {
  const ModelConfig m = load_model("tiny-dense");
  ParallelSplit s{2, 2, 2, 1, 1, 4, 1, ScheduleKind::one_f_one_b};
  // Stage 0: embedding/2 + 2 layers of (12288/2 + 128 + 24576/2) = 8192 + 2*18560.
  RankMemory r0 = memory_per_rank(m, s, fp32_adam(), 0);
  EXPECT_EQ(r0.params, 45312);
  EXPECT_EQ(r0.weights, 45312 * 4);
  EXPECT_EQ(r0.grads, 45312 * 4);
  EXPECT_EQ(r0.optimizer, 45312 * 8);
  // Activations per token (accounting.hpp; fp32, unfused attention, t = 2, no SP):
  // norms 4h = 256 whole rows + 2 rstd; sharded by t: Q 64 + K 32 + V 32 + context 64,
  // probabilities H*s = 128, SwiGLU gate/up/act 3*128 = 384 -> 704/2 = 352.
  // (256 + 352) * 4 B + 2 * 4 B = 2440 B; x s = 32 tokens = 78080 B per layer.
  // Stage 0 holds 2 microbatches x 2 layers.
  EXPECT_EQ(activation_bytes_per_layer(m, s, fp32_adam()), 78080);
  EXPECT_EQ(r0.chunks_in_flight, 2);
  EXPECT_EQ(r0.layers_in_flight, 4);
  EXPECT_EQ(r0.activations, 4 * 78080);
  // Stage 1: head/2 + final norm + 2 layers; one microbatch in flight.
  RankMemory r1 = memory_per_rank(m, s, fp32_adam(), 1);
  EXPECT_EQ(r1.params, 45376);
  EXPECT_EQ(r1.activations, 2 * 78080);
  EXPECT_EQ(peak_memory_per_rank(m, s, fp32_adam()).stage, 0);
  // ZeRO-1 shards the optimizer over dp = 2.
  s.zero = 1;
  EXPECT_EQ(memory_per_rank(m, s, fp32_adam(), 0).optimizer, 45312 * 4);
  // Sequence parallel + selective recompute (scores dropped): norms 256/2 + 2/2 rstd,
  // sharded (192 + 384)/2 = 288 -> (128 + 288) * 4 + 1 * 4 = 1668 B x 32 tokens.
  s.sequence_parallel = true;
  s.recompute = Recompute::selective;
  EXPECT_EQ(activation_bytes_per_layer(m, s, fp32_adam()), 1668 * 32);
  // Full recompute keeps the layer input: h/t = 32 elements x 2 B x 32 tokens.
  s.recompute = Recompute::full;
  EXPECT_EQ(activation_bytes_per_layer(m, s, bf16_mixed_adam()), 2.0 * 2048 / 2);
  // FlashAttention-style engines keep one fp32 log-sum-exp per head instead of the
  // probabilities: (128 + 288) * 2 B + (1 rstd + 4/2 lse) * 4 B = 844 B per token; the
  // fp32 CPU engine keeps the probabilities: (128 + (192 + 128 + 384)/2) * 4 + 4 = 1924 B.
  s.recompute = Recompute::none;
  EXPECT_EQ(activation_bytes_per_layer(m, s, bf16_mixed_adam()), 844 * 32);
  EXPECT_EQ(activation_bytes_per_layer(m, s, fp32_adam()), 1924 * 32);
}

// A GPT block (LayerNorm, GELU 4h, MHA) gives Korthikanti et al. 2022's Table 2 without
// their dropout state: s*b*h*(8 + 24/t + 2*a*s/(h*t)) bytes in 2-byte precision with
// scores kept, plus the LayerNorms' fp32 mean and rstd (2 norms x 2 x 4 B per token).
TEST(PlanAccounting, GptBlockIsKorthikantiWithoutDropout) {
  const ModelConfig m = load_model("gpt3-175b");
  ParallelSplit s{1, 8, 1, 1, 1, 1, 1, ScheduleKind::one_f_one_b};
  Precision bf16_unfused = bf16_mixed_adam();
  bf16_unfused.stores_attention_scores = true;
  const double sq = 2048, h = 12288, a = 96, t = 8;
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, s, bf16_unfused),
                   sq * h * (8 + 24 / t + 2 * a * sq / (h * t)) + sq * 16);
}

// Llama 3 405B at the published split's tp 8 with SP and fused attention: 4h/t norm rows,
// (h + 2*h/16 + h)/t attention, 3 * 3.25h/t SwiGLU = 15.875h/t elements = 31.75*h/t bytes
// per token, plus fp32 (2 rstd + 128 lse)/t values (Korthikanti's figure was 34*h/t).
TEST(PlanAccounting, Llama405bLayerActivations) {
  const ModelConfig m = load_model("llama3-405b");
  ParallelSplit s{64, 8, 16, 1, 2, 32, 1, ScheduleKind::interleaved};
  s.sequence_parallel = true;
  const double sq = 8192, h = 16384;
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, s, bf16_mixed_adam()), sq * (31.75 * h / 8 + 4.0 * 130 / 8));
}

// tiny-moe: layer 0 dense, layers 1-3 MoE (E 8, top_k 2, 1 shared, f_e 64); tp 1, bf16,
// fused attention. Dense: 256 norms + 192 attention + 384 SwiGLU = 832 elements x 2 B
// + (2 rstd + 4 lse) x 4 B = 1688 B per token. MoE: 256 + 2*64 dispatched rows + 2*64
// expert outputs + 192 + (2 + 1) x 3 x 64 = 1280 x 2 B + (2 rstd + 8 logits + 2 gate
// weights + 4 lse) x 4 B = 2624 B per token. With tp 2 and SP the norm rows and expert
// outputs halve, the dispatched rows do not: (384/2 + 128 + (192 + 576)/2) x 2 B +
// (12/2 + 4/2) x 4 B = 1440 B per token.
TEST(PlanAccounting, MoeLayerActivationsDifferFromDense) {
  const ModelConfig m = load_model("tiny-moe");
  ParallelSplit s{4, 1, 1, 4, 1, 1, 1, ScheduleKind::one_f_one_b};
  EXPECT_EQ(activation_bytes_per_layer(m, s, bf16_mixed_adam(), 0), 1688 * 32);
  EXPECT_EQ(activation_bytes_per_layer(m, s, bf16_mixed_adam(), 1), 2624 * 32);
  // One stage, one microbatch in flight: every layer once.
  EXPECT_EQ(memory_per_rank(m, s, bf16_mixed_adam(), 0).activations, (1688 + 3 * 2624) * 32);
  s.dp = 2;
  s.tp = 2;
  s.ep = 2;
  s.sequence_parallel = true;
  EXPECT_EQ(activation_bytes_per_layer(m, s, bf16_mixed_adam(), 1), 1440 * 32);
}

TEST(PlanAccounting, MoeMemoryShardsExpertsOverEp) {
  const ModelConfig m = load_model("tiny-moe");
  ParallelSplit s{4, 1, 1, 4, 1, 1, 1, ScheduleKind::one_f_one_b};
  s.zero = 1;
  const RankMemory r = memory_per_rank(m, s, bf16_mixed_adam(), 0);
  // 3 MoE layers x 2 local experts x 12288.
  EXPECT_EQ(r.expert_params, 73728);
  // Everything else: 440384 - 3*8*12288 = 145472 non-expert parameters.
  EXPECT_EQ(r.params, 145472 + 73728);
  // ZeRO-1: non-expert optimizer over dp 4, expert optimizer over expert_dp 1.
  EXPECT_DOUBLE_EQ(r.optimizer, 12.0 * (145472.0 / 4 + 73728.0));
}

// Searches check memory against the schedules of build_compute_orders(), whose
// held_peaks replace the walk of every stage's compute order: every field equals the
// walk's (build_schedule() has no held_peaks) bit for bit, on dense and MoE models,
// uneven stages, every schedule kind, recompute, CP and SP, and on precisions whose
// activation bytes are not whole (where the peaks must fall back to the walk).
TEST(PlanAccounting, HeldPeaksGiveTheWalksMemory) {
  struct Case {
    const char* model;
    ScheduleKind kind;
    int pp, vpp, m, tp, cp;
    Recompute recompute;
  };
  const std::vector<Case> cases = {
      {"tiny-dense", ScheduleKind::one_f_one_b, 2, 1, 4, 1, 1, Recompute::none},
      {"tiny-moe", ScheduleKind::zb_h1, 2, 1, 6, 1, 1, Recompute::selective},
      {"deepseek-v3", ScheduleKind::one_f_one_b, 8, 1, 64, 4, 2, Recompute::none},  // 61 layers: uneven
      {"deepseek-v3", ScheduleKind::interleaved, 4, 3, 32, 8, 1, Recompute::selective},
      {"deepseek-v3", ScheduleKind::zb_h1, 16, 1, 48, 2, 1, Recompute::full},
      {"llama3-405b", ScheduleKind::interleaved, 8, 4, 64, 8, 2, Recompute::none},  // 126 layers
      {"llama3-405b", ScheduleKind::afab, 6, 1, 12, 4, 1, Recompute::none},
      {"llama3-405b", ScheduleKind::interleaved, 2, 8, 16, 2, 4, Recompute::full},
  };
  const Precision whole = bf16_mixed_adam();
  Precision fractional = whole;
  fractional.activation_bytes = 1.3;  // whole bytes no more: the walk decides
  int exact = 0, walked = 0;
  for (const Case& c : cases) {
    const ModelConfig model = load_model(c.model);
    ParallelSplit s;
    s.schedule = c.kind;
    s.pp = c.pp;
    s.vpp = c.vpp;
    s.microbatches = c.m;
    s.tp = c.tp;
    s.cp = c.cp;
    s.sequence_parallel = c.tp > 1;
    s.recompute = c.recompute;
    const PipelineSchedule full = build_schedule(s), orders = build_compute_orders(s);
    ASSERT_EQ(orders.held_peaks.size(), static_cast<size_t>(c.pp));
    for (const Precision& p : {whole, fractional})
      for (int stage = 0; stage < c.pp; ++stage) {
        const std::string at = std::string(c.model) + " " + describe(s) + " " + std::to_string(p.activation_bytes) +
                               " bytes, stage " + std::to_string(stage);
        const RankMemory walk = memory_per_rank(model, s, p, stage, full);
        const RankMemory peaks = memory_per_rank(model, s, p, stage, orders);
        EXPECT_EQ(peaks.activations, walk.activations) << at;
        EXPECT_EQ(peaks.chunks_in_flight, walk.chunks_in_flight) << at;
        EXPECT_EQ(peaks.layers_in_flight, walk.layers_in_flight) << at;
        EXPECT_EQ(peaks.total(), walk.total()) << at;
        bool whole_bytes = true;  // every chunk's bytes, summed as memory_per_rank sums them
        for (int chunk = 0; chunk < c.vpp; ++chunk) {
          const LayerRange r = stage_layers(model, c.pp * c.vpp, chunk * c.pp + stage);
          double bytes = 0;
          for (int l = r.first; l < r.end(); ++l) bytes += activation_bytes_per_layer(model, s, p, l);
          whole_bytes = whole_bytes && bytes == std::floor(bytes);
        }
        ++(whole_bytes ? exact : walked);
      }
    const RankMemory walk = peak_memory_per_rank(model, s, whole, full);
    const RankMemory peaks = peak_memory_per_rank(model, s, whole, orders);
    EXPECT_EQ(peaks.stage, walk.stage) << c.model << " " << describe(s);
    EXPECT_EQ(peaks.total(), walk.total()) << c.model << " " << describe(s);
  }
  // Both paths were taken: the peaks (whole bytes) and the walk they fall back to.
  EXPECT_GT(exact, 0);
  EXPECT_GT(walked, 0);
}

}  // namespace
}  // namespace ibt::models
