#pragma once
// Where each element of a rank's tensor lies in the full tensor (SliceOfFull, tensor.hpp):
// what `--check` needs to set a rank's copy, element by element, against the serial
// reference's full tensor, and to name the slice in its message.
#include <cstdint>
#include <string>
#include <vector>

#include "models/engine/tensor.hpp"

namespace ibt::models {

// The full tensor's flat (row-major) index of the local tensor's flat element `local`,
// the local tensor having dims `local_dims` and lying at `s`. Throws std::out_of_range
// when the slice does not fit the full dims or `local` is past the local tensor.
int64_t full_index(const SliceOfFull& s, const std::vector<int64_t>& local_dims, int64_t local);

// The slice in words: "whole", "rows 0-31 of 64", "columns 32-63 of 64" (axis > 1:
// "indices 0-3 of 8 along axis 2"); inclusive ranges, as people read them.
std::string describe_slice(const SliceOfFull& s, const std::vector<int64_t>& local_dims);

}  // namespace ibt::models
