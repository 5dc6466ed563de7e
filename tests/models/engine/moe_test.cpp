// MoE routing: top-k selection, gate weights, the selection-only bias of DeepSeek-V3's
// aux-loss-free balancing, dispatch/combine as a permutation, and load balance
// improving under bias updates.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "engine_test_util.hpp"
#include "models/engine/blas.hpp"
#include "models/engine/layers/moe.hpp"

namespace ibt::models {
namespace {

using test::random_tensor;

ModelConfig moe_config(RoutingBalance balance) {
  ModelConfig m = test::tiny_config(true);
  m.num_experts = 8;
  m.top_k = 2;
  m.balance = balance;
  m.bias_update_rate = 0.01;
  return m;
}

TEST(MoeRouting, TopKPicksLargestLogitsAndSoftmaxesThem) {
  set_blas_threads(1);
  ModelConfig m = moe_config(RoutingBalance::none);
  MoeLayer moe(m, 1, 1, Shard{}, Shard{});
  const Tensor x = random_tensor({10, m.hidden}, 2);
  Routing r;
  moe.route(x, r);
  for (int64_t t = 0; t < 10; ++t) {
    const float* z = r.logits.row(t);
    std::vector<int> order(m.num_experts);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return z[a] > z[b]; });
    EXPECT_EQ(r.expert[t * 2], order[0]);
    EXPECT_EQ(r.expert[t * 2 + 1], order[1]);
    const double e0 = std::exp(z[order[0]]), e1 = std::exp(z[order[1]]);
    EXPECT_NEAR(r.weight[t * 2], e0 / (e0 + e1), 1e-6);
    EXPECT_NEAR(r.weight[t * 2] + r.weight[t * 2 + 1], 1.0, 1e-6);
  }
  EXPECT_EQ(std::accumulate(r.load.begin(), r.load.end(), int64_t{0}), 20);
}

TEST(MoeRouting, BiasChangesSelectionButNotGateWeights) {
  set_blas_threads(1);
  ModelConfig m = moe_config(RoutingBalance::aux_loss_free);
  MoeLayer moe(m, 1, 1, Shard{}, Shard{});
  const Tensor x = random_tensor({6, m.hidden}, 3);
  Routing before;
  moe.route(x, before);
  // A large bias on expert 5 forces it into every token's top-2.
  moe.selection_bias[5] = 100.0f;
  Routing after;
  moe.route(x, after);
  for (int64_t t = 0; t < 6; ++t) {
    EXPECT_EQ(after.expert[t * 2], 5) << "token " << t;
    // The gate weights are the softmax of the raw logits of the selected pair.
    const float* z = after.logits.row(t);
    const int other = after.expert[t * 2 + 1];
    const double w5 = std::exp(z[5]) / (std::exp(z[5]) + std::exp(z[other]));
    EXPECT_NEAR(after.weight[t * 2], w5, 1e-6) << "the bias leaked into the gate weight";
    // The logits themselves do not see the bias.
    for (int e = 0; e < m.num_experts; ++e) EXPECT_EQ(after.logits.row(t)[e], before.logits.row(t)[e]);
  }
  EXPECT_EQ(after.load[5], 6);
}

TEST(MoeRouting, DispatchGroupsByExpertAndCombineInvertsIt) {
  set_blas_threads(1);
  ModelConfig m = moe_config(RoutingBalance::none);
  MoeLayer moe(m, 1, 1, Shard{}, Shard{});
  const Tensor x = random_tensor({9, m.hidden}, 4);
  Routing r;
  moe.route(x, r);
  Dispatch d;
  MoeLayer::dispatch(x, r, m.num_experts, d);
  // Rows are grouped by ascending expert id with the counts announced.
  int64_t row = 0;
  for (int e = 0; e < m.num_experts; ++e)
    for (int64_t i = 0; i < d.counts[e]; ++i, ++row) {
      EXPECT_EQ(r.expert[d.slot[row]], e);
      EXPECT_EQ(d.rows.row(row)[0], x.row(d.slot[row] / 2)[0]);
    }
  EXPECT_EQ(row, 18);
  // Identity experts: combine gives back x (the gate weights of a token sum to 1).
  Tensor y;
  MoeLayer::combine(r, d, d.rows, y);
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_NEAR(y.data[i], x.data[i], 1e-6);
}

// Tokens concentrated on a few experts by a skewed router; bias updates from the
// observed load must spread them out.
TEST(MoeRouting, BiasUpdatesBalanceTheLoad) {
  set_blas_threads(1);
  ModelConfig m = moe_config(RoutingBalance::aux_loss_free);
  m.bias_update_rate = 0.02;
  MoeLayer moe(m, 1, 1, Shard{}, Shard{});
  // Router rows favour experts 0 and 1 strongly.
  moe.router.value = random_tensor({m.num_experts, m.hidden}, 5, 0.05);
  Tensor x = random_tensor({256, m.hidden}, 6);
  for (int64_t t = 0; t < 256; ++t) x.row(t)[0] = 2.0f + std::abs(x.row(t)[0]);
  for (int64_t j = 0; j < m.hidden; ++j) moe.router.value.row(0)[j] = moe.router.value.row(1)[j] = 0.0f;
  moe.router.value.row(0)[0] = 1.0f;
  moe.router.value.row(1)[0] = 0.9f;
  auto imbalance = [&] {
    Routing r;
    moe.route(x, r);
    const double mean = 256.0 * 2 / m.num_experts;
    return static_cast<double>(*std::max_element(r.load.begin(), r.load.end())) / mean;
  };
  const double start = imbalance();
  EXPECT_GT(start, 3.0) << "the test setup should start badly balanced";
  for (int step = 0; step < 300; ++step) {
    Routing r;
    moe.route(x, r);
    moe.update_bias(r.load);
  }
  const double end = imbalance();
  EXPECT_LT(end, 1.5) << "max/mean load after bias updates (started at " << start << ")";
  EXPECT_GT(moe.selection_bias[2], moe.selection_bias[0]);
}

TEST(MoeRouting, BiasUpdateIsSignOfLoadGap) {
  ModelConfig m = moe_config(RoutingBalance::aux_loss_free);
  MoeLayer moe(m, 1, 1, Shard{}, Shard{});
  moe.update_bias({4, 2, 2, 2, 2, 2, 2, 0});  // mean 2
  EXPECT_FLOAT_EQ(moe.selection_bias[0], -0.01f);
  EXPECT_FLOAT_EQ(moe.selection_bias[1], 0.0f);
  EXPECT_FLOAT_EQ(moe.selection_bias[7], 0.01f);
  // Without aux-loss-free balancing the bias never moves.
  MoeLayer plain(moe_config(RoutingBalance::aux_loss), 1, 1, Shard{}, Shard{});
  plain.update_bias({4, 2, 2, 2, 2, 2, 2, 0});
  EXPECT_FLOAT_EQ(plain.selection_bias[0], 0.0f);
}

TEST(MoeRouting, BalanceLossIsOneWhenPerfectlyUniform) {
  // All logits equal (zero router): P_i = 1/E; ties pick experts 0 and 1, so
  // f = (1/2, 1/2, 0, ...) and E * sum f_i P_i = E * (1/E) = 1 per sequence.
  ModelConfig m = moe_config(RoutingBalance::aux_loss);
  MoeLayer moe(m, 1, 1, Shard{}, Shard{});
  moe.router.value.zero();
  const Tensor x = random_tensor({12, m.hidden}, 7);
  Routing r;
  moe.route(x, r);
  EXPECT_EQ(r.expert[0], 0);
  EXPECT_EQ(r.expert[1], 1);
  EXPECT_NEAR(moe.balance_loss_sum(r, 6), 2.0, 1e-6);  // two sequences of 6
}

TEST(MoeRouting, ExpertParallelShardHoldsItsExperts) {
  ModelConfig m = moe_config(RoutingBalance::none);
  MoeLayer full(m, 9, 1, Shard{}, Shard{});
  MoeLayer part(m, 9, 1, Shard{}, Shard{1, 4});
  EXPECT_EQ(part.first_local_expert(), 2);
  ASSERT_EQ(part.local_experts(), 2);
  EXPECT_EQ(part.experts_[0].w_up.value.data, full.experts_[2].w_up.value.data);
  EXPECT_EQ(part.router.value.data, full.router.value.data);
}

}  // namespace
}  // namespace ibt::models
