#include "models/engine/copy_check.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

#include "models/engine/tensor_slice.hpp"

namespace ibt::models {

namespace {

const char* quantity(bool grad) { return grad ? "gradients" : "weights"; }

// 0/0 = 0 (an expert no token reached has a zero gradient in both), x/0 = inf.
double ratio(double diff, double ref) {
  if (ref > 0) return diff / ref;
  return diff > 0 ? std::numeric_limits<double>::infinity() : 0.0;
}

std::string copy_label(const TensorCopy& c) {
  std::string s = "tensor " + c.name + " (rank " + std::to_string(c.rank);
  if (!c.host.empty()) s += " on " + c.host;
  return s + ", " + describe_copy(c) + ")";
}

std::string sci(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", x);
  return buf;
}

// Copies of the same slice and range: what the split makes bitwise identical.
using SliceKey = std::tuple<bool, int, int64_t, std::vector<int64_t>, int64_t, size_t>;
SliceKey key_of(const TensorCopy& c) {
  return {c.grad, c.slice.axis, c.slice.begin, c.local_dims, c.first, c.data.size()};
}

// The first failure among one tensor's copies of one quantity ("" when none); adds to the margin.
std::string check_tensor(const std::vector<const TensorCopy*>& mine, const Param& ref, bool grad,
                         const CopyTolerance& tol, int step, double& margin, std::string& margin_at) {
  const Tensor& full = grad ? ref.grad : ref.value;
  const double limit = grad ? tol.gradients : tol.weights;
  const std::string at = "step " + std::to_string(step) + ": ";
  std::string failure;
  std::map<SliceKey, const TensorCopy*> first_of_slice;
  std::vector<char> held(full.data.size(), 0);
  for (const TensorCopy* c : mine) {
    CopyDifference d;
    try {
      d = compare_copy(*c, full);
    } catch (const std::out_of_range&) {
      return at + copy_label(*c) + ": does not fit the serial reference's tensor of " +
             std::to_string(full.data.size()) + " elements";
    }
    if (d.relative > margin) {
      margin = d.relative;
      margin_at = copy_label(*c);
    }
    if (failure.empty() && !(d.relative <= limit))
      failure = at + copy_label(*c) + ": " + quantity(grad) + " differ from the serial reference by " +
                sci(d.relative) + " relative (largest element " + sci(d.max_element) +
                " of the slice's largest; tolerance " + sci(limit) + ")";
    auto [it, fresh] = first_of_slice.emplace(key_of(*c), c);
    if (!fresh && failure.empty() && std::memcmp(c->data.data(), it->second->data.data(), 4 * c->data.size()) != 0) {
      size_t differ = 0;
      for (size_t i = 0; i < c->data.size(); ++i)
        differ += std::memcmp(&c->data[i], &it->second->data[i], 4) != 0 ? 1 : 0;
      failure = at + copy_label(*c) + ": " + quantity(grad) + " differ bitwise from rank " +
                std::to_string(it->second->rank) + "'s copy of the same slice in " + std::to_string(differ) + " of " +
                std::to_string(c->data.size()) + " elements (" + sci(d.relative) +
                " relative from the serial reference): replicas of a correct split are identical";
    }
    for (size_t i = 0; i < c->data.size(); ++i)
      held[static_cast<size_t>(full_index(c->slice, c->local_dims, c->first + static_cast<int64_t>(i)))] = 1;
  }
  if (!failure.empty()) return failure;
  size_t missing = 0, first_missing = 0;
  for (size_t i = held.size(); i-- > 0;)
    if (!held[i]) {
      ++missing;
      first_missing = i;
    }
  if (missing > 0)
    return at + "tensor " + ref.name + ": " + std::to_string(missing) + " of " + std::to_string(held.size()) + " " +
           (grad ? "gradient" : "weight") + " elements are on no rank (the first: element " +
           std::to_string(first_missing) + ")";
  return "";
}

}  // namespace

TensorCopy copy_of(const Param& p, bool grad) {
  const Tensor& t = grad ? p.grad : p.value;
  return copy_of(p, grad, 0, t.data.data(), static_cast<int64_t>(t.data.size()));
}

TensorCopy copy_of(const Param& p, bool grad, int64_t first, const float* data, int64_t n) {
  TensorCopy c;
  c.name = p.name;
  c.grad = grad;
  c.slice = p.slice;
  c.local_dims = p.value.shape;  // (kept by ZeRO-3 when it frees the weights)
  c.first = first;
  c.data.assign(data, data + n);
  return c;
}

CopyDifference compare_copy(const TensorCopy& c, const Tensor& ref) {
  double diff_sq = 0, ref_sq = 0, max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < c.data.size(); ++i) {
    const int64_t at = full_index(c.slice, c.local_dims, c.first + static_cast<int64_t>(i));
    if (at >= ref.numel()) throw std::out_of_range("compare_copy: past the reference tensor");
    const double r = ref.data[static_cast<size_t>(at)], d = static_cast<double>(c.data[i]) - r;
    diff_sq += d * d;
    ref_sq += r * r;
    max_diff = std::max(max_diff, std::abs(d));
    max_ref = std::max(max_ref, std::abs(r));
  }
  // NaN in a copy: a NaN relative difference, which no tolerance admits.
  return {ratio(std::sqrt(diff_sq), std::sqrt(ref_sq)), ratio(max_diff, max_ref)};
}

std::string describe_copy(const TensorCopy& c) {
  std::string slice = describe_slice(c.slice, c.local_dims);
  int64_t n = 1;
  for (int64_t d : c.local_dims) n *= d;
  if (c.first == 0 && static_cast<int64_t>(c.data.size()) == n) return slice;
  return "elements " + std::to_string(c.first) + "-" +
         std::to_string(c.first + static_cast<int64_t>(c.data.size()) - 1) + " of " + slice;
}

CopyCheck check_copies(const std::vector<TensorCopy>& copies, const std::vector<Param*>& reference,
                       const CopyTolerance& tol, int step, bool grads) {
  CopyCheck out;
  std::map<std::string, std::vector<const TensorCopy*>> by_name[2];  // [grad]
  std::map<std::string, const Param*> known;
  for (const Param* p : reference) known[p->name] = p;
  for (const TensorCopy& c : copies) {
    if (!known.count(c.name) && out.failure.empty())
      out.failure = "step " + std::to_string(step) + ": " + copy_label(c) + " is not in the serial reference";
    by_name[c.grad ? 1 : 0][c.name].push_back(&c);
  }
  for (const Param* p : reference)
    for (const bool grad : {true, false}) {
      if (grad && !grads) continue;
      const std::string f = check_tensor(by_name[grad ? 1 : 0][p->name], *p, grad, tol, step,
                                         grad ? out.gradients : out.weights, grad ? out.gradients_at : out.weights_at);
      if (out.failure.empty()) out.failure = f;
    }
  return out;
}

void reseed_reference(const std::vector<TensorCopy>& copies, const std::vector<Param*>& reference) {
  std::map<std::string, Param*> by_name;
  for (Param* p : reference) by_name[p->name] = p;
  for (const TensorCopy& c : copies) {
    if (c.grad) continue;
    const auto it = by_name.find(c.name);
    if (it == by_name.end()) throw std::out_of_range("reseed_reference: " + c.name + " is not in the reference");
    Tensor& full = it->second->value;
    for (size_t i = 0; i < c.data.size(); ++i) {
      const int64_t at = full_index(c.slice, c.local_dims, c.first + static_cast<int64_t>(i));
      if (at >= full.numel()) throw std::out_of_range("reseed_reference: past the reference tensor " + c.name);
      full.data[static_cast<size_t>(at)] = c.data[i];
    }
  }
}

}  // namespace ibt::models
