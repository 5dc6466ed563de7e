// --check element by element (models/engine/copy_check.hpp) on hand-made tensors: the
// verdicts on copies of row and column slices (exact, off by 1e-4, one element off by
// 1e-3, a replica one ulp apart, elements no rank holds, a ZeRO flat shard, a name the
// reference lacks, a NaN), and the reseed that writes a split's weights back into the
// reference.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine_test_util.hpp"
#include "models/engine/copy_check.hpp"

namespace ibt::models {
namespace {

// A 4x6 tensor whose element i holds 1 + i (no zero: relative differences are defined).
using test::counting;

Param full_param(const std::string& name) {
  Param p = make_param(name, counting({4, 6}), true);
  p.grad = counting({4, 6});
  for (float& g : p.grad.data) g *= 0.5f;
  return p;
}

// The copies of w that a 2-way row split holds, rank r of `ranks` each holding the
// slice of rank r % 2 (so ranks 2 and 3 are replicas of 0 and 1).
std::vector<TensorCopy> row_split_copies(const Param& ref, bool grad, int ranks) {
  std::vector<TensorCopy> out;
  for (int r = 0; r < ranks; ++r) {
    Param shard = make_shard(ref.name, ref.value, 0, 2 * (r % 2), 2, true);
    shard.grad = slice_rows(ref.grad, 2 * (r % 2), 2);
    TensorCopy c = copy_of(shard, grad);
    c.rank = r;
    c.host = "node" + std::to_string(r / 2);
    out.push_back(c);
  }
  return out;
}

std::vector<TensorCopy> both(const Param& ref, int ranks) {
  std::vector<TensorCopy> out = row_split_copies(ref, true, ranks);
  for (TensorCopy& c : row_split_copies(ref, false, ranks)) out.push_back(c);
  return out;
}

TEST(CopyCheck, ExactCopiesPassWithZeroMargins) {
  Param ref = full_param("layers.0.attention.wq");
  const CopyCheck c = check_copies(both(ref, 4), {&ref}, {1e-6, 1e-6}, 3, true);
  EXPECT_EQ(c.failure, "");
  EXPECT_EQ(c.weights, 0.0);
  EXPECT_EQ(c.gradients, 0.0);
}

TEST(CopyCheck, ACopyOffBy1e4FailsNamingStepTensorRankAndSlice) {
  Param ref = full_param("layers.0.attention.wq");
  std::vector<TensorCopy> copies = both(ref, 2);
  TensorCopy& w1 = copies[3];  // rank 1's weights (rows 2-3)
  ASSERT_FALSE(w1.grad);
  for (float& x : w1.data) x *= 1.0f + 1e-4f;
  const CopyCheck c = check_copies(copies, {&ref}, {1e-5, 1e-5}, 3, true);
  EXPECT_NE(c.failure.find("step 3: tensor layers.0.attention.wq (rank 1 on node0, rows 2-3 of 4): weights differ "
                           "from the serial reference by 0.0001 relative"),
            std::string::npos)
      << c.failure;
  EXPECT_NE(c.failure.find("tolerance 1e-05"), std::string::npos) << c.failure;
  EXPECT_NEAR(c.weights, 1e-4, 1e-6);
  EXPECT_EQ(c.gradients, 0.0);
  // The same copy passes a tolerance above its difference: the margin is what is compared.
  EXPECT_EQ(check_copies(copies, {&ref}, {2e-4, 1e-5}, 3, true).failure, "");
}

TEST(CopyCheck, OneElementOffIsFoundThoughTheNormBarelyMoves) {
  Param ref = full_param("w");
  std::vector<TensorCopy> copies = both(ref, 2);
  copies[0].data[0] *= 1.001f;  // rank 0's gradient, element 0 (0.5 of a slice whose norm is ~ 12)
  const CopyCheck c = check_copies(copies, {&ref}, {1e-5, 1e-5}, 0, true);
  EXPECT_NE(c.failure.find("step 0: tensor w (rank 0 on node0, rows 0-1 of 4): gradients differ"), std::string::npos)
      << c.failure;
  // The element (0.5) is 5e-4 off: 4e-5 of the slice's norm (12.7), while the norm itself
  // moves by 5e-4 * 0.5 / 12.7^2 = 1.5e-6 relative (first order in the element's share).
  EXPECT_GT(c.gradients, 1e-5);
  EXPECT_LT(c.gradients, 1e-4);
}

TEST(CopyCheck, AReplicaOneUlpApartFailsBitwiseInsideTheTolerance) {
  Param ref = full_param("norm.weight");
  std::vector<TensorCopy> copies = both(ref, 4);
  TensorCopy& w3 = copies[7];  // rank 3's weights: a replica of rank 1's rows 2-3
  ASSERT_EQ(w3.rank, 3);
  w3.data[5] = std::nextafter(w3.data[5], std::numeric_limits<float>::infinity());
  const CopyCheck c = check_copies(copies, {&ref}, {1e-3, 1e-3}, 2, true);
  EXPECT_NE(c.failure.find("step 2: tensor norm.weight (rank 3 on node1, rows 2-3 of 4): weights differ bitwise from "
                           "rank 1's copy of the same slice in 1 of 12 elements"),
            std::string::npos)
      << c.failure;
}

TEST(CopyCheck, ElementsNoRankHoldsFail) {
  Param ref = full_param("w");
  std::vector<TensorCopy> copies = both(ref, 2);
  copies.erase(copies.begin() + 1);  // rank 1's gradient rows
  const CopyCheck c = check_copies(copies, {&ref}, {1e-5, 1e-5}, 1, true);
  EXPECT_EQ(c.failure, "step 1: tensor w: 12 of 24 gradient elements are on no rank (the first: element 12)");
  // Without gradients expected, the weights alone pass.
  std::vector<TensorCopy> weights(copies.begin() + 1, copies.end());
  EXPECT_EQ(check_copies(weights, {&ref}, {1e-5, 1e-5}, 1, false).failure, "");
}

TEST(CopyCheck, AFlatShardIsMappedThroughItsSlice) {
  // A ZeRO shard: local elements 4-9 of rank 1's column slice (columns 3-5).
  Param ref = full_param("w");
  Param shard = make_shard("w", ref.value, 1, 3, 3, true);
  TensorCopy c = copy_of(shard, false, 4, shard.value.ptr() + 4, 6);
  c.rank = 1;
  EXPECT_EQ(compare_copy(c, ref.value).relative, 0.0);
  EXPECT_EQ(describe_copy(c), "elements 4-9 of columns 3-5 of 6");
  c.data[0] += 1.0f;
  EXPECT_GT(compare_copy(c, ref.value).relative, 0.0);
  c.first = 8;  // elements 8-13 of a 12-element slice
  EXPECT_THROW(compare_copy(c, ref.value), std::out_of_range);
}

TEST(CopyCheck, UnknownTensorsAndNaNsFail) {
  Param ref = full_param("w");
  std::vector<TensorCopy> copies = both(ref, 2);
  TensorCopy extra = copies[0];
  extra.name = "v";
  copies.push_back(extra);
  EXPECT_NE(check_copies(copies, {&ref}, {1e-5, 1e-5}, 0, true)
                .failure.find("tensor v (rank 0 on node0, rows 0-1 of "
                              "4) is not in the serial reference"),
            std::string::npos);
  copies.pop_back();
  copies[2].data[0] = std::nanf("");
  EXPECT_NE(check_copies(copies, {&ref}, {1, 1}, 0, true).failure.find("weights differ from the serial reference"),
            std::string::npos);
}

TEST(CopyCheck, ReseedWritesEveryWeightCopyAtItsPositionsAndLeavesGradients) {
  // The split's weights: rows 0-1 and 2-3 (rank 0 and 1, replicated on 2 and 3), each
  // element 10x the reference's; a ZeRO part of a column slice on top, 100x.
  Param ref = full_param("w");
  Param split = full_param("w");
  for (float& v : split.value.data) v *= 10.0f;
  std::vector<TensorCopy> copies = both(split, 4);
  Param shard = make_shard("w", split.value, 1, 3, 3, true);
  for (float& v : shard.value.data) v *= 10.0f;
  copies.push_back(copy_of(shard, false, 4, shard.value.ptr() + 4, 6));  // local 4-9 of columns 3-5
  const Tensor grads_before = ref.grad;
  reseed_reference(copies, {&ref});
  EXPECT_EQ(ref.grad.data, grads_before.data);  // gradient copies are not written
  for (int64_t row = 0; row < 4; ++row)
    for (int64_t col = 0; col < 6; ++col) {
      const float base = 10.0f * (1 + row * 6 + col);
      // The shard's local elements 4-9: row 1's columns 4-5, row 2's 3-5, row 3's 3.
      const int64_t local = row * 3 + (col - 3);
      const bool in_part = col >= 3 && local >= 4 && local <= 9;
      EXPECT_EQ(ref.value.data[row * 6 + col], in_part ? 10.0f * base : base) << row << "," << col;
    }
  // Reseeded from exact copies, a check passes with zero margins.
  EXPECT_EQ(check_copies(both(split, 2), {&split}, {1e-9, 1e-9}, 1, true).failure, "");
}

TEST(CopyCheck, ReseedRefusesACopyThatDoesNotFit) {
  Param ref = full_param("w");
  std::vector<TensorCopy> copies = both(ref, 2);
  copies.back().first = 100;
  EXPECT_THROW(reseed_reference(copies, {&ref}), std::out_of_range);
  TensorCopy stranger = both(ref, 2).back();
  stranger.name = "v";
  EXPECT_THROW(reseed_reference({stranger}, {&ref}), std::out_of_range);
}

}  // namespace
}  // namespace ibt::models
