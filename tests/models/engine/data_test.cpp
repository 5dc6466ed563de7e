// Deterministic init and data: values depend only on (seed, name, index) and
// (seed, step, sequence); the token-file loader reads raw ids and rejects bad files.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "core/errors.hpp"
#include "engine_test_util.hpp"
#include "models/engine/data.hpp"
#include "models/engine/init.hpp"
#include "models/engine/layers/embedding.hpp"

namespace ibt::models {
namespace {

TEST(Init, ShardSlicesEqualTheFullTensor) {
  ModelConfig m = test::tiny_config(false);
  Embedding full(m, 5, Shard{});
  Embedding half(m, 5, Shard{1, 2});
  EXPECT_EQ(half.vocab_begin(), m.vocab / 2);
  EXPECT_EQ(half.table.value.data, slice_rows(full.table.value, m.vocab / 2, m.vocab / 2).data);
}

TEST(Init, NormalIsDeterministicAndHasTheRequestedSpread) {
  const Tensor a = init_normal(1, "w", {100, 100}, 0.5);
  const Tensor b = init_normal(1, "w", {100, 100}, 0.5);
  const Tensor c = init_normal(1, "v", {100, 100}, 0.5);
  EXPECT_EQ(a.data, b.data);
  EXPECT_NE(a.data, c.data);
  double sum = 0, sq = 0;
  for (float v : a.data) sum += v, sq += static_cast<double>(v) * v;
  EXPECT_NEAR(sum / 1e4, 0.0, 0.02);
  EXPECT_NEAR(std::sqrt(sq / 1e4), 0.5, 0.02);
}

TEST(SyntheticData, FollowsTheRuleExceptForNoise) {
  SyntheticData data(256, 64, 3, 0.1);
  int64_t follows = 0, total = 0;
  for (int i = 0; i < 50; ++i) {
    const auto seq = data.sequence(0, i);
    ASSERT_EQ(seq.size(), 65u);
    for (size_t t = 1; t < seq.size(); ++t, ++total) follows += seq[t] == data.rule(seq[t - 1]);
  }
  const double frac = static_cast<double>(follows) / total;
  EXPECT_NEAR(frac, 0.9 + 0.1 / 256, 0.02);
}

TEST(SyntheticData, SequencesAreAddressableAndBatchesShift) {
  SyntheticData data(100, 8, 4);
  EXPECT_EQ(data.sequence(2, 5), data.sequence(2, 5));
  EXPECT_NE(data.sequence(2, 5), data.sequence(3, 5));
  const Batch whole = data.batch(1, 0, 4);
  const Batch part = data.batch(1, 2, 2);
  EXPECT_EQ(whole.slice(2, 2).inputs, part.inputs);
  EXPECT_EQ(whole.slice(2, 2).targets, part.targets);
  // Targets are the inputs shifted by one.
  const auto seq = data.sequence(1, 0);
  EXPECT_EQ(whole.targets[0], seq[1]);
  EXPECT_EQ(whole.inputs[1], seq[1]);
}

std::string write_file(const std::string& name, const std::vector<unsigned char>& bytes) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

TEST(TokenFile, ReadsLittleEndianUint16) {
  std::vector<unsigned char> bytes;
  for (int i = 0; i < 20; ++i) bytes.push_back(static_cast<unsigned char>(i)), bytes.push_back(i == 3 ? 1 : 0);
  const std::string path = write_file("tokens16.bin", bytes);
  TokenFileData data(path, 2, 300, 4, 2);
  EXPECT_EQ(data.tokens(), 20);
  EXPECT_EQ(data.sequence(0, 0), (std::vector<int32_t>{0, 1, 2, 256 + 3, 4}));
  EXPECT_EQ(data.sequence(0, 1), (std::vector<int32_t>{5, 6, 7, 8, 9}));
  std::remove(path.c_str());
}

void expect_usage_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    FAIL() << "expected a UsageError mentioning " << needle;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(TokenFile, RejectsBadFilesNamingTheProblem) {
  expect_usage_error([] { TokenFileData("/nonexistent/t.bin", 2, 10, 4, 1); }, "cannot be opened");
  const std::string odd = write_file("odd.bin", {1, 0, 2});
  expect_usage_error([&] { TokenFileData(odd, 2, 10, 1, 1); }, "not a multiple");
  const std::string big = write_file("big.bin", {1, 0, 0, 0, 200, 0, 0, 0});
  expect_usage_error([&] { TokenFileData(big, 4, 100, 1, 1); }, "token 1 has id 200");
  const std::string short_file = write_file("short.bin", {1, 0, 2, 0});
  expect_usage_error([&] { TokenFileData(short_file, 2, 10, 4, 1); }, "fewer than one sequence");
  for (const auto& p : {odd, big, short_file}) std::remove(p.c_str());
}

}  // namespace
}  // namespace ibt::models
