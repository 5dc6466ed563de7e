// The cpu executor's per-tensor figures for --check (StepStats::tensors) and its
// testing-only gradient fault (cpu_executor.hpp).
#include <map>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "models/executor/cpu_executor.hpp"
#include "models/executor/param_roles.hpp"

namespace ibt::models {

void CpuExecutor::inject_grad_fault(const std::string& name, double scale) {
  if (zero_)
    throw UsageError("--inject-grad-fault: not with --zero 2 or 3 (their gradients are reduced inside the backward)");
  // Collective: a name no rank holds would corrupt nothing and the test pass vacuously.
  int held = name == "*" ? 1 : 0;
  for (Param* p : params()) held = held || p->name == name;
  groups_->world->all_reduce(&held, &held, 1, DType::int32, ReduceOp::max);
  if (!held) throw UsageError("--inject-grad-fault: no tensor named '" + name + "' in this model");
  fault_tensor_ = name;
  fault_scale_ = scale;
}

void CpuExecutor::apply_grad_fault() {
  if (fault_tensor_.empty()) return;
  for (Param* p : params())
    if ((fault_tensor_ == "*" || p->name == fault_tensor_) && counted_in_norms(*p, groups_->coord, *groups_->tp_kv))
      for (float& g : p->grad.data) g = static_cast<float>(g * fault_scale_);
}

std::vector<TensorSums> CpuExecutor::tensor_sums(const std::vector<SquareSums>& update_sums) {
  const std::vector<Param*> ps = params();
  std::vector<TensorSums> out;
  if (zero_) {  // ZeRO-2/3: the units' slices
    std::map<std::string, double> values;
    zero_->weight_sum_squares(&values);
    for (Param* p : ps)
      if (zero_grad_sums_.count(p->name) || values.count(p->name))
        out.push_back({p->name, {zero_grad_sums_[p->name], values[p->name]}});
    return out;
  }
  for (size_t i = 0; i < ps.size(); ++i) {
    if (!counted_in_norms(*ps[i], groups_->coord, *groups_->tp_kv)) continue;
    if (optimizer_) {
      out.push_back({ps[i]->name, update_sums[i]});
    } else {  // ZeRO-1: the reduce-scattered slices' gradients, the gathered (full) values
      out.push_back({ps[i]->name, {zero_grad_sums_[ps[i]->name], sum_squares(ps[i]->value)}});
    }
  }
  // ZeRO-1: a slice's gradient may lie on a rank that does not count the full value.
  for (const auto& [name, sq] : zero_grad_sums_) {
    bool listed = false;
    for (const TensorSums& t : out) listed = listed || t.name == name;
    if (!listed && !optimizer_ && !zero_) out.push_back({name, {sq, 0.0}});
  }
  return out;
}

}  // namespace ibt::models
