#include "models/engine/layers/transformer.hpp"

#include <stdexcept>

#include "core/errors.hpp"

namespace ibt::models {

Transformer::Transformer(const ModelConfig& m, uint64_t seed, ModelPart part) : config_(m), part_(part) {
  if (part_.end_layer < 0) part_.end_layer = m.layers;
  if (part_.first_layer < 0 || part_.first_layer > part_.end_layer || part_.end_layer > m.layers)
    throw UsageError("model " + m.name + ": layer range [" + std::to_string(part_.first_layer) + ", " +
                     std::to_string(part_.end_layer) + ") is not inside [0, " + std::to_string(m.layers) + ")");
  if (part_.has_embedding) embedding.emplace(m, seed, part_.tp);
  blocks.reserve(part_.end_layer - part_.first_layer);
  for (int l = part_.first_layer; l < part_.end_layer; ++l) blocks.emplace_back(m, seed, l, part_.tp, part_.ep);
  if (part_.has_head) {
    final_norm.emplace(m.norm, m.hidden, "final_norm");
    // A tied head on a part without the embedding (pipeline) holds its own copy of
    // the embedding table; the executor sums the two copies' gradients.
    if (m.tied_embeddings && embedding) {
      head.emplace(m, seed, part_.tp, &embedding->table);
    } else if (m.tied_embeddings) {
      Embedding copy(m, seed, part_.tp);
      head.emplace(m, seed, part_.tp, nullptr);
      head->weight().name = "embedding.weight";
      head->weight().value = copy.table.value;
    } else {
      head.emplace(m, seed, part_.tp, nullptr);
    }
  }
}

std::vector<Param*> Transformer::params() {
  std::vector<Param*> out;
  if (embedding) out.push_back(&embedding->table);
  for (TransformerBlock& b : blocks)
    for (Param* p : b.params()) out.push_back(p);
  if (final_norm)
    for (Param* p : final_norm->params()) out.push_back(p);
  if (head && !(embedding && head->tied())) out.push_back(&head->weight());
  return out;
}

int Transformer::unit_count() const { return (embedding ? 1 : 0) + static_cast<int>(blocks.size()) + (head ? 1 : 0); }

std::vector<Param*> Transformer::unit_params(int unit) {
  const int first_block = embedding ? 1 : 0;
  if (embedding && unit == 0) return {&embedding->table};
  const int b = unit - first_block;
  if (b >= 0 && b < static_cast<int>(blocks.size())) return blocks[b].params();
  if (head && unit == first_block + static_cast<int>(blocks.size())) {
    std::vector<Param*> out = final_norm->params();
    if (!(embedding && head->tied())) out.push_back(&head->weight());
    return out;
  }
  throw std::logic_error("Transformer::unit_params: no unit " + std::to_string(unit));
}

std::vector<MoeLayer*> Transformer::moe_layers() {
  std::vector<MoeLayer*> out;
  for (TransformerBlock& b : blocks)
    if (b.moe) out.push_back(&*b.moe);
  return out;
}

MicrobatchLoss Transformer::forward(const Batch& mb, const Tensor* input, Tensor& output, StageCache& c, TpReducer& tp,
                                    ExpertExchange* ep, ContextExchange* cp, UnitHooks* hooks) const {
  MicrobatchLoss loss;
  const int first_block = embedding ? 1 : 0;
  auto before = [hooks](int u) {
    if (hooks) hooks->before_forward(u);
  };
  auto after = [hooks](int u) {
    if (hooks) hooks->after_forward(u);
  };
  c.batch = mb.sequences;
  c.seq = mb.seq_len;
  c.tokens = mb.inputs;
  c.targets = mb.targets;
  Tensor x;
  if (embedding) {
    Tensor partial;
    before(0);
    embedding->forward(mb.inputs, partial);
    after(0);
    // Vocab-parallel embedding: partial rows (summed, or reduce-scattered with SP).
    if (tp.sequence_parallel())
      tp.reduce_scatter_rows(partial, x);
    else {
      tp.sum(partial);
      x = std::move(partial);
    }
  } else {
    if (!input) throw std::logic_error("Transformer::forward: a part without the embedding needs an input");
    x = *input;
  }
  c.blocks.resize(blocks.size());
  Tensor y;
  for (size_t i = 0; i < blocks.size(); ++i) {
    before(first_block + static_cast<int>(i));
    blocks[i].forward(x, c.batch, c.seq, y, c.blocks[i], tp, ep, cp);
    after(first_block + static_cast<int>(i));
    if (blocks[i].moe) {
      loss.moe_load.push_back(c.blocks[i].moe.routing.load);
      if (blocks[i].moe->uses_aux_loss())
        loss.balance_sum += blocks[i].moe->balance_loss_sum(c.blocks[i].moe.routing, c.seq);
    }
    std::swap(x, y);
  }
  if (!head) {
    output = std::move(x);
    return loss;
  }
  output = Tensor();
  const int head_unit = first_block + static_cast<int>(blocks.size());
  before(head_unit);
  if (tp.sequence_parallel()) {  // the vocab-parallel head needs every row
    Tensor local;
    final_norm->forward(x, local, c.final_norm);
    tp.all_gather_rows(local, c.normed);
  } else {
    final_norm->forward(x, c.normed, c.final_norm);
  }
  head->forward(c.normed, c.logits);
  after(head_unit);
  // Vocab-parallel softmax: global max, then global sums (loss.hpp).
  local_row_max(c.logits, c.stats.row_max);
  tp.max(c.stats.row_max);
  local_sum_exp_and_target(c.logits, c.targets, head->vocab_begin(), c.stats);
  tp.sum(c.stats.sum_exp);
  tp.sum(c.stats.target_logit);
  loss.ce_sum = loss_sum(c.stats);
  loss.tokens = static_cast<int64_t>(c.targets.size());
  return loss;
}

void Transformer::backward(StageCache& c, const Tensor* d_output, const LossScale& scale, Tensor& d_input,
                           TpReducer& tp, ExpertExchange* ep, ContextExchange* cp, UnitHooks* hooks) {
  Tensor dy, dx;
  const int first_block = embedding ? 1 : 0;
  auto before = [hooks](int u) {
    if (hooks) hooks->before_backward(u);
  };
  auto after = [hooks](int u) {
    if (hooks) hooks->after_backward(u);
  };
  if (head) {
    Tensor d_logits, d_normed;
    const int head_unit = first_block + static_cast<int>(blocks.size());
    before(head_unit);
    logits_grad(c.logits, c.targets, head->vocab_begin(), c.stats, scale.ce_per_token, d_logits);
    head->backward(c.normed, d_logits, d_normed);
    // Vocab-parallel head: partial input gradient (reduce-scattered to rows with SP).
    if (tp.sequence_parallel()) {
      Tensor local;
      tp.reduce_scatter_rows(d_normed, local);
      d_normed = std::move(local);
    } else {
      tp.sum(d_normed);
    }
    final_norm->backward(c.final_norm, d_normed, dy);
    after(head_unit);
  } else {
    if (!d_output) throw std::logic_error("Transformer::backward: a part without the head needs d_output");
    dy = *d_output;
  }
  for (size_t i = blocks.size(); i-- > 0;) {
    before(first_block + static_cast<int>(i));
    blocks[i].backward(c.blocks[i], c.batch, c.seq, dy, scale.aux_per_sequence, dx, tp, ep, cp);
    after(first_block + static_cast<int>(i));
    std::swap(dy, dx);
  }
  // The block caches stay allocated: the next microbatch using this cache reuses them.
  if (embedding) {
    if (tp.sequence_parallel()) {  // the embedding produced all rows
      Tensor full;
      tp.all_gather_rows(dy, full);
      dy = std::move(full);
    }
    before(0);
    embedding->backward(c.tokens, dy);
    after(0);
    d_input = Tensor();
  } else {
    d_input = std::move(dy);
  }
}

}  // namespace ibt::models
