// Where each element of a rank's shard lies in the full tensor (models/engine/tensor_slice.hpp):
// a row slice, a column slice, the whole tensor, and slices that do not fit.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "engine_test_util.hpp"
#include "models/engine/tensor_slice.hpp"

namespace ibt::models {
namespace {

// Element i holds 1 + i.
using test::counting;

TEST(TensorSlice, RowSliceMapsToItsRows) {
  const Tensor full = counting({4, 6});
  const Param p = make_shard("w", full, 0, 2, 2, true);  // rows 2-3
  EXPECT_EQ(p.slice.axis, 0);
  EXPECT_EQ(p.slice.full_dims, (std::vector<int64_t>{4, 6}));
  for (int64_t i = 0; i < p.value.numel(); ++i) {
    const int64_t at = full_index(p.slice, p.value.shape, i);
    EXPECT_EQ(at, 12 + i);
    EXPECT_EQ(p.value.data[static_cast<size_t>(i)], full.data[static_cast<size_t>(at)]);
  }
  EXPECT_EQ(describe_slice(p.slice, p.value.shape), "rows 2-3 of 4");
}

TEST(TensorSlice, ColumnSliceMapsToItsColumns) {
  const Tensor full = counting({4, 6});
  const Param p = make_shard("w", full, 1, 3, 3, true);  // columns 3-5
  // Local [r, c] is full [r, 3 + c]: local element 4 = [1, 1] = full [1, 4] = 10.
  EXPECT_EQ(full_index(p.slice, p.value.shape, 4), 10);
  for (int64_t i = 0; i < p.value.numel(); ++i)
    EXPECT_EQ(p.value.data[static_cast<size_t>(i)],
              full.data[static_cast<size_t>(full_index(p.slice, p.value.shape, i))]);
  EXPECT_EQ(describe_slice(p.slice, p.value.shape), "columns 3-5 of 6");
}

TEST(TensorSlice, AShardOfEverythingIsTheWholeTensor) {
  const Param p = make_shard("embedding.weight", counting({4, 6}), 0, 0, 4, true);  // tp 1
  EXPECT_EQ(p.slice.axis, -1);
  EXPECT_EQ(describe_slice(p.slice, p.value.shape), "whole");
}

TEST(TensorSlice, WholeTensorAndBadSlices) {
  const Param p = make_param("g", counting({6}), false);
  EXPECT_EQ(full_index(p.slice, p.value.shape, 5), 5);
  EXPECT_EQ(describe_slice(p.slice, p.value.shape), "whole");
  EXPECT_THROW(full_index(p.slice, p.value.shape, 6), std::out_of_range);
  SliceOfFull past{{4, 6}, 0, 3};  // rows 3-4 of 4
  EXPECT_THROW(full_index(past, {2, 6}, 0), std::out_of_range);
  SliceOfFull other{{5, 6}, 1, 0};  // 4 rows of a 5-row tensor: off-axis dims differ
  EXPECT_THROW(full_index(other, {4, 2}, 0), std::out_of_range);
}

}  // namespace
}  // namespace ibt::models
