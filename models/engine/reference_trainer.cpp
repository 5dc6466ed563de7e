#include "models/engine/reference_trainer.hpp"

#include <chrono>
#include <cmath>

#include "core/errors.hpp"

namespace ibt::models {

double l2_norm_grads(const std::vector<Param*>& params) {
  double s = 0;
  for (const Param* p : params) s += sum_squares(p->grad);
  return std::sqrt(s);
}

ReferenceTrainer::ReferenceTrainer(const ModelConfig& m, const TrainConfig& config, const DataSource& data)
    : model_config_(m), config_(config), data_(data) {
  if (config.microbatches < 1 || config.micro_batch_size < 1 || config.data_parallel < 1)
    throw UsageError("reference trainer: microbatches, micro_batch_size and dp must be at least 1");
  model_ = std::make_unique<Transformer>(m, config.seed);
  optimizer_ = std::make_unique<AdamW>(config.adam, model_->params());
}

Batch ReferenceTrainer::global_batch(int64_t step) const { return data_.batch(step, 0, config_.global_sequences()); }

StepStats ReferenceTrainer::step() {
  const auto start = std::chrono::steady_clock::now();
  const Batch batch = global_batch(step_);
  const int mbs = config_.micro_batch_size;
  const int chunks = config_.global_sequences() / mbs;
  LossScale scale;
  scale.ce_per_token = 1.0f / static_cast<float>(batch.sequences * batch.seq_len);
  scale.aux_per_sequence = model_config_.aux_loss_coeff / batch.sequences;

  StepStats stats;
  stats.step = step_;
  stats.tokens = static_cast<int64_t>(batch.sequences) * batch.seq_len;
  IdentityTp tp;
  optimizer_->zero_grad();
  double ce_sum = 0, balance_sum = 0;
  for (int i = 0; i < chunks; ++i) {
    const Batch mb = batch.slice(i * mbs, mbs);
    Tensor out, d_in;
    const MicrobatchLoss l = model_->forward(mb, nullptr, out, cache_, tp);
    model_->backward(cache_, nullptr, scale, d_in, tp);
    ce_sum += l.ce_sum;
    balance_sum += l.balance_sum;
    if (stats.moe_load.empty())
      stats.moe_load = l.moe_load;
    else
      for (size_t layer = 0; layer < l.moe_load.size(); ++layer)
        for (size_t e = 0; e < l.moe_load[layer].size(); ++e) stats.moe_load[layer][e] += l.moe_load[layer][e];
  }
  stats.loss = ce_sum / static_cast<double>(stats.tokens);
  stats.aux_loss = scale.aux_per_sequence * balance_sum;
  // Both norms from the update's pass (AdamW::step's SquareSums: the gradients it read,
  // the values it wrote), added in params() order as l2_norm_grads/values would.
  std::vector<SquareSums> sums;
  optimizer_->step(&sums);
  double grad_sq = 0, value_sq = 0;
  const std::vector<Param*> params = model_->params();
  for (size_t i = 0; i < sums.size(); ++i) stats.tensors.push_back({params[i]->name, sums[i]});
  for (const SquareSums& s : sums) {
    grad_sq += s.grad;
    value_sq += s.value;
  }
  stats.grad_norm = std::sqrt(grad_sq);
  stats.param_norm = std::sqrt(value_sq);
  const std::vector<MoeLayer*> moe = model_->moe_layers();
  for (size_t layer = 0; layer < moe.size(); ++layer) moe[layer]->update_bias(stats.moe_load[layer]);
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++step_;
  return stats;
}

}  // namespace ibt::models
