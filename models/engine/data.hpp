#pragma once
// Training data: a deterministic synthetic stream from a seed, or raw token ids from
// a file. Both address a sequence by (step, index in the global batch), so any rank
// can produce exactly its own part of the global batch without communication.
#include <cstdint>
#include <string>
#include <vector>

namespace ibt::models {

// `sequences` rows of seq_len input tokens and the next-token targets, row-major.
struct Batch {
  int sequences = 0;
  int seq_len = 0;
  std::vector<int32_t> inputs;
  std::vector<int32_t> targets;
  // Rows [first, first + count): a microbatch or a data-parallel rank's part.
  Batch slice(int first, int count) const;
};

class DataSource {
 public:
  virtual ~DataSource() = default;
  // seq_len + 1 tokens of sequence `index` of step `step`'s global batch.
  virtual std::vector<int32_t> sequence(int64_t step, int64_t index) const = 0;
  virtual std::string describe() const = 0;
  Batch batch(int64_t step, int first, int count) const;
};

// A learnable stream: each token follows its predecessor by a fixed affine rule
// next = (a * prev + c) mod vocab, except that with probability `noise` it is drawn
// uniformly instead. A model that learns the rule reaches a loss near
// noise * ln(vocab) + H(noise); the first token of each sequence is uniform.
class SyntheticData : public DataSource {
 public:
  SyntheticData(int vocab, int seq_len, uint64_t seed, double noise = 0.1);
  std::vector<int32_t> sequence(int64_t step, int64_t index) const override;
  std::string describe() const override;
  int32_t rule(int32_t prev) const;  // the deterministic successor

 private:
  int vocab_;
  int seq_len_;
  uint64_t seed_;
  double noise_;
  int64_t mul_;
  int64_t add_;
};

// Raw little-endian token ids (uint16 or uint32, no header), e.g. a tokenised corpus.
// Sequence (step, index) is the window starting at ((step * stride + index) * (seq_len+1))
// modulo the usable length, where stride is the global batch size given here.
class TokenFileData : public DataSource {
 public:
  // Throws UsageError naming the file when it is missing, empty, not a whole number of
  // tokens, shorter than one sequence, or holds an id >= vocab.
  TokenFileData(const std::string& path, int token_bytes, int vocab, int seq_len, int sequences_per_step);
  std::vector<int32_t> sequence(int64_t step, int64_t index) const override;
  std::string describe() const override;
  int64_t tokens() const { return static_cast<int64_t>(tokens_.size()); }

 private:
  std::string path_;
  int seq_len_;
  int sequences_per_step_;
  std::vector<int32_t> tokens_;
};

}  // namespace ibt::models
