#include "models/training/train_check.hpp"

#include <cmath>
#include <cstdio>
#include <map>

#include "core/errors.hpp"

namespace ibt::suites {

using models::StepStats;
using models::TensorSums;

namespace {

bool close(double got, double want, double rtol) { return std::abs(got - want) <= rtol * std::abs(want); }

std::string difference(int step, const std::string& what, double got, double want, double rtol) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "step %d: %s %.9g differs from the serial reference's %.9g (tolerance %.3g relative)",
                step, what.c_str(), got, want, rtol);
  return buf;
}

std::string first_tensor_difference(const StepStats& got, const StepStats& ref, const CheckTolerance& tol, int step) {
  std::map<std::string, const TensorSums*> by_name;
  for (const TensorSums& t : got.tensors) by_name[t.name] = &t;
  for (const TensorSums& r : ref.tensors) {
    const auto it = by_name.find(r.name);
    if (it == by_name.end())
      return "step " + std::to_string(step) + ": tensor " + r.name + " of the serial reference is on no rank";
    const models::SquareSums& g = it->second->sums;
    // A norm's relative difference is at most its copies' (the triangle inequality): the
    // element-wise tolerances bound it.
    const double grad_tol = tol.gradients;
    if (!close(std::sqrt(g.grad), std::sqrt(r.sums.grad), grad_tol))
      return difference(step, "tensor " + r.name + " gradient norm", std::sqrt(g.grad), std::sqrt(r.sums.grad),
                        grad_tol);
    if (!close(std::sqrt(g.value), std::sqrt(r.sums.value), tol.weights))
      return difference(step, "tensor " + r.name + " value norm", std::sqrt(g.value), std::sqrt(r.sums.value),
                        tol.weights);
    by_name.erase(it);
  }
  if (!by_name.empty())
    return "step " + std::to_string(step) + ": tensor " + by_name.begin()->first + " is not in the serial reference";
  return "";
}

}  // namespace

GradFault parse_grad_fault(const std::string& spec) {
  if (spec.empty()) return {};
  const size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size())
    throw UsageError("--inject-grad-fault '" + spec + "': expected TENSOR:SCALE (e.g. layers.0.attn.wq.weight:0.5)");
  const std::string number = spec.substr(colon + 1);
  char* end = nullptr;
  const double scale = std::strtod(number.c_str(), &end);
  if (*end != '\0' || !std::isfinite(scale))
    throw UsageError("--inject-grad-fault '" + spec + "': SCALE '" + number + "' is not a finite number");
  return {spec.substr(0, colon), scale};
}

std::vector<TensorSums> gather_tensor_sums(const std::vector<TensorSums>& mine, MPI_Comm world) {
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  // Names as one '\n'-separated text, the sums as (grad, value) pairs.
  std::string names;
  std::vector<double> sums;
  for (const TensorSums& t : mine) {
    names += t.name + '\n';
    sums.push_back(t.sums.grad);
    sums.push_back(t.sums.value);
  }
  int counts[2] = {static_cast<int>(names.size()), static_cast<int>(sums.size())};
  std::vector<int> all_counts(2 * static_cast<size_t>(size));
  MPI_Gather(counts, 2, MPI_INT, all_counts.data(), 2, MPI_INT, 0, world);
  std::vector<int> name_counts(size), sum_counts(size), name_at(size, 0), sum_at(size, 0);
  for (int r = 0; r < size; ++r) {
    name_counts[r] = all_counts[2 * r];
    sum_counts[r] = all_counts[2 * r + 1];
    if (r > 0) {
      name_at[r] = name_at[r - 1] + name_counts[r - 1];
      sum_at[r] = sum_at[r - 1] + sum_counts[r - 1];
    }
  }
  const bool root = rank == 0;
  std::string all_names(root ? static_cast<size_t>(name_at[size - 1] + name_counts[size - 1]) : 0, '\0');
  std::vector<double> all_sums(root ? static_cast<size_t>(sum_at[size - 1] + sum_counts[size - 1]) : 0);
  MPI_Gatherv(names.data(), counts[0], MPI_CHAR, all_names.data(), name_counts.data(), name_at.data(), MPI_CHAR, 0,
              world);
  MPI_Gatherv(sums.data(), counts[1], MPI_DOUBLE, all_sums.data(), sum_counts.data(), sum_at.data(), MPI_DOUBLE, 0,
              world);
  std::vector<TensorSums> out;
  if (!root) return out;
  std::map<std::string, size_t> index;
  size_t at = 0, k = 0;
  while (at < all_names.size()) {
    const size_t end = all_names.find('\n', at);
    const std::string name = all_names.substr(at, end - at);
    at = end + 1;
    auto [it, fresh] = index.emplace(name, out.size());
    if (fresh) out.push_back({name, {}});
    out[it->second].sums.grad += all_sums[2 * k];
    out[it->second].sums.value += all_sums[2 * k + 1];
    ++k;
  }
  return out;
}

std::string first_difference(const StepStats& got, const StepStats& ref, const CheckTolerance& tol, int step) {
  if (!close(got.loss, ref.loss, tol.loss)) return difference(step, "loss", got.loss, ref.loss, tol.loss);
  // Tensor by tensor before the global norms, so a failure names the tensor.
  const std::string tensor = got.tensors.empty() ? "" : first_tensor_difference(got, ref, tol, step);
  if (!tensor.empty()) return tensor;
  if (!close(got.grad_norm, ref.grad_norm, tol.grad_norm))
    return difference(step, "grad_norm", got.grad_norm, ref.grad_norm, tol.grad_norm);
  if (!close(got.param_norm, ref.param_norm, tol.param_norm))
    return difference(step, "param_norm", got.param_norm, ref.param_norm, tol.param_norm);
  return "";
}
}  // namespace ibt::suites
