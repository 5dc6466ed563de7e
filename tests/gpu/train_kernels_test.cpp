// The cuda executor's kernels against the CPU engine's functions on the same inputs
// (fp32 both sides: only summation order differs). Skip without a GPU, saying why.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "gpu_test_support.hpp"
#include "models/cuda/executor/device_memory.hpp"
#include "models/cuda/executor/train_kernels.hpp"
#include "models/engine/init.hpp"
#include "models/engine/layers/mlp.hpp"
#include "models/engine/layers/norm.hpp"
#include "models/engine/loss.hpp"
#include "models/engine/optimizer.hpp"

namespace ibt {
namespace {

using gpu::DeviceBuffer;

std::vector<float> random_values(std::size_t n, const char* name, double std = 1.0) {
  return models::init_normal(7, name, {static_cast<std::int64_t>(n)}, std).data;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rtol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  EXPECT_LE(std::sqrt(num), rtol * std::sqrt(den) + 1e-12) << what << ": relative L2 error " << std::sqrt(num / den);
}

class TrainKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    IBT_REQUIRE_GPU();
    gpu::check_cuda(cudaStreamCreate(&stream_), "cudaStreamCreate");
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }
  template <typename T>
  DeviceBuffer<T> up(const std::vector<T>& host) {
    DeviceBuffer<T> d;
    d.upload(host.data(), host.size(), stream_);
    return d;
  }
  cudaStream_t stream_ = nullptr;
};

TEST_F(TrainKernels, RmsNormAndLayerNormMatchTheCpu) {
  const std::int64_t rows = 6, n = 40;
  for (models::Norm kind : {models::Norm::rmsnorm, models::Norm::layernorm}) {
    models::NormLayer cpu(kind, n, "norm");
    cpu.gain.value.data = random_values(n, "gain");
    if (kind == models::Norm::layernorm) cpu.bias.value.data = random_values(n, "bias");
    models::Tensor x({rows, n}), dy({rows, n}), y, dx;
    x.data = random_values(rows * n, "x");
    dy.data = random_values(rows * n, "dy");
    models::NormCache cache;
    cpu.forward(x, y, cache);
    cpu.backward(cache, dy, dx);
    const bool ln = kind == models::Norm::layernorm;
    auto dx_dev = up(x.data), dy_dev = up(dy.data), g = up(cpu.gain.value.data);
    DeviceBuffer<float> b = ln ? up(cpu.bias.value.data) : DeviceBuffer<float>(1, stream_);
    DeviceBuffer<float> yd(rows * n, stream_), mean(rows, stream_), rstd(rows, stream_), dxd(rows * n, stream_),
        gg(n, stream_), bg(n, stream_);
    gg.zero(stream_);
    bg.zero(stream_);
    gpu::norm_forward(dx_dev.get(), g.get(), ln ? b.get() : nullptr, rows, n, ln, models::NormLayer::kEps, yd.get(),
                      mean.get(), rstd.get(), stream_);
    gpu::norm_backward(dx_dev.get(), g.get(), mean.get(), rstd.get(), dy_dev.get(), rows, n, ln, dxd.get(), gg.get(),
                       ln ? bg.get() : nullptr, stream_);
    expect_close(yd.download(stream_), y.data, 1e-6, "norm output");
    expect_close(dxd.download(stream_), dx.data, 1e-5, "norm input gradient");
    expect_close(gg.download(stream_), cpu.gain.grad.data, 1e-5, "norm gain gradient");
    if (ln) expect_close(bg.download(stream_), cpu.bias.grad.data, 1e-5, "norm bias gradient");
  }
}

TEST_F(TrainKernels, SwigluMatchesTheCpuFormula) {
  const std::size_t n = 1000;
  const auto gate = random_values(n, "gate"), upv = random_values(n, "up"), d_act = random_values(n, "d_act");
  std::vector<float> act(n), d_gate(n), d_up(n);
  for (std::size_t i = 0; i < n; ++i) {
    act[i] = models::silu(gate[i]) * upv[i];
    d_gate[i] = d_act[i] * upv[i] * models::silu_grad(gate[i]);
    d_up[i] = d_act[i] * models::silu(gate[i]);
  }
  auto g = up(gate), u = up(upv), da = up(d_act);
  DeviceBuffer<float> a(n, stream_), dg(n, stream_), du(n, stream_);
  gpu::swiglu_forward(g.get(), u.get(), a.get(), n, stream_);
  gpu::swiglu_backward(g.get(), u.get(), da.get(), dg.get(), du.get(), n, stream_);
  expect_close(a.download(stream_), act, 1e-6, "swiglu");
  expect_close(dg.download(stream_), d_gate, 1e-5, "swiglu d_gate");
  expect_close(du.download(stream_), d_up, 1e-5, "swiglu d_up");
}

TEST_F(TrainKernels, CrossEntropyMatchesTheCpu) {
  const std::int64_t rows = 5, v = 300;
  models::Tensor logits({rows, v});
  logits.data = random_values(rows * v, "logits", 3.0);
  std::vector<std::int32_t> targets = {0, 17, 299, 150, 3};
  models::Tensor d_logits;
  const double loss = models::cross_entropy(logits, targets, 0.25f, d_logits);
  auto z = up(logits.data);
  auto t = up(targets);
  DeviceBuffer<float> mx(rows, stream_), se(rows, stream_), tl(rows, stream_), dz(rows * v, stream_);
  DeviceBuffer<double> per_row(rows, stream_);
  gpu::logits_row_max(z.get(), rows, v, mx.get(), stream_);
  gpu::logits_sum_exp_and_target(z.get(), t.get(), rows, v, 0, mx.get(), se.get(), tl.get(), stream_);
  gpu::cross_entropy_rows(mx.get(), se.get(), tl.get(), rows, per_row.get(), stream_);
  gpu::logits_grad(z.get(), t.get(), rows, v, 0, mx.get(), se.get(), 0.25f, dz.get(), stream_);
  double got = 0;
  for (double r : per_row.download(stream_)) got += r;
  EXPECT_NEAR(got, loss, 1e-5 * std::abs(loss));
  expect_close(dz.download(stream_), d_logits.data, 1e-5, "logits gradient");
}

TEST_F(TrainKernels, AdamWMatchesTheCpuAndRefreshesTheBf16Copy) {
  const std::size_t n = 513;
  auto w = random_values(n, "w", 0.1), g = random_values(n, "g", 0.01);
  std::vector<float> m(n, 0.0f), v(n, 0.0f);
  models::AdamWConfig c;
  auto wd = up(w), gd = up(g), md = up(m), vd = up(v);
  DeviceBuffer<std::uint16_t> bf16(n, stream_);
  for (int t = 1; t <= 3; ++t) {
    models::adamw_update(w.data(), g.data(), m.data(), v.data(), static_cast<std::int64_t>(n), t, c, true);
    gpu::adamw_step(wd.get(), gd.get(), md.get(), vd.get(), static_cast<std::int64_t>(n), t,
                    {c.lr, c.beta1, c.beta2, c.eps, c.weight_decay}, true, bf16.get(), true, stream_);
  }
  expect_close(wd.download(stream_), w, 1e-6, "AdamW weights");
  // bf16 copy = the fp32 master rounded: within 2^-8 relative of it.
  const auto copy = bf16.download(stream_);
  for (std::size_t i = 0; i < n; i += 37) {
    std::uint32_t bits = static_cast<std::uint32_t>(copy[i]) << 16;
    float as_float;
    std::memcpy(&as_float, &bits, sizeof as_float);
    EXPECT_NEAR(as_float, w[i], std::abs(w[i]) / 256.0f) << i;
  }
}

// bf16 GEMM operands read back as floats (a bf16 is the top half of an fp32).
std::vector<float> from_bf16(const std::vector<std::uint16_t>& bits16) {
  std::vector<float> out(bits16.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::uint32_t bits = static_cast<std::uint32_t>(bits16[i]) << 16;
    std::memcpy(&out[i], &bits, sizeof(float));
  }
  return out;
}

// The causal softmax and its backward against their formulas in double, in place in fp32
// (the one-thread kernels' and fp32 runs' use) and out of place into bf16 (bf16 runs'
// GEMM attention): 3 sequences x 2 heads x 37 positions, so causal rows from one key to
// 37, and one row set of 4,099 positions (rows of up to 17 keys a thread).
class CausalSoftmax : public TrainKernels, public ::testing::WithParamInterface<std::pair<int, int>> {};

TEST_P(CausalSoftmax, AndItsBackwardInFp32AndBf16) {
  const auto [seq, row_sets] = GetParam();
  const std::int64_t rows = std::int64_t(row_sets) * seq, n = rows * seq;
  const auto scores = random_values(n, "scores", 3.0), d_probs = random_values(n, "d_probs");
  std::vector<float> want_p(n, 0.0f), want_ds(n, 0.0f);
  for (std::int64_t r = 0; r < rows; ++r) {
    const int i = static_cast<int>(r % seq);
    const float* s = &scores[r * seq];
    double mx = s[0], sum = 0, dot = 0;
    for (int j = 0; j <= i; ++j) mx = std::max<double>(mx, s[j]);
    for (int j = 0; j <= i; ++j) sum += std::exp(s[j] - mx);
    for (int j = 0; j <= i; ++j) want_p[r * seq + j] = static_cast<float>(std::exp(s[j] - mx) / sum);
    for (int j = 0; j <= i; ++j) dot += double(d_probs[r * seq + j]) * want_p[r * seq + j];
    for (int j = 0; j <= i; ++j)
      want_ds[r * seq + j] = static_cast<float>(want_p[r * seq + j] * (d_probs[r * seq + j] - dot));
  }
  // fp32, in place.
  auto p32 = up(scores), ds32 = up(d_probs);
  gpu::causal_softmax(p32.get(), p32.get(), rows, seq, seq, stream_);
  gpu::causal_softmax_backward(p32.get(), ds32.get(), ds32.get(), rows, seq, seq, stream_);
  const auto got_p = p32.download(stream_), got_ds = ds32.download(stream_);
  expect_close(got_p, want_p, 1e-6, "fp32 probabilities");
  expect_close(got_ds, want_ds, 1e-5, "fp32 score gradients");
  for (std::int64_t r = 0; r < rows; ++r)
    for (int j = static_cast<int>(r % seq) + 1; j < seq; ++j) {
      ASSERT_EQ(got_p[r * seq + j], 0.0f) << "masked probability, row " << r << " key " << j;
      ASSERT_EQ(got_ds[r * seq + j], 0.0f) << "masked gradient, row " << r << " key " << j;
    }
  // bf16 out of place: every entry within bf16 rounding (2^-9 relative) of the formula, the
  // gradient within the rounding of the probabilities it reads, masked entries exactly 0.
  auto s_dev = up(scores), dp_dev = up(d_probs);
  DeviceBuffer<std::uint16_t> p16(n, stream_), ds16(n, stream_);
  gpu::causal_softmax(s_dev.get(), gpu::OperandOut(p16.get(), true), rows, seq, seq, stream_);
  gpu::causal_softmax_backward(gpu::OperandIn(p16.get(), true), dp_dev.get(), gpu::OperandOut(ds16.get(), true), rows,
                               seq, seq, stream_);
  const auto p_bf16 = from_bf16(p16.download(stream_)), ds_bf16 = from_bf16(ds16.download(stream_));
  for (std::int64_t e = 0; e < n; ++e) {
    ASSERT_NEAR(p_bf16[e], want_p[e], std::abs(want_p[e]) / 256.0f + 1e-30f) << "bf16 probability " << e;
    ASSERT_EQ(p_bf16[e] == 0.0f, want_p[e] == 0.0f) << "bf16 probability " << e;
  }
  expect_close(ds_bf16, want_ds, 1e-2, "bf16 score gradients");

  // Blocks of 8 rows (the GEMM attention's causal blocks): the same values through the end
  // of each row's block, zeros after the row's position, and nothing written beyond the
  // block (a NaN placed there beforehand stays).
  const int block = 8;
  const std::vector<std::uint16_t> nan_bits(n, 0x7fc1);
  auto pb = up(nan_bits), dsb = up(nan_bits);
  gpu::causal_softmax(s_dev.get(), gpu::OperandOut(pb.get(), true), rows, seq, block, stream_);
  gpu::causal_softmax_backward(gpu::OperandIn(pb.get(), true), dp_dev.get(), gpu::OperandOut(dsb.get(), true), rows,
                               seq, block, stream_);
  const auto pb_bits = pb.download(stream_), dsb_bits = dsb.download(stream_);
  const auto p16_bits = p16.download(stream_), ds16_bits = ds16.download(stream_);
  for (std::int64_t r = 0; r < rows; ++r) {
    const int i = static_cast<int>(r % seq), end = std::min(seq, (i / block + 1) * block);
    for (int j = 0; j < seq; ++j) {
      const std::int64_t e = r * seq + j;
      if (j < end) {
        ASSERT_EQ(pb_bits[e], p16_bits[e]) << "blocked probability, row " << r << " key " << j;
        ASSERT_EQ(dsb_bits[e], ds16_bits[e]) << "blocked gradient, row " << r << " key " << j;
      } else {
        ASSERT_EQ(pb_bits[e], 0x7fc1) << "written beyond the block, row " << r << " key " << j;
        ASSERT_EQ(dsb_bits[e], 0x7fc1) << "gradient written beyond the block, row " << r << " key " << j;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RowLengths, CausalSoftmax, ::testing::Values(std::pair{37, 6}, std::pair{4099, 1}));

}  // namespace
}  // namespace ibt
