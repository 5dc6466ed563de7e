#pragma once
// ibt train --check: each step of the split run against the single-process fp32
// reference (models/engine/reference_trainer.hpp): the loss, the global gradient and
// parameter norms, and tensor by tensor the norms of every parameter's gradient and
// value. The executor's per-tensor figures are each rank's share of a tensor (TP
// slices, PP stages, EP experts, ZeRO shards, each element counted once over the
// world); summed by name on rank 0 they are the full tensor's sums of squares.
#include <mpi.h>

#include <string>
#include <vector>

#include "models/engine/check_tolerance.hpp"
#include "models/engine/reference_trainer.hpp"

namespace ibt::suites {

// Relative tolerances against the fp32 serial reference, by how the executor computes:
// the one table, in models/engine/check_tolerance.hpp.
using models::check_tolerance;
using models::CheckTolerance;

// --inject-grad-fault TENSOR:SCALE (tests only): which tensor ("*" = all) and the factor.
struct GradFault {
  std::string tensor;  // "" = no fault
  double scale = 1.0;
};
// Throws UsageError naming the problem ("TENSOR:SCALE", SCALE a finite number).
GradFault parse_grad_fault(const std::string& spec);

// Collective over world: every rank's shares summed by tensor name; rank 0 gets the
// full tensors' sums (in the order names first appear, by rank), the others nothing.
std::vector<models::TensorSums> gather_tensor_sums(const std::vector<models::TensorSums>& mine, MPI_Comm world);

// The first difference from the reference ("" when none), by the tolerances of this
// step (tolerance_at_step): loss, each tensor in the reference's order, the two norms ("step 2: tensor layers.0.attn.wq
// gradient norm 0.0123 differs from the serial reference's 0.0246 (tolerance 1.2e-6)"). got.tensors empty (an executor
// without per-tensor figures): the scalars only.
std::string first_difference(const models::StepStats& got, const models::StepStats& ref, const CheckTolerance& tol,
                             int step);

}  // namespace ibt::suites
