// Tensor-parallel shards reproduce the unsharded layers: partial outputs summed over
// the shards equal the full output, partial input gradients likewise, and each
// shard's weight gradients are the matching slice of the full ones. Layer tests loop
// over the shards in one thread; whole-model tests run the shards as threads that
// meet in a TpReducer made of barriers (no MPI involved).
#include <gtest/gtest.h>

#include <barrier>
#include <thread>

#include "core/errors.hpp"
#include "engine_test_util.hpp"
#include "models/engine/blas.hpp"
#include "models/engine/layers/attention.hpp"
#include "models/engine/layers/mlp.hpp"
#include "models/engine/layers/transformer.hpp"

namespace ibt::models {
namespace {

using test::random_tensor;

void expect_close(const Tensor& a, const Tensor& b, double rtol, const std::string& what) {
  ASSERT_EQ(a.numel(), b.numel()) << what;
  double scale = 1e-6;
  for (float v : b.data) scale = std::max(scale, static_cast<double>(std::abs(v)));
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_NEAR(a.data[i], b.data[i], rtol * scale) << what << " element " << i;
}

// The shard's slice of a full [out, in] weight gradient: rows for column-parallel
// weights, columns for row-parallel ones.
Tensor shard_slice(const Tensor& full, const Tensor& shard, int index) {
  if (full.shape[0] != shard.shape[0]) return slice_rows(full, index * shard.shape[0], shard.shape[0]);
  if (full.shape.size() == 2 && full.shape[1] != shard.shape[1])
    return slice_cols(full, index * shard.shape[1], shard.shape[1]);
  return full;
}

class TensorParallel : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { set_blas_threads(1); }
};

TEST_P(TensorParallel, AttentionShardsSumToFull) {
  const int t = GetParam();
  ModelConfig m = test::tiny_config(false);
  const int batch = 2, seq = 5;
  const Tensor x = random_tensor({batch * seq, m.hidden}, 1);
  const Tensor dy = random_tensor({batch * seq, m.hidden}, 2);
  SelfAttention full(m, 3, 0, Shard{});
  Tensor y_full, dx_full;
  AttentionCache c_full;
  full.forward(x, batch, seq, y_full, c_full);
  full.backward(c_full, batch, seq, dy, dx_full);

  Tensor y_sum({batch * seq, m.hidden}), dx_sum({batch * seq, m.hidden});
  for (int r = 0; r < t; ++r) {
    SelfAttention shard(m, 3, 0, Shard{r, t});
    Tensor y, dx;
    AttentionCache c;
    shard.forward(x, batch, seq, y, c);
    shard.backward(c, batch, seq, dy, dx);
    add_into(y_sum, y);
    add_into(dx_sum, dx);
    std::vector<Param*> fp = full.params(), sp = shard.params();
    for (size_t i = 0; i < fp.size(); ++i) {
      expect_close(sp[i]->value, shard_slice(fp[i]->value, sp[i]->value, r), 0, sp[i]->name + " value");
      expect_close(sp[i]->grad, shard_slice(fp[i]->grad, sp[i]->grad, r), 1e-5, sp[i]->name + " grad");
    }
  }
  expect_close(y_sum, y_full, 1e-5, "attention output");
  expect_close(dx_sum, dx_full, 1e-5, "attention input gradient");
}

// Fewer KV heads than shards (kv_heads 1 at t 2 and 4; 2 at 4): each shard holds a
// copy of the KV head its query heads use, and the copies' K/V weight gradients sum to
// that head's full gradient (what the executor's tp_kv all-reduce does); the rest as
// with split heads.
TEST(TensorParallelShapes, ReplicatedKvHeadShardsSumToFull) {
  for (auto [kv, t] : {std::pair{1, 2}, {1, 4}, {2, 4}}) {
    ModelConfig m = test::tiny_config(false);
    m.kv_heads = kv;
    const int batch = 2, seq = 5, replicas = t / kv, d = m.head_dim();
    const Tensor x = random_tensor({batch * seq, m.hidden}, 1);
    const Tensor dy = random_tensor({batch * seq, m.hidden}, 2);
    SelfAttention full(m, 3, 0, Shard{});
    Tensor y_full, dx_full;
    AttentionCache c_full;
    full.forward(x, batch, seq, y_full, c_full);
    full.backward(c_full, batch, seq, dy, dx_full);
    Tensor y_sum({batch * seq, m.hidden}), dx_sum({batch * seq, m.hidden});
    std::vector<Tensor> dk(kv, Tensor({d, m.hidden})), dv(kv, Tensor({d, m.hidden}));
    for (int r = 0; r < t; ++r) {
      SelfAttention shard(m, 3, 0, Shard{r, t});
      Tensor y, dx;
      AttentionCache c;
      shard.forward(x, batch, seq, y, c);
      shard.backward(c, batch, seq, dy, dx);
      add_into(y_sum, y);
      add_into(dx_sum, dx);
      const int head = r / replicas;
      expect_close(shard.wk.value, slice_rows(full.wk.value, head * d, d), 0, "wk copy");
      add_into(dk[head], shard.wk.grad);
      add_into(dv[head], shard.wv.grad);
      expect_close(shard.wq.grad, shard_slice(full.wq.grad, shard.wq.grad, r), 1e-5, "wq grad");
      expect_close(shard.wo.grad, shard_slice(full.wo.grad, shard.wo.grad, r), 1e-5, "wo grad");
    }
    for (int h = 0; h < kv; ++h) {
      expect_close(dk[h], slice_rows(full.wk.grad, h * d, d), 1e-5, "summed wk grad");
      expect_close(dv[h], slice_rows(full.wv.grad, h * d, d), 1e-5, "summed wv grad");
    }
    expect_close(y_sum, y_full, 1e-5, "attention output");
    expect_close(dx_sum, dx_full, 1e-5, "attention input gradient");
  }
}

TEST_P(TensorParallel, MlpShardsSumToFull) {
  const int t = GetParam();
  for (Activation act : {Activation::gelu, Activation::swiglu}) {
    const MlpShape shape{16, 32, act};
    const Tensor x = random_tensor({7, 16}, 4);
    const Tensor dy = random_tensor({7, 16}, 5);
    Mlp full(shape, 6, "mlp.", Shard{}, 0.3, 0.3);
    Tensor y_full, dx_full;
    MlpCache c_full;
    full.forward(x, y_full, c_full);
    full.backward(c_full, dy, dx_full);
    Tensor y_sum({7, 16}), dx_sum({7, 16});
    for (int r = 0; r < t; ++r) {
      Mlp shard(shape, 6, "mlp.", Shard{r, t}, 0.3, 0.3);
      Tensor y, dx;
      MlpCache c;
      shard.forward(x, y, c);
      shard.backward(c, dy, dx);
      add_into(y_sum, y);
      add_into(dx_sum, dx);
      std::vector<Param*> fp = full.params(), sp = shard.params();
      for (size_t i = 0; i < fp.size(); ++i)
        expect_close(sp[i]->grad, shard_slice(fp[i]->grad, sp[i]->grad, r), 1e-5, sp[i]->name + " grad");
    }
    expect_close(y_sum, y_full, 1e-5, "mlp output");
    expect_close(dx_sum, dx_full, 1e-5, "mlp input gradient");
  }
}

INSTANTIATE_TEST_SUITE_P(Shards, TensorParallel, ::testing::Values(1, 2));

TEST(TensorParallelShapes, IndivisibleHeadsNameTheField) {
  ModelConfig m = test::tiny_config(false);
  try {
    SelfAttention a(m, 1, 0, Shard{0, 3});
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("heads"), std::string::npos) << e.what();
  }
}

// Threads standing in for TP ranks: every reduction is a barrier, a sum (or max) over
// all members' buffers in rank order, a barrier, and a copy back.
class ThreadGroup {
 public:
  explicit ThreadGroup(int n) : n_(n), sync_(n), buffers_(n) {}
  class Member final : public TpReducer {
   public:
    Member(ThreadGroup& g, int rank) : g_(g), rank_(rank) {}
    void sum(Tensor& t) override { reduce(t.ptr(), t.numel(), false); }
    void sum(std::vector<float>& v) override { reduce(v.data(), static_cast<int64_t>(v.size()), false); }
    void max(std::vector<float>& v) override { reduce(v.data(), static_cast<int64_t>(v.size()), true); }

   private:
    void reduce(float* data, int64_t n, bool is_max) {
      g_.buffers_[rank_] = data;
      g_.sync_.arrive_and_wait();
      std::vector<float> out(data, data + n);
      for (int64_t i = 0; i < n; ++i) {
        float acc = g_.buffers_[0][i];
        for (int r = 1; r < g_.n_; ++r) acc = is_max ? std::max(acc, g_.buffers_[r][i]) : acc + g_.buffers_[r][i];
        out[i] = acc;
      }
      g_.sync_.arrive_and_wait();
      std::copy(out.begin(), out.end(), data);
      g_.sync_.arrive_and_wait();
    }
    ThreadGroup& g_;
    int rank_;
  };

 private:
  int n_;
  std::barrier<> sync_;
  std::vector<float*> buffers_;
};

void expect_whole_model_tp_matches(const ModelConfig& m, int t) {
  set_blas_threads(1);
  const uint64_t seed = 77;
  Batch mb;
  mb.sequences = 2;
  mb.seq_len = m.seq_len;
  for (int i = 0; i < mb.sequences * m.seq_len; ++i) {
    mb.inputs.push_back(static_cast<int32_t>(mix64(i) % m.vocab));
    mb.targets.push_back(static_cast<int32_t>(mix64(i + 99) % m.vocab));
  }
  const LossScale scale{1.0f / (mb.sequences * m.seq_len), m.aux_loss_coeff / mb.sequences};
  Transformer full(m, seed);
  IdentityTp identity;
  StageCache c;
  Tensor out, d_in;
  const MicrobatchLoss ref = full.forward(mb, nullptr, out, c, identity);
  full.backward(c, nullptr, scale, d_in, identity);

  std::vector<std::unique_ptr<Transformer>> shards;
  for (int r = 0; r < t; ++r) {
    ModelPart part;
    part.tp = Shard{r, t};
    shards.push_back(std::make_unique<Transformer>(m, seed, part));
  }
  ThreadGroup group(t);
  std::vector<MicrobatchLoss> losses(t);
  std::vector<std::thread> threads;
  for (int r = 0; r < t; ++r)
    threads.emplace_back([&, r] {
      ThreadGroup::Member tp(group, r);
      StageCache cache;
      Tensor o, d;
      losses[r] = shards[r]->forward(mb, nullptr, o, cache, tp);
      shards[r]->backward(cache, nullptr, scale, d, tp);
    });
  for (std::thread& th : threads) th.join();

  std::vector<Param*> fp = full.params();
  for (int r = 0; r < t; ++r) {
    EXPECT_NEAR(losses[r].ce_sum, ref.ce_sum, 1e-5 * std::abs(ref.ce_sum)) << "shard " << r;
    EXPECT_NEAR(losses[r].balance_sum, ref.balance_sum, 1e-5 * std::abs(ref.balance_sum) + 1e-9);
    std::vector<Param*> sp = shards[r]->params();
    ASSERT_EQ(sp.size(), fp.size());
    for (size_t i = 0; i < fp.size(); ++i) {
      ASSERT_EQ(sp[i]->name, fp[i]->name);
      expect_close(sp[i]->grad, shard_slice(fp[i]->grad, sp[i]->grad, r), 1e-4, sp[i]->name + " grad");
    }
  }
}

TEST(TensorParallelModel, DenseTwoShardsMatchUnsharded) { expect_whole_model_tp_matches(test::tiny_config(false), 2); }

TEST(TensorParallelModel, MoeTwoShardsMatchUnsharded) { expect_whole_model_tp_matches(test::tiny_config(true), 2); }

}  // namespace
}  // namespace ibt::models
