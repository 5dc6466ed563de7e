// Finite-difference gradient checks for every layer of the engine, on tiny shapes.
#include <gtest/gtest.h>

#include "engine_test_util.hpp"
#include "models/engine/blas.hpp"
#include "models/engine/layers/attention.hpp"
#include "models/engine/layers/embedding.hpp"
#include "models/engine/layers/mlp.hpp"
#include "models/engine/layers/moe.hpp"
#include "models/engine/layers/norm.hpp"
#include "models/engine/layers/transformer.hpp"
#include "models/engine/loss.hpp"

namespace ibt::models {
namespace {

using test::dot;
using test::expect_gradient_matches;
using test::random_tensor;

class GradCheck : public ::testing::Test {
 protected:
  void SetUp() override { set_blas_threads(1); }
};

TEST_F(GradCheck, Embedding) {
  ModelConfig m = test::tiny_config(false);
  Embedding emb(m, 7, Shard{});
  const std::vector<int32_t> tokens{3, 1, 3, 31, 0};
  const Tensor r = random_tensor({5, m.hidden}, 1);
  auto loss = [&] {
    Tensor y;
    emb.forward(tokens, y);
    return dot(r, y);
  };
  emb.backward(tokens, r);
  expect_gradient_matches("embedding.weight", emb.table.value, emb.table.grad, loss);
  // Token 3 appears twice: its row's gradient is the sum of both output gradients.
  EXPECT_FLOAT_EQ(emb.table.grad.row(3)[0], r.row(0)[0] + r.row(2)[0]);
}

void check_norm(Norm kind) {
  NormLayer norm(kind, 8, "norm");
  norm.gain.value = random_tensor({8}, 3);
  if (kind == Norm::layernorm) norm.bias.value = random_tensor({8}, 4);
  Tensor x = random_tensor({5, 8}, 5, 2.0);
  const Tensor r = random_tensor({5, 8}, 6);
  auto loss = [&] {
    Tensor y;
    NormCache c;
    norm.forward(x, y, c);
    return dot(r, y);
  };
  Tensor y, dx;
  NormCache c;
  norm.forward(x, y, c);
  norm.backward(c, r, dx);
  expect_gradient_matches("norm input", x, dx, loss);
  expect_gradient_matches("norm gain", norm.gain.value, norm.gain.grad, loss);
  if (kind == Norm::layernorm) expect_gradient_matches("norm bias", norm.bias.value, norm.bias.grad, loss);
}

TEST_F(GradCheck, RmsNorm) { check_norm(Norm::rmsnorm); }
TEST_F(GradCheck, LayerNorm) { check_norm(Norm::layernorm); }

TEST_F(GradCheck, AttentionWithGqa) {
  ModelConfig m = test::tiny_config(false);  // 4 query heads share 2 KV heads
  SelfAttention attn(m, 11, 0, Shard{});
  // Larger weights than the 0.02 init so the softmax is far from uniform.
  for (Param* p : attn.params()) p->value = random_tensor(p->value.shape, hash_name(p->name), 0.3);
  const int batch = 2, seq = 5;
  Tensor x = random_tensor({batch * seq, m.hidden}, 12);
  const Tensor r = random_tensor({batch * seq, m.hidden}, 13);
  auto loss = [&] {
    Tensor y;
    AttentionCache c;
    attn.forward(x, batch, seq, y, c);
    return dot(r, y);
  };
  Tensor y, dx;
  AttentionCache c;
  attn.forward(x, batch, seq, y, c);
  attn.backward(c, batch, seq, r, dx);
  expect_gradient_matches("attention input", x, dx, loss);
  for (Param* p : attn.params()) expect_gradient_matches(p->name, p->value, p->grad, loss);
}

TEST_F(GradCheck, AttentionIsCausal) {
  ModelConfig m = test::tiny_config(false);
  SelfAttention attn(m, 11, 0, Shard{});
  const int seq = 5;
  Tensor x = random_tensor({seq, m.hidden}, 12);
  Tensor y1, y2;
  AttentionCache c;
  attn.forward(x, 1, seq, y1, c);
  for (int64_t j = 0; j < m.hidden; ++j) x.row(seq - 1)[j] += 1.0f;  // change only the last token
  attn.forward(x, 1, seq, y2, c);
  for (int t = 0; t < seq - 1; ++t)
    for (int64_t j = 0; j < m.hidden; ++j) EXPECT_EQ(y1.row(t)[j], y2.row(t)[j]) << "token " << t;
  EXPECT_NE(y1.row(seq - 1)[0], y2.row(seq - 1)[0]);
}

void check_mlp(Activation act) {
  Mlp mlp(MlpShape{8, 12, act}, 21, "mlp.", Shard{}, 0.5, 0.5);
  Tensor x = random_tensor({6, 8}, 22);
  const Tensor r = random_tensor({6, 8}, 23);
  auto loss = [&] {
    Tensor y;
    MlpCache c;
    mlp.forward(x, y, c);
    return dot(r, y);
  };
  Tensor y, dx;
  MlpCache c;
  mlp.forward(x, y, c);
  mlp.backward(c, r, dx);
  expect_gradient_matches("mlp input", x, dx, loss);
  for (Param* p : mlp.params()) expect_gradient_matches(p->name, p->value, p->grad, loss);
}

TEST_F(GradCheck, MlpGelu) { check_mlp(Activation::gelu); }
TEST_F(GradCheck, MlpSwiglu) { check_mlp(Activation::swiglu); }

TEST_F(GradCheck, GeluMatchesErfFormWithinApproximation) {
  for (float x : {-3.0f, -1.0f, -0.1f, 0.0f, 0.5f, 2.0f})
    EXPECT_NEAR(gelu(x), 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))), 1e-3) << x;
}

TEST_F(GradCheck, MoeLayerWithAuxLoss) {
  ModelConfig m = test::tiny_config(true);
  MoeLayer moe(m, 31, 1, Shard{}, Shard{});
  for (Param* p : moe.params()) p->value = random_tensor(p->value.shape, hash_name(p->name), 0.4);
  const int seq = 6;
  Tensor x = random_tensor({2 * seq, m.hidden}, 32);
  const Tensor r = random_tensor({2 * seq, m.hidden}, 33);
  const double aux_w = 0.5;
  MoeCache c0;
  Tensor y;
  moe.forward(x, seq, y, c0);
  const std::vector<int32_t> selection = c0.routing.expert;
  bool selection_stable = true;
  auto loss = [&] {
    Tensor out;
    MoeCache c;
    moe.forward(x, seq, out, c);
    // Top-k is piecewise constant: the check is only valid while no perturbation
    // changes which experts are selected.
    if (c.routing.expert != selection) selection_stable = false;
    return dot(r, out) + aux_w * moe.balance_loss_sum(c.routing, seq);
  };
  Tensor dx;
  moe.backward(c0, seq, r, aux_w, dx);
  expect_gradient_matches("moe input", x, dx, loss, 2e-3);
  for (Param* p : moe.params()) expect_gradient_matches(p->name, p->value, p->grad, loss, 2e-3);
  EXPECT_TRUE(selection_stable) << "a perturbation changed the top-k selection; pick a smaller eps";
}

TEST_F(GradCheck, LmHeadAndCrossEntropy) {
  ModelConfig m = test::tiny_config(false);
  LmHead head(m, 41, Shard{});
  head.weight().value = random_tensor(head.weight().value.shape, 42, 0.3);
  Tensor x = random_tensor({5, m.hidden}, 43);
  const std::vector<int32_t> targets{0, 5, 31, 7, 7};
  const float scale = 0.2f;
  auto loss = [&] {
    Tensor logits, d;
    head.forward(x, logits);
    return scale * cross_entropy(logits, targets, scale, d);
  };
  Tensor logits, d_logits, dx;
  head.forward(x, logits);
  cross_entropy(logits, targets, scale, d_logits);
  head.backward(x, d_logits, dx);
  expect_gradient_matches("head input", x, dx, loss);
  expect_gradient_matches("lm_head.weight", head.weight().value, head.weight().grad, loss);
}

TEST_F(GradCheck, CrossEntropyValue) {
  // Two logits rows with known softmax: loss = log(sum exp) - target logit.
  Tensor logits({2, 3});
  logits.data = {0.0f, 0.0f, 0.0f, 1.0f, 2.0f, 3.0f};
  Tensor d;
  const double l = cross_entropy(logits, {1, 2}, 1.0f, d);
  const double expect = std::log(3.0) + (std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0);
  EXPECT_NEAR(l, expect, 1e-6);
  EXPECT_NEAR(d.row(0)[1], 1.0 / 3 - 1, 1e-6);
}

// The whole model end to end: every parameter, through every layer and the loss.
void check_transformer(ModelConfig m) {
  Transformer model(m, 51);
  for (Param* p : model.params())
    if (p->decay) p->value = random_tensor(p->value.shape, hash_name(p->name), 0.2);
  const int seqs = 2;
  Batch mb;
  mb.sequences = seqs;
  mb.seq_len = m.seq_len;
  for (int i = 0; i < seqs * m.seq_len; ++i) {
    mb.inputs.push_back(static_cast<int32_t>(mix64(i) % m.vocab));
    mb.targets.push_back(static_cast<int32_t>(mix64(i + 1000) % m.vocab));
  }
  LossScale scale{1.0f / (seqs * m.seq_len), m.aux_loss_coeff / seqs};
  IdentityTp tp;
  auto loss = [&] {
    StageCache c;
    Tensor out;
    const MicrobatchLoss l = model.forward(mb, nullptr, out, c, tp);
    return l.ce_sum * scale.ce_per_token + l.balance_sum * scale.aux_per_sequence;
  };
  StageCache c;
  Tensor out, d_in;
  model.forward(mb, nullptr, out, c, tp);
  model.backward(c, nullptr, scale, d_in, tp);
  for (Param* p : model.params()) expect_gradient_matches(p->name, p->value, p->grad, loss, 1e-2, 1, 3e-2);
}

TEST_F(GradCheck, WholeDenseTransformer) { check_transformer(test::tiny_config(false)); }

TEST_F(GradCheck, WholeDenseTransformerLayerNormGeluTied) {
  ModelConfig m = test::tiny_config(false);
  m.norm = Norm::layernorm;
  m.activation = Activation::gelu;
  m.tied_embeddings = true;
  check_transformer(m);
}

// Parallel attention+MLP blocks (GPT-J: one LayerNorm, GELU): the serial reference
// uses the same block, so finite differences are its independent check. (Not MoE: a
// whole-model perturbation flips top-k routing, which has no derivative.)
TEST_F(GradCheck, WholeParallelBlockTransformer) {
  ModelConfig m = test::tiny_config(false);
  m.parallel_block = true;
  m.norm = Norm::layernorm;
  m.activation = Activation::gelu;
  check_transformer(m);
}

}  // namespace
}  // namespace ibt::models
