// GEMM benchmark: problem lists (pure C++, run everywhere) and, on a GPU, products
// checked against the float64 reference.
#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "gpu_test_support.hpp"
#include "models/cuda/gemm_bench.hpp"

namespace ibt {
namespace {

TEST(GemmShapes, ParsesMxNxKLists) {
  const auto shapes = gpu::parse_shapes("4096x1024x512,8x16x32");
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(shapes[0].m, 4096);
  EXPECT_EQ(shapes[0].n, 1024);
  EXPECT_EQ(shapes[0].k, 512);
  EXPECT_EQ(shapes[1].name, "8x16x32");
  EXPECT_DOUBLE_EQ(shapes[1].flops(), 2.0 * 8 * 16 * 32);
}

TEST(GemmShapes, RejectsMalformedEntriesNamingThem) {
  for (const char* bad : {"4096x1024", "4096x0x5", "ax2x3", "1x2x3x4", "1x2x3,", "-1x2x3"}) {
    try {
      gpu::parse_shapes(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--shapes"), std::string::npos) << e.what();
    }
  }
}

TEST(GemmShapes, TrainingShapesCoverForwardAndBothBackwardProducts) {
  // Llama-2-7B-like: hidden 4096, ffn 11008, SwiGLU, no GQA; 4096 tokens.
  const auto shapes = gpu::training_shapes({4096, 4096, 11008, 4096, true});
  ASSERT_EQ(shapes.size(), 12u);
  double flops = 0;
  for (const auto& s : shapes) flops += s.flops();
  // Per token: 3 products x 2 FLOPs x the block's linear parameters (4h^2 + 3 h f).
  const double params = 4.0 * 4096 * 4096 + 3.0 * 4096 * 11008;
  EXPECT_DOUBLE_EQ(flops, 6.0 * params * 4096);
  EXPECT_EQ(shapes[6].name, "mlp_up.fwd");
  EXPECT_EQ(shapes[6].n, 2 * 11008);
  EXPECT_EQ(shapes[8].name, "mlp_up.wgrad");
  EXPECT_EQ(shapes[8].k, 4096);  // weight gradients reduce over the tokens
}

TEST(GemmShapes, PrecisionNames) {
  EXPECT_EQ(gpu::parse_gemm_precision("bf16"), gpu::GemmPrecision::bf16);
  EXPECT_EQ(gpu::parse_gemm_precision("fp8"), gpu::GemmPrecision::fp8_e4m3);
  EXPECT_THROW(gpu::parse_gemm_precision("fp16"), UsageError);
}

TEST(GemmBench, Bf16ProductsMatchTheReference) {
  IBT_REQUIRE_GPU();
  gpu::GemmBench bench("test", 0);
  for (const auto& shape : gpu::parse_shapes("256x512x1024,1000x1000x1000,4096x4096x4096")) {
    const auto r = bench.measure(shape, gpu::GemmPrecision::bf16, {2, 5, 2});
    EXPECT_TRUE(r.correct) << shape.name << " rel_error " << r.rel_error;
    EXPECT_LT(r.rel_error, 1e-2) << shape.name;
    EXPECT_GT(r.rel_error, 0.0) << shape.name << ": bf16 rounding leaves some error; zero means a bad check";
    EXPECT_EQ(r.times_s.size(), 5u);
    EXPECT_GT(r.tflops, 0.0);
  }
}

TEST(GemmBench, Fp8ProductsMatchTheReferenceOnHopper) {
  IBT_REQUIRE_GPU();
  gpu::GemmBench bench("test", 0);
  if (!bench.supports(gpu::GemmPrecision::fp8_e4m3)) GTEST_SKIP() << bench.device().name << " has no fp8 GEMM";
  const auto r = bench.measure({"fp8", 2048, 2048, 2048}, gpu::GemmPrecision::fp8_e4m3, {2, 5, 2});
  EXPECT_TRUE(r.correct) << "rel_error " << r.rel_error;
}

}  // namespace
}  // namespace ibt
