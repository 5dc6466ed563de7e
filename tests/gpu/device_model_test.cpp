// The GPU transformer chunk against the CPU engine's (same weights: DeviceChunk is built
// from the CPU Transformer), one microbatch forward and backward: loss and every
// parameter's gradient. fp32 GEMM operands must agree to summation order; bf16 operands
// within the bf16 tolerance. Skip without a GPU, saying why.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "gpu_test_support.hpp"
#include "models/cuda/executor/device_model.hpp"
#include "models/engine/data.hpp"
#include "models/engine/layers/transformer.hpp"
#include "models/plan/model_file.hpp"

namespace ibt {
namespace {

struct Tolerance {
  double loss, grad;
};

void compare_with_cpu(const std::string& model_name, gpu::MathPrecision precision, Tolerance tol,
                      gpu::AttentionKernels attention = gpu::AttentionKernels::threads) {
  const models::ModelConfig m = models::load_model(model_name);
  models::Transformer cpu(m, 1234);
  models::Transformer for_device(m, 1234);
  // Declared first, destroyed last: device memory is freed on this stream.
  struct Stream {
    cudaStream_t s = nullptr;
    Stream() { gpu::check_cuda(cudaStreamCreate(&s), "cudaStreamCreate"); }
    ~Stream() {
      cudaStreamSynchronize(s);
      cudaStreamDestroy(s);
    }
  } owned;
  const cudaStream_t stream = owned.s;
  gpu::DeviceBlas blas(precision, stream);
  gpu::DeviceChunk chunk(for_device, blas, stream, attention);

  const models::SyntheticData data(m.vocab, m.seq_len, 99);
  const models::Batch mb = data.batch(0, 0, 2);
  const float scale = 1.0f / static_cast<float>(2 * m.seq_len);
  struct : models::TpReducer {
    bool sequence_parallel() const override { return false; }
    void all_gather_rows(const models::Tensor&, models::Tensor&) override {}
    void reduce_scatter_rows(const models::Tensor&, models::Tensor&) override {}
    void sum(models::Tensor&) override {}
    void sum(std::vector<float>&) override {}
    void max(std::vector<float>&) override {}
  } no_tp;
  models::StageCache cache;
  models::Tensor out, d_in;
  const models::MicrobatchLoss want = cpu.forward(mb, nullptr, out, cache, no_tp);
  models::LossScale ls;
  ls.ce_per_token = scale;
  cpu.backward(cache, nullptr, ls, d_in, no_tp);

  gpu::NoTpReducer none;
  gpu::DeviceStageCache dcache;
  const double got = chunk.forward(mb, nullptr, nullptr, dcache, none);
  // The ranges reported final (what the DP all-reduce overlaps) cover every gradient once.
  std::vector<std::pair<std::size_t, std::size_t>> final_ranges;
  chunk.backward(dcache, nullptr, scale, nullptr, none,
                 [&](std::size_t offset, std::size_t count) { final_ranges.emplace_back(offset, count); });
  EXPECT_NEAR(got, want.ce_sum, tol.loss * want.ce_sum) << "loss sum";
  std::sort(final_ranges.begin(), final_ranges.end());
  std::size_t covered = 0;
  for (const auto& [offset, count] : final_ranges) {
    EXPECT_EQ(offset, covered) << "gap or overlap in the final gradient ranges";
    covered = offset + count;
  }
  EXPECT_EQ(covered, chunk.params().total());
  EXPECT_EQ(final_ranges.size(), static_cast<std::size_t>(m.layers) + 2) << "head, each layer, embedding";

  const std::vector<float> grads = chunk.params().download_grads(stream);
  const std::vector<models::Param*> ps = cpu.params();
  ASSERT_EQ(ps.size(), chunk.params().size());
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const gpu::DeviceParamInfo& info = chunk.params().info(i);
    ASSERT_EQ(info.name, ps[i]->name);
    double num = 0, den = 0;
    for (std::size_t j = 0; j < info.count; ++j) {
      const double w = ps[i]->grad.data[j], g = grads[info.offset + j];
      num += (g - w) * (g - w);
      den += w * w;
    }
    EXPECT_LE(std::sqrt(num), tol.grad * std::sqrt(den) + 1e-12)
        << info.name << ": relative L2 error " << std::sqrt(num / std::max(den, 1e-30));
  }
}

TEST(DeviceModel, Fp32MatchesTheCpuEngine) {
  IBT_REQUIRE_GPU();
  compare_with_cpu("tiny-dense", gpu::MathPrecision::fp32, {1e-5, 1e-4});
}

TEST(DeviceModel, Bf16IsWithinTheStatedTolerance) {
  IBT_REQUIRE_GPU();
  compare_with_cpu("tiny-dense", gpu::MathPrecision::bf16, {1e-2, 5e-2});
}

// The attention core as cuBLAS batched GEMMs (attention_gemm.hpp), on tiny-dense's grouped
// query heads (4 heads over 2 KV heads): the same tolerances as the one-thread kernels.
// Written without a GPU; these two tests are its first check.
TEST(DeviceModel, GemmAttentionFp32MatchesTheCpuEngine) {
  IBT_REQUIRE_GPU();
  compare_with_cpu("tiny-dense", gpu::MathPrecision::fp32, {1e-5, 1e-4}, gpu::AttentionKernels::gemm);
}

TEST(DeviceModel, GemmAttentionBf16IsWithinTheStatedTolerance) {
  IBT_REQUIRE_GPU();
  compare_with_cpu("tiny-dense", gpu::MathPrecision::bf16, {1e-2, 5e-2}, gpu::AttentionKernels::gemm);
}

}  // namespace
}  // namespace ibt
