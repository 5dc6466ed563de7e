#pragma once
// --check element by element: every copy of every tensor that any rank holds (its TP or
// vocab slice, an EP expert, a ZeRO flat shard, every DP/CP/TP replica) set against the
// serial reference's full tensor at the positions its SliceOfFull maps it to
// (tensor_slice.hpp), and replicas of one slice against each other bit for bit. Norms
// are first-order blind to a small change of a few elements; this is not.
#include <cstdint>
#include <string>
#include <vector>

#include "models/engine/tensor.hpp"

namespace ibt::models {

// One rank's copy of (part of) a tensor at a step: its gradient as the update reads it
// (reduced over the replicas) or its value after the update.
struct TensorCopy {
  std::string name;  // the full tensor's name (TP shards and ZeRO shards share it)
  bool grad = false;
  SliceOfFull slice;                // where the rank's local tensor lies in the full one
  std::vector<int64_t> local_dims;  // the rank's local tensor
  int64_t first = 0;                // data = local flat elements [first, first + data.size()): a ZeRO shard's part
  std::vector<float> data;
  int rank = 0;      // set by the gather (copy_gather.hpp)
  std::string host;  // MPI_Get_processor_name of that rank
};

// The whole local value (grad false) or gradient of p; or local elements [first, first + n) of it from `data`.
TensorCopy copy_of(const Param& p, bool grad);
TensorCopy copy_of(const Param& p, bool grad, int64_t first, const float* data, int64_t n);

// A copy against the reference's full tensor at its mapped positions.
struct CopyDifference {
  double relative = 0;     // ||copy - ref|| / ||ref|| (0 when both are 0; inf when only ref is 0)
  double max_element = 0;  // max |copy_i - ref_i| / max |ref_i| over the copy's elements (same conventions)
};
// Throws std::out_of_range when the copy does not fit `ref` (its slice, dims or range).
CopyDifference compare_copy(const TensorCopy& c, const Tensor& ref);

// The slice in words, with a ZeRO copy's flat range: "rows 0-31 of 64", "elements
// 512-1023 of whole".
std::string describe_copy(const TensorCopy& c);

struct CopyTolerance {
  double weights = 0, gradients = 0;  // relative, on ||copy - ref|| / ||ref||
};

struct CopyCheck {
  std::string failure;                   // "" when every copy passed
  double weights = 0, gradients = 0;     // the largest relative difference of any copy (the margins)
  std::string weights_at, gradients_at;  // which copy showed it ("tensor T (rank r on H, slice)")
};

// Rank 0 after both steps: every copy against `reference` (the serial trainer's params:
// full tensors, gradients of the step and values after its update). Fails, naming step,
// tensor, rank, host and slice, on the first of (in the reference's order of tensors,
// gradients before values): a copy of a tensor the reference does not have or that does
// not fit it; a copy farther from the reference than the tolerance; a copy that differs
// in any bit from the lowest rank's copy of the same slice (replicas the split makes
// identical); elements of a reference tensor that no rank sent (when `grads` is false,
// gradient copies are neither expected nor required). The margins are over every copy.
CopyCheck check_copies(const std::vector<TensorCopy>& copies, const std::vector<Param*>& reference,
                       const CopyTolerance& tol, int step, bool grads);

// Rank 0 after a step whose copies passed check_copies: the split's weights written into
// the reference (every value copy at its mapped positions; replicas are bitwise equal, so
// the order does not matter), so that the next step of both starts from the same weights.
// Each step is then judged alone: its gradients differ from the reference's by the
// reduction order only, as at step 0, instead of inheriting the weights' drift (AdamW's
// first update amplifies rounding in the entries whose gradient is near eps). The
// optimizer moments stay each run's own; they differ by rounding, never amplified. Throws
// std::out_of_range when a copy does not fit its tensor (check_copies refuses those first).
void reseed_reference(const std::vector<TensorCopy>& copies, const std::vector<Param*>& reference);

}  // namespace ibt::models
