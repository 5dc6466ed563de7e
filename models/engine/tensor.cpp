#include "models/engine/tensor.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <stdexcept>

#include "core/errors.hpp"

namespace ibt::models {

namespace {
int64_t product(const std::vector<int64_t>& dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
}
}  // namespace

Tensor::Tensor(std::vector<int64_t> dims) : shape(std::move(dims)), data(product(shape), 0.0f) {}

int64_t Tensor::row_size() const {
  if (shape.empty()) return 0;
  // No temporary vector: row() calls this once per row in the engine's inner loops.
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

void Tensor::zero() { std::fill(data.begin(), data.end(), 0.0f); }

void Tensor::reset(std::vector<int64_t> dims) {
  shape = std::move(dims);
  data.assign(product(shape), 0.0f);
}

void Tensor::resize(std::vector<int64_t> dims) {
  shape = std::move(dims);
  data.resize(static_cast<size_t>(product(shape)));
}

Param make_param(std::string name, Tensor value, bool decay) {
  Param p;
  p.name = std::move(name);
  p.grad = Tensor(value.shape);
  p.value = std::move(value);
  p.decay = decay;
  p.slice.full_dims = p.value.shape;
  return p;
}

Param make_shard(std::string name, const Tensor& full, int axis, int64_t begin, int64_t count, bool decay) {
  if (axis != 0 && axis != 1) throw std::out_of_range("make_shard: axis must be 0 (rows) or 1 (columns)");
  Param p =
      make_param(std::move(name), axis == 0 ? slice_rows(full, begin, count) : slice_cols(full, begin, count), decay);
  if (count == full.shape[static_cast<size_t>(axis)]) return p;  // all of it (tp 1): whole, as make_param says
  p.slice.full_dims = full.shape;
  p.slice.axis = axis;
  p.slice.begin = begin;
  return p;
}

Tensor slice_rows(const Tensor& t, int64_t begin, int64_t count) {
  if (begin < 0 || begin + count > t.rows()) throw std::out_of_range("slice_rows: rows out of range");
  std::vector<int64_t> dims = t.shape;
  dims[0] = count;
  Tensor out(dims);
  std::copy_n(t.row(begin), count * t.row_size(), out.ptr());
  return out;
}

Tensor slice_cols(const Tensor& t, int64_t begin, int64_t count) {
  if (t.shape.size() != 2 || begin < 0 || begin + count > t.shape[1])
    throw std::out_of_range("slice_cols: needs a 2-D tensor and columns in range");
  Tensor out({t.shape[0], count});
  for (int64_t r = 0; r < t.shape[0]; ++r) std::copy_n(t.row(r) + begin, count, out.row(r));
  return out;
}

void add_into(Tensor& dst, const Tensor& src) {
  if (dst.numel() != src.numel()) throw std::invalid_argument("add_into: size mismatch");
  for (int64_t i = 0; i < dst.numel(); ++i) dst.data[i] += src.data[i];
}

__attribute__((target_clones("avx2", "default"))) double sum_squares(const float* x, int64_t n) {
  // Eight independent double accumulators: the adds pipeline (and vectorise) instead of
  // waiting on one chain, and every product is exact in double, so the result differs
  // from a sequential double sum only in the order of the additions.
  constexpr int kLanes = 8;
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] += static_cast<double>(x[i + l]) * x[i + l];
  double s = 0;
  for (; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  for (double l : lane) s += l;
  return s;
}

double sum_squares(const Tensor& t) { return sum_squares(t.ptr(), t.numel()); }

int64_t Shard::size_of(int64_t n, const std::string& what) const {
  if (count < 1 || index < 0 || index >= count)
    throw UsageError("shard " + std::to_string(index) + " of " + std::to_string(count) + " is not a valid shard");
  if (n % count != 0)
    throw UsageError(what + " (" + std::to_string(n) + ") is not divisible by the shard count " +
                     std::to_string(count));
  return n / count;
}

}  // namespace ibt::models
