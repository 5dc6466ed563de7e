// The byte form in which --check gathers tensor copies to rank 0 (copy_gather.hpp):
// what is packed comes back whole, with the sender's rank and host; a damaged buffer is
// refused, not read past.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "models/executor/copy_gather.hpp"

namespace ibt::models {
namespace {

TEST(CopyGather, PackedCopiesComeBackWithRankAndHost) {
  Tensor full({4, 6});
  for (size_t i = 0; i < full.data.size(); ++i) full.data[i] = 0.25f * static_cast<float>(i);
  const Param shard = make_shard("layers.0.mlp.w_down", full, 1, 3, 3, false);
  std::vector<TensorCopy> mine = {copy_of(shard, false), copy_of(shard, true, 2, shard.value.ptr() + 2, 5)};
  const std::vector<char> bytes = pack_copies(mine);
  std::vector<TensorCopy> back;
  unpack_copies(bytes.data(), bytes.size(), 3, "node7", back);
  ASSERT_EQ(back.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back[i].name, mine[i].name);
    EXPECT_EQ(back[i].grad, mine[i].grad);
    EXPECT_EQ(back[i].slice.full_dims, mine[i].slice.full_dims);
    EXPECT_EQ(back[i].slice.axis, 1);
    EXPECT_EQ(back[i].slice.begin, 3);
    EXPECT_EQ(back[i].local_dims, mine[i].local_dims);
    EXPECT_EQ(back[i].first, mine[i].first);
    EXPECT_EQ(back[i].data, mine[i].data);
    EXPECT_EQ(back[i].rank, 3);
    EXPECT_EQ(back[i].host, "node7");
  }
  EXPECT_EQ(describe_copy(back[1]), "elements 2-6 of columns 3-5 of 6");
}

TEST(CopyGather, ATruncatedBufferIsRefused) {
  const Param p = make_param("norm.weight", Tensor({8}), false);
  const std::vector<char> bytes = pack_copies({copy_of(p, false)});
  std::vector<TensorCopy> back;
  EXPECT_THROW(unpack_copies(bytes.data(), bytes.size() - 1, 0, "h", back), std::runtime_error);
  std::vector<char> bad = bytes;
  bad[0] = static_cast<char>(0xff);  // a name length past any sane one
  EXPECT_THROW(unpack_copies(bad.data(), bad.size(), 0, "h", back), std::runtime_error);
}

}  // namespace
}  // namespace ibt::models
