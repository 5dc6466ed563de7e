#include "models/engine/layers/embedding.hpp"

#include <algorithm>

#include "models/engine/init.hpp"

namespace ibt::models {

Embedding::Embedding(const ModelConfig& m, uint64_t seed, Shard tp) : hidden_(m.hidden) {
  const int64_t rows = tp.size_of(m.vocab, "vocab");
  vocab_begin_ = tp.begin_of(m.vocab, "vocab");
  const Tensor full = init_normal(seed, "embedding.weight", {m.vocab, m.hidden}, init_std(m));
  table = make_shard("embedding.weight", full, 0, vocab_begin_, rows, true);
}

void Embedding::forward(const std::vector<int32_t>& tokens, Tensor& out) const {
  out.reset({static_cast<int64_t>(tokens.size()), hidden_});
  for (size_t t = 0; t < tokens.size(); ++t) {
    const int64_t local = tokens[t] - vocab_begin_;
    if (local >= 0 && local < table.value.rows())
      std::copy_n(table.value.row(local), hidden_, out.row(static_cast<int64_t>(t)));
  }
}

void Embedding::backward(const std::vector<int32_t>& tokens, const Tensor& d_out) {
  for (size_t t = 0; t < tokens.size(); ++t) {
    const int64_t local = tokens[t] - vocab_begin_;
    if (local < 0 || local >= table.value.rows()) continue;
    float* g = table.grad.row(local);
    const float* d = d_out.row(static_cast<int64_t>(t));
    for (int64_t j = 0; j < hidden_; ++j) g[j] += d[j];
  }
}

}  // namespace ibt::models
