#include "models/engine/data.hpp"

#include <fstream>
#include <iterator>

#include "core/errors.hpp"
#include "models/engine/init.hpp"

namespace ibt::models {

Batch Batch::slice(int first, int count) const {
  if (first < 0 || count < 0 || first + count > sequences) throw std::out_of_range("Batch::slice: rows out of range");
  Batch b;
  b.sequences = count;
  b.seq_len = seq_len;
  const auto from = static_cast<std::ptrdiff_t>(first) * seq_len;
  const auto to = from + static_cast<std::ptrdiff_t>(count) * seq_len;
  b.inputs.assign(inputs.begin() + from, inputs.begin() + to);
  b.targets.assign(targets.begin() + from, targets.begin() + to);
  return b;
}

Batch DataSource::batch(int64_t step, int first, int count) const {
  Batch b;
  b.sequences = count;
  for (int i = 0; i < count; ++i) {
    const std::vector<int32_t> seq = sequence(step, first + i);
    b.seq_len = static_cast<int>(seq.size()) - 1;
    b.inputs.insert(b.inputs.end(), seq.begin(), seq.end() - 1);
    b.targets.insert(b.targets.end(), seq.begin() + 1, seq.end());
  }
  return b;
}

SyntheticData::SyntheticData(int vocab, int seq_len, uint64_t seed, double noise)
    : vocab_(vocab), seq_len_(seq_len), seed_(seed), noise_(noise) {
  if (vocab < 2) throw UsageError("synthetic data: vocab must be at least 2");
  if (seq_len < 1) throw UsageError("synthetic data: seq_len must be at least 1");
  if (noise < 0 || noise > 1) throw UsageError("synthetic data: noise must be in [0, 1]");
  // An odd multiplier and an offset from the seed: a permutation of the vocabulary
  // when vocab is a power of two, a fixed map otherwise; learnable either way.
  mul_ = 2 * static_cast<int64_t>(mix64(seed ^ 0x5eed) % 64) + 3;
  add_ = static_cast<int64_t>(mix64(seed ^ 0xadd) % static_cast<uint64_t>(vocab));
}

int32_t SyntheticData::rule(int32_t prev) const { return static_cast<int32_t>((mul_ * prev + add_) % vocab_); }

std::vector<int32_t> SyntheticData::sequence(int64_t step, int64_t index) const {
  const uint64_t key =
      mix64(seed_ ^ mix64(static_cast<uint64_t>(step) * 0x100000001b3ULL + static_cast<uint64_t>(index)));
  std::vector<int32_t> seq(seq_len_ + 1);
  auto uniform_token = [&](uint64_t i) { return static_cast<int32_t>(uniform01(key, 2 * i + 1) * vocab_) % vocab_; };
  seq[0] = uniform_token(0);
  for (int i = 1; i <= seq_len_; ++i)
    seq[i] = uniform01(key, 2 * static_cast<uint64_t>(i)) < noise_ ? uniform_token(i) : rule(seq[i - 1]);
  return seq;
}

std::string SyntheticData::describe() const {
  return "synthetic(seed=" + std::to_string(seed_) + ", noise=" + std::to_string(noise_) + ", next=(" +
         std::to_string(mul_) + "*prev+" + std::to_string(add_) + ") mod " + std::to_string(vocab_) + ")";
}

TokenFileData::TokenFileData(const std::string& path, int token_bytes, int vocab, int seq_len, int sequences_per_step)
    : path_(path), seq_len_(seq_len), sequences_per_step_(sequences_per_step) {
  if (token_bytes != 2 && token_bytes != 4)
    throw UsageError("token file " + path + ": token size must be 2 (uint16) or 4 (uint32) bytes");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("token file " + path + ": cannot be opened");
  const std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) throw UsageError("token file " + path + ": is empty");
  if (bytes.size() % token_bytes != 0)
    throw UsageError("token file " + path + ": size " + std::to_string(bytes.size()) +
                     " is not a multiple of the token size " + std::to_string(token_bytes));
  tokens_.resize(bytes.size() / token_bytes);
  for (size_t i = 0; i < tokens_.size(); ++i) {
    uint32_t v = 0;
    for (int b = token_bytes - 1; b >= 0; --b) v = (v << 8) | bytes[i * token_bytes + b];
    if (v >= static_cast<uint32_t>(vocab))
      throw UsageError("token file " + path + ": token " + std::to_string(i) + " has id " + std::to_string(v) +
                       ", not below the model's vocab " + std::to_string(vocab));
    tokens_[i] = static_cast<int32_t>(v);
  }
  if (tokens_.size() < static_cast<size_t>(seq_len) + 1)
    throw UsageError("token file " + path + ": " + std::to_string(tokens_.size()) +
                     " tokens, fewer than one sequence of seq_len + 1 = " + std::to_string(seq_len + 1));
}

std::vector<int32_t> TokenFileData::sequence(int64_t step, int64_t index) const {
  const int64_t window = seq_len_ + 1;
  const int64_t starts = static_cast<int64_t>(tokens_.size()) - window + 1;
  const int64_t start = ((step * sequences_per_step_ + index) * window) % starts;
  return std::vector<int32_t>(tokens_.begin() + start, tokens_.begin() + start + window);
}

std::string TokenFileData::describe() const {
  return "token file " + path_ + " (" + std::to_string(tokens_.size()) + " tokens)";
}

}  // namespace ibt::models
