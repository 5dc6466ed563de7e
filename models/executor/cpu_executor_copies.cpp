// The cpu executor's tensor copies for --check (StepStats::copies, copy_check.hpp):
// everything a rank holds, replicas included, so rank 0 can compare each element with the
// serial reference and replicas with each other.
#include "models/executor/cpu_executor.hpp"

namespace ibt::models {

void CpuExecutor::take_grad_copies() {
  if (!tensor_copies_) return;
  if (zero_) {
    zero_->take_copies(true, copies_);
    return;
  }
  // (ZeRO-1 took its reduce-scattered slices; its .grad holds the unreduced local sums.)
  if (split_.zero >= 1) return;
  for (Param* p : params()) copies_.push_back(copy_of(*p, true));
}

void CpuExecutor::take_value_copies() {
  if (!tensor_copies_) return;
  if (zero_) {
    zero_->take_copies(false, copies_);
    return;
  }
  for (Param* p : params()) copies_.push_back(copy_of(*p, false));
}

}  // namespace ibt::models
