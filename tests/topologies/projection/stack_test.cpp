// Software-stack files (topologies/projection/stack.hpp) and the projection setup that
// applies them with --seq-len (projection_setup.hpp): the shipped files read, the attention
// curve interpolated as documented, bad files refused naming the field, and the effect the
// stacks exist for: MFU falling with sequence length on H100 with PyTorch's FSDP2.
#include <gtest/gtest.h>

#include <string>

#include "core/errors.hpp"
#include "models/plan/model_file.hpp"
#include "topologies/projection/projection.hpp"
#include "topologies/projection/projection_setup.hpp"
#include "topologies/projection/stack.hpp"

namespace ibt::topo {
namespace {

// The message of the UsageError `f` throws ("" when it throws none).
template <typename F>
std::string usage_error(F f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// A valid stack file whose text a test then breaks in one place.
std::string good_stack() {
  return R"({
  "name": "t", "description": "test stack", "framework": "ibt",
  "sources": {"s": "a kernel benchmark"},
  "overlap": {"grad_reduce": {"value": true, "source": "s"}, "tp_comm": {"value": false, "source": "s"},
              "dispatch_overlaps_compute": {"value": true, "source": "s"},
              "fsdp_prefetch_units": {"value": 1, "source": "s"}},
  "generations": [{"name": "hopper", "devices": ["H100"],
    "gemm_efficiency": {"value": 0.7, "source": "s"},
    "attention": {"kernel": "k", "source": "s",
      "causal_work_fraction": {"value": 0.5, "source": "s"}, "backward_work_ratio": {"value": 2.5, "source": "s"},
      "curves": [{"head_dim": 128, "seq_lens": [1024, 4096], "forward_TFLOPs": [200, 400],
                  "backward_TFLOPs": [100, 300]}]}}]
})";
}

std::string with(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(Stack, ShippedStacksCoverHopper) {
  for (const char* name : {"megatron-core", "pytorch-fsdp2"}) {
    const SoftwareStack s = load_stack(name);
    EXPECT_EQ(s.name, name);
    const StackGeneration& g = s.generation_for("NVIDIA H100 SXM5 80GB");
    EXPECT_EQ(g.name, "hopper");
    ASSERT_TRUE(g.gemm_efficiency && g.attention);
    EXPECT_FALSE(g.gemm_efficiency->source.empty());
    EXPECT_NE(usage_error([&] { s.generation_for("NVIDIA A100 SXM4 80GB"); }).find("has no figures for NVIDIA A100"),
              std::string::npos);
  }
}

TEST(Stack, AttentionCurveLogLinearAndHeldAtTheEnds) {
  const SoftwareStack s = parse_stack(good_stack(), "t.json");
  const AttentionKernel& a = *s.generations.front().attention;
  EXPECT_DOUBLE_EQ(a.forward_TFLOPs(1024, 128), 200);
  EXPECT_DOUBLE_EQ(a.forward_TFLOPs(2048, 128), 300);  // halfway in log2(seq_len)
  EXPECT_DOUBLE_EQ(a.backward_TFLOPs(2048, 128), 200);
  EXPECT_DOUBLE_EQ(a.forward_TFLOPs(256, 128), 200);   // held below the first point
  EXPECT_DOUBLE_EQ(a.forward_TFLOPs(65536, 64), 400);  // and above the last; nearest head dim
}

TEST(Stack, BadFilesNameTheField) {
  const std::string good = good_stack();
  EXPECT_NE(usage_error([&] {
              parse_stack(with(good, "\"gemm_efficiency\"", "\"gemm_eficiency\""), "t.json");
            }).find("t.json: field 'generations[0].gemm_eficiency': unknown field (did you mean 'gemm_efficiency'?)"),
            std::string::npos);
  EXPECT_NE(usage_error([&] {
              parse_stack(
                  with(good, "{\"value\": 0.7, \"source\": \"s\"}", "{\"value\": 0.7, \"source\": \"nowhere\"}"),
                  "t.json");
            }).find("field 'generations[0].gemm_efficiency.source': 'nowhere' is not listed in 'sources'"),
            std::string::npos);
  EXPECT_NE(usage_error([&] {
              parse_stack(with(good, "[1024, 4096]", "[4096, 1024]"), "t.json");
            }).find("field 'generations[0].attention.curves[0].seq_lens': must increase"),
            std::string::npos);
  EXPECT_NE(usage_error([&] {
              parse_stack(with(good, "[200, 400]", "[200]"), "t.json");
            }).find("curves[0].forward_TFLOPs': needs one value per seq_lens entry"),
            std::string::npos);
  EXPECT_NE(usage_error([&] {
              parse_stack(with(good, "{\"value\": 0.7,", "{\"value\": 1.7,"), "t.json");
            }).find("gemm_efficiency.value': out of range"),
            std::string::npos);
  EXPECT_NE(usage_error([&] {
              parse_stack(with(good, "\"framework\": \"ibt\"", "\"framework\": \"jax\""), "t.json");
            }).find("field 'framework': unknown framework 'jax'"),
            std::string::npos);
  EXPECT_NE(usage_error([&] {
              parse_stack(
                  with(good, "\"fsdp_prefetch_units\": {\"value\": 1", "\"fsdp_prefetch_units\": {\"value\": 2"),
                  "t.json");
            }).find("overlap.fsdp_prefetch_units.value': only 1"),
            std::string::npos);
  EXPECT_NE(usage_error([&] {
              parse_stack(with(good, "\"value\": true, \"source\": \"s\"}, \"tp_comm\"",
                               "\"value\": 1, \"source\": \"s\"}, \"tp_comm\""),
                          "t.json");
            }).find("overlap.grad_reduce.value': must be true or false"),
            std::string::npos);
  EXPECT_NE(usage_error([&] { parse_stack("{\"name\": ", "t.json"); }).find("t.json: not valid JSON"),
            std::string::npos);
  EXPECT_NE(usage_error([&] { load_stack("megatron-cor"); }).find("did you mean 'megatron-core'?"), std::string::npos);
}

// The held-out block: its figures read, said beside the projection with the file it came
// from, and each bad form refused naming the field.
TEST(Stack, HeldOutFiguresAreSaidAndBadOnesRefused) {
  const std::string block =
      "\"held_out\": {\"rows\": 5, \"min_error\": 0.42, \"median_error\": 0.85, \"max_error\": 0.91, "
      "\"source\": \"h\"},\n  \"generations\"";
  const std::string good = with(with(good_stack(), "\"generations\"", block), "\"s\": \"a kernel benchmark\"",
                                "\"s\": \"a kernel benchmark\", \"h\": \"runs.csv: five runs\"");
  const SoftwareStack s = parse_stack(good, "t.json");
  ASSERT_TRUE(s.held_out);
  EXPECT_EQ(s.held_out->rows, 5);
  EXPECT_DOUBLE_EQ(s.held_out->median_error, 0.85);
  const std::string said = describe_stack(s, models::load_model("llama3-8b"), load_topology("dgx-h100"));
  EXPECT_NE(
      said.find("held out: on 5 published runs of this stack that fitted nothing, projected tokens/s ran +42% to"),
      std::string::npos)
      << said;
  EXPECT_NE(said.find("(median +85%; runs.csv)"), std::string::npos) << said;
  EXPECT_EQ(
      describe_stack(parse_stack(good_stack(), "t.json"), models::load_model("llama3-8b"), load_topology("dgx-h100"))
          .find("held out"),
      std::string::npos);
  const auto refused = [&](const std::string& from, const std::string& to) {
    return usage_error([&] { parse_stack(with(good, from, to), "t.json"); });
  };
  EXPECT_NE(refused("\"rows\": 5", "\"runs\": 5").find("held_out.runs': unknown field (known: rows"),
            std::string::npos);
  EXPECT_NE(refused("\"rows\": 5", "\"rows\": 0").find("held_out.rows"), std::string::npos);
  EXPECT_NE(refused("\"min_error\": 0.42", "\"min_error\": 0.95").find("must lie between min_error and max_error"),
            std::string::npos);
  EXPECT_NE(refused("\"min_error\": 0.42", "\"min_error\": -1.5").find("held_out.min_error': must be an error"),
            std::string::npos);
  EXPECT_NE(refused("\"source\": \"h\"}", "\"source\": \"x\"}").find("'x' is not listed in 'sources'"),
            std::string::npos);
  EXPECT_NE(refused("\"max_error\": 0.91", "\"max_error\": \"big\"").find("held_out.max_error"), std::string::npos);
}

// "elementwise": eager reaches the projection options and the stack's line; absent, it is
// fused; a value other than "eager" or "fused", a missing source and an unknown key are
// refused naming the field.
TEST(Stack, ElementwiseEagerOrFusedAndBadOnesRefused) {
  const std::string good = with(good_stack(), "\"generations\"",
                                "\"elementwise\": {\"value\": \"eager\", \"source\": \"s\"},\n  \"generations\"");
  const SoftwareStack s = parse_stack(good, "t.json");
  EXPECT_TRUE(s.eager_elementwise.value);
  EXPECT_EQ(s.eager_elementwise.source, "s");
  EXPECT_FALSE(parse_stack(good_stack(), "t.json").eager_elementwise.value);
  EXPECT_FALSE(parse_stack(with(good, "\"eager\"", "\"fused\""), "t.json").eager_elementwise.value);
  const models::ModelConfig model = models::load_model("llama3-8b");
  Topology t = load_topology("dgx-h100");
  ProjectionOptions o;
  o.dtype = "bf16";
  apply_stack(s, model, t, o);
  EXPECT_TRUE(o.eager_elementwise);
  EXPECT_NE(describe_stack(s, model, t).find("element-wise ops eager (one kernel each)"), std::string::npos);
  EXPECT_EQ(describe_stack(parse_stack(good_stack(), "t.json"), model, t).find("element-wise"), std::string::npos);
  const auto refused = [&](const std::string& from, const std::string& to) {
    return usage_error([&] { parse_stack(with(good, from, to), "t.json"); });
  };
  EXPECT_NE(refused("\"eager\"", "\"eagre\"").find("field 'elementwise.value': must be \"eager\""), std::string::npos);
  EXPECT_NE(refused("\"eager\"", "true").find("field 'elementwise.value'"), std::string::npos);
  EXPECT_NE(
      refused("\"eager\", \"source\": \"s\"}", "\"eager\", \"source\": \"x\"}").find("'x' is not listed in 'sources'"),
      std::string::npos);
  EXPECT_NE(refused("\"eager\", \"source\": \"s\"}", "\"eager\"}").find("elementwise.source"), std::string::npos);
  EXPECT_NE(refused("\"elementwise\"", "\"elementwse\"").find("did you mean 'elementwise'?"), std::string::npos);
}

TEST(Stack, AppliedFiguresAndAttentionRates) {
  const SoftwareStack s = parse_stack(good_stack(), "t.json");
  models::ModelConfig model = models::load_model("llama3-8b");  // head dim 128
  model.seq_len = 2048;
  Topology t = load_topology("dgx-h100");
  ProjectionOptions o;
  o.dtype = "bf16";
  apply_stack(s, model, t, o);
  EXPECT_DOUBLE_EQ(t.model.gemm_efficiency.get(), 0.7);
  EXPECT_EQ(t.model.gemm_efficiency.source, "stack:t");
  ASSERT_NE(t.find_source("stack:t"), nullptr);
  // 300 TFLOP/s over the causal half forward; 200 TFLOP/s over 0.5 x 2.5 / 2 backward.
  EXPECT_DOUBLE_EQ(o.attention_forward_flops_per_us, 300e6 / 0.5);
  EXPECT_DOUBLE_EQ(o.attention_backward_flops_per_us, 200e6 / 0.625);
  ProjectionOptions fp32;
  fp32.dtype = "fp32";
  EXPECT_NE(usage_error([&] { apply_stack(s, model, t, fp32); }).find("measured in bf16"), std::string::npos);
}

TEST(ProjectionSetup, SeqLenAndStackFlags) {
  ProjectionFlags f;
  f.model = "llama3-8b";
  f.topology = "dgx-h100";
  EXPECT_EQ(load_projection_model(f).seq_len, models::load_model("llama3-8b").seq_len);
  f.seq_len = 32768;
  EXPECT_EQ(load_projection_model(f).seq_len, 32768);
  for (long long bad : {0LL, -4LL, 1LL << 40}) {
    f.seq_len = bad;
    EXPECT_NE(usage_error([&] { load_projection_model(f); }).find("--seq-len must be a positive number of tokens"),
              std::string::npos);
  }
  f.seq_len = kSeqLenOfModel;
  f.stack = "pytorch-fsdp2";
  f.framework_given = true;
  EXPECT_NE(usage_error([&] { load_projection_setup(f); }).find("--framework and --stack"), std::string::npos);
  f.framework_given = false;
  f.fp8 = true;
  EXPECT_NE(usage_error([&] { load_projection_setup(f); }).find("--fp8 with --stack"), std::string::npos);
  f.fp8 = false;
  f.topology = "dgx-a100";
  EXPECT_NE(usage_error([&] { load_projection_setup(f); }).find("has no figures for"), std::string::npos);
}

// FSDP (ZeRO-3 over 64 H100s) of Llama 3 8B at a fixed 2M-token batch, full recompute so
// every length fits, priced at one sequence length.
// `eager`: the stack's element-wise kernels as its file says (true) or fused (false).
double fsdp_mfu(const std::string& stack, long long seq_len, bool eager = false) {
  ProjectionFlags f;
  f.model = "llama3-8b";
  f.topology = "dgx-h100";
  f.stack = stack;
  f.seq_len = seq_len;
  ProjectionSetup s = load_projection_setup(f);
  if (!eager) s.options.eager_elementwise = false;
  models::ParallelSplit split;
  split.dp = 64;
  split.zero = 3;
  split.micro_batch_size = 1;
  split.microbatches = static_cast<int>((2LL << 20) / seq_len / 64);
  split.recompute = models::Recompute::full;
  const Projection p = project(s.model, s.topology, split, s.options);
  EXPECT_TRUE(p.feasible) << seq_len << ": " << p.reason;
  return p.mfu;
}

// Published runs of PyTorch-native stacks on H100 lose MFU as the sequence grows; issue
// #40 states ~42% at 2K falling to 28-32% at 64K for them. The nearest table found with a
// citable source is of another stack: NeMo's long-sequence performance page (Megatron-Core,
// LLAMA3-8B FP8 on DGX-B200 without CP: 1,671 TFLOP/s per GPU at 8K, 1,549 at 32K, 1,438 at
// 128K; docs/source/performance/performance_long_sequence.md of NVIDIA NeMo). Neither is
// fitted here: the fall comes from the stack file's FlashAttention-2 rates (its backward,
// per FLOP as ibt counts them, is ~0.75 of the GEMM rate) as attention's share of the FLOPs
// grows with the sequence. From 8K up, since below it the per-microbatch FSDP gathers of the
// fixed token batch (16 microbatches at 2K) are what moves the MFU. The catalog's fitted
// efficiency alone prices attention at the GEMM rate: MFU does not fall without the stack
// (48.4% at 8K, 48.7% at 32K at the time of writing), so the test fails if the stack's
// attention rates are not applied.
TEST(ProjectionSetup, MfuFallsWithSequenceLengthOnH100Fsdp2) {
  const double at_8k = fsdp_mfu("pytorch-fsdp2", 8192), at_16k = fsdp_mfu("pytorch-fsdp2", 16384),
               at_32k = fsdp_mfu("pytorch-fsdp2", 32768);
  EXPECT_GT(at_8k, at_16k);
  EXPECT_GT(at_16k, at_32k);
  EXPECT_LT(at_32k, 0.97 * at_8k) << at_8k << " " << at_32k;
  const double plain_ratio = fsdp_mfu("", 32768) / fsdp_mfu("", 8192);
  EXPECT_GE(plain_ratio, 0.99);
  EXPECT_LT(at_32k / at_8k, plain_ratio - 0.02);
  // The eager element-wise kernels cost per token, not per attention FLOP: they lower MFU
  // most at short sequences, and with them MFU no longer falls from 8K to 32K (it rises
  // 3%: the measured fall is not reproduced; docs/validation.md).
  const double eager_8k = fsdp_mfu("pytorch-fsdp2", 8192, true), eager_32k = fsdp_mfu("pytorch-fsdp2", 32768, true);
  EXPECT_LT(eager_8k, 0.9 * at_8k);
  EXPECT_GT(eager_32k / at_32k, eager_8k / at_8k);
}

}  // namespace
}  // namespace ibt::topo
