#pragma once
// The engine's one data type: a dense fp32 array in row-major order with a shape.
// Activations are [tokens, features]; weights follow the [out, in] convention
// (y = x · W^T), so a column-parallel shard is a contiguous block of rows.
#include <cstdint>
#include <string>
#include <vector>

namespace ibt::models {

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;

  Tensor() = default;
  explicit Tensor(std::vector<int64_t> dims);  // zero-filled

  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  int64_t rows() const { return shape.empty() ? 0 : shape.front(); }
  // Elements per row: the product of every dimension after the first.
  int64_t row_size() const;
  float* ptr() { return data.data(); }
  const float* ptr() const { return data.data(); }
  float* row(int64_t r) { return data.data() + r * row_size(); }
  const float* row(int64_t r) const { return data.data() + r * row_size(); }
  void zero();
  // Reshapes to `dims` and zero-fills (reuses the allocation when it is large enough).
  void reset(std::vector<int64_t> dims);
  // Reshapes to `dims` WITHOUT clearing, for outputs the caller overwrites entirely (a
  // GEMM with beta 0, an elementwise map). A buffer that keeps its size from one step
  // to the next is then neither reallocated nor memset: the steady state of training.
  void resize(std::vector<int64_t> dims);
};

// Where a rank's tensor lies in the full tensor of the same name, so `--check` can set
// each element of a rank's copy against the serial reference's (tensor_slice.hpp). The
// full tensor's dims and, for a shard (a TP column/row split, a vocab or KV-head slice),
// the axis it is cut along and its first index there; the count along that axis is the
// local tensor's. axis -1: the rank holds the whole tensor (PP stages, EP experts, which
// are whole tensors under their own names, and every replicated weight).
struct SliceOfFull {
  std::vector<int64_t> full_dims;
  int axis = -1;
  int64_t begin = 0;
};

// A trainable weight and its gradient (same shape). `decay` says whether AdamW's
// weight decay applies (matrices yes; norm gains and biases no, as is customary).
struct Param {
  std::string name;
  Tensor value;
  Tensor grad;
  bool decay = true;
  SliceOfFull slice;  // where `value` lies in the full tensor `name`
};
// The whole tensor `value` (slice.axis -1).
Param make_param(std::string name, Tensor value, bool decay);
// A shard of the fully initialised `full`: rows (axis 0) or columns (axis 1)
// [begin, begin + count), with the slice recorded.
Param make_shard(std::string name, const Tensor& full, int axis, int64_t begin, int64_t count, bool decay);

// Rows [begin, begin+count) and columns [begin, begin+count) of a 2-D tensor: how a
// shard takes its part of a fully initialised weight.
Tensor slice_rows(const Tensor& t, int64_t begin, int64_t count);
Tensor slice_cols(const Tensor& t, int64_t begin, int64_t count);

void add_into(Tensor& dst, const Tensor& src);  // dst += src (same size)
double sum_squares(const Tensor& t);            // in double: norms over many tensors
double sum_squares(const float* x, int64_t n);

// Which part of a tensor-parallel (or expert-parallel) group this instance is.
struct Shard {
  int index = 0;
  int count = 1;
  // [begin, begin + size) of `n` items split evenly; throws UsageError naming `what`
  // when count does not divide n.
  int64_t size_of(int64_t n, const std::string& what) const;
  int64_t begin_of(int64_t n, const std::string& what) const { return index * size_of(n, what); }
};

}  // namespace ibt::models
