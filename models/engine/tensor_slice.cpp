#include "models/engine/tensor_slice.hpp"

#include <stdexcept>

namespace ibt::models {

int64_t full_index(const SliceOfFull& s, const std::vector<int64_t>& local_dims, int64_t local) {
  int64_t n = 1;
  for (int64_t d : local_dims) n *= d;
  if (local < 0 || local >= n) throw std::out_of_range("full_index: element past the local tensor");
  if (s.axis < 0) {
    if (s.full_dims != local_dims) throw std::out_of_range("full_index: a whole tensor with other dims");
    return local;
  }
  const size_t axis = static_cast<size_t>(s.axis);
  if (axis >= local_dims.size() || s.full_dims.size() != local_dims.size() || s.begin < 0 ||
      s.begin + local_dims[axis] > s.full_dims[axis])
    throw std::out_of_range("full_index: the slice does not fit the full tensor");
  for (size_t i = 0; i < local_dims.size(); ++i)
    if (i != axis && local_dims[i] != s.full_dims[i]) throw std::out_of_range("full_index: dims differ off the axis");
  // local = (outer * count + a) * inner + in; the full index keeps outer and in, a moves by begin.
  int64_t inner = 1;
  for (size_t i = axis + 1; i < local_dims.size(); ++i) inner *= local_dims[i];
  const int64_t count = local_dims[axis];
  const int64_t in = local % inner, a = (local / inner) % count, outer = local / inner / count;
  return (outer * s.full_dims[axis] + s.begin + a) * inner + in;
}

std::string describe_slice(const SliceOfFull& s, const std::vector<int64_t>& local_dims) {
  if (s.axis < 0 || static_cast<size_t>(s.axis) >= local_dims.size()) return "whole";
  const std::string range = std::to_string(s.begin) + "-" + std::to_string(s.begin + local_dims[s.axis] - 1) + " of " +
                            std::to_string(s.full_dims.at(static_cast<size_t>(s.axis)));
  if (s.axis == 0) return "rows " + range;
  if (s.axis == 1) return "columns " + range;
  return "indices " + range + " along axis " + std::to_string(s.axis);
}

}  // namespace ibt::models
