// The serial reference trainer: the loss goes down on the synthetic data for a tiny
// dense and a tiny MoE model, gradient accumulation does not change the step, and runs
// are reproducible from the seed.
#include <gtest/gtest.h>

#include <cmath>

#include "models/engine/blas.hpp"
#include "models/engine/data.hpp"
#include "models/engine/reference_trainer.hpp"
#include "models/plan/model_file.hpp"

namespace ibt::models {
namespace {

std::vector<StepStats> train(const ModelConfig& m, TrainConfig config, int steps) {
  set_blas_threads(1);
  SyntheticData data(m.vocab, m.seq_len, config.seed);
  ReferenceTrainer trainer(m, config, data);
  std::vector<StepStats> out;
  for (int s = 0; s < steps; ++s) out.push_back(trainer.step());
  return out;
}

TrainConfig fast_config() {
  TrainConfig c;
  c.microbatches = 2;
  c.micro_batch_size = 4;
  c.adam.lr = 3e-3;
  return c;
}

void expect_learns(const std::vector<StepStats>& steps, double vocab) {
  const double uniform = std::log(vocab);
  EXPECT_NEAR(steps.front().loss, uniform, 0.1 * uniform) << "initial loss should be near ln(vocab)";
  // The synthetic stream is a bigram rule with 10% noise (data.hpp): its floor is about
  // 0.1 * ln(vocab) + H(0.1) = 0.88 nats for vocab 256, reached after ~100 steps; 20
  // steps of 256 tokens reliably take off more than half a nat.
  const double last = steps.back().loss;
  EXPECT_LT(last, steps.front().loss - 0.5) << "loss after " << steps.size() << " steps";
  double first5 = 0, last5 = 0;
  for (int i = 0; i < 5; ++i) first5 += steps[i].loss, last5 += steps[steps.size() - 1 - i].loss;
  EXPECT_LT(last5, first5 - 1.5) << "the last five steps' mean loss should be clearly lower";
  for (const StepStats& s : steps) {
    EXPECT_TRUE(std::isfinite(s.loss));
    EXPECT_GT(s.grad_norm, 0.0);
    EXPECT_GT(s.param_norm, 0.0);
  }
}

TEST(ReferenceTrainer, TinyDenseLossDecreasesOver20Steps) {
  const ModelConfig m = load_model("tiny-dense");
  const auto steps = train(m, fast_config(), 20);
  expect_learns(steps, m.vocab);
}

TEST(ReferenceTrainer, TinyMoeLossDecreasesOver20Steps) {
  const ModelConfig m = load_model("tiny-moe");
  const auto steps = train(m, fast_config(), 20);
  expect_learns(steps, m.vocab);
  ASSERT_EQ(steps.front().moe_load.size(), static_cast<size_t>(m.moe_layers()));
  int64_t selections = 0;
  for (int64_t l : steps.front().moe_load[0]) selections += l;
  EXPECT_EQ(selections, steps.front().tokens * m.top_k);
}

TEST(ReferenceTrainer, TinyMoeWithAuxLossLearnsAndReportsIt) {
  ModelConfig m = load_model("tiny-moe");
  m.balance = RoutingBalance::aux_loss;
  m.aux_loss_coeff = 0.01;
  const auto steps = train(m, fast_config(), 20);
  expect_learns(steps, m.vocab);
  // The balance loss of each layer is >= 1 per sequence times coeff (Cauchy-Schwarz
  // bound at uniform routing is exactly 1); summed over 3 MoE layers.
  EXPECT_GT(steps.front().aux_loss, 0.9 * 0.01 * m.moe_layers());
}

TEST(ReferenceTrainer, GradientAccumulationMatchesOneBigMicrobatch) {
  const ModelConfig m = load_model("tiny-dense");
  TrainConfig a = fast_config();
  a.microbatches = 4;
  a.micro_batch_size = 1;
  TrainConfig b = fast_config();
  b.microbatches = 1;
  b.micro_batch_size = 4;
  const auto sa = train(m, a, 3), sb = train(m, b, 3);
  for (int s = 0; s < 3; ++s) {
    EXPECT_NEAR(sa[s].loss, sb[s].loss, 1e-5 * sb[s].loss) << "step " << s;
    EXPECT_NEAR(sa[s].grad_norm, sb[s].grad_norm, 1e-4 * sb[s].grad_norm) << "step " << s;
    EXPECT_NEAR(sa[s].param_norm, sb[s].param_norm, 1e-6 * sb[s].param_norm) << "step " << s;
  }
}

TEST(ReferenceTrainer, SameSeedSameNumbersOtherSeedOthers) {
  const ModelConfig m = load_model("tiny-dense");
  const auto a = train(m, fast_config(), 2), b = train(m, fast_config(), 2);
  EXPECT_EQ(a[1].loss, b[1].loss);
  EXPECT_EQ(a[1].grad_norm, b[1].grad_norm);
  TrainConfig other = fast_config();
  other.seed = 99;
  EXPECT_NE(train(m, other, 1)[0].loss, a[0].loss);
}

}  // namespace
}  // namespace ibt::models
