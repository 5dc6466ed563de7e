#pragma once
// Correctness: inputs are chosen so every rank knows the exact result (input_value), and a
// checking pass, separate from the timed one, compares each received element with it.
// Floating-point sums may round differently in another reduction order, so a sum over n
// ranks is accepted within (n-1) ULPs of the exact result; max, min and integer results
// must match exactly.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/collective.hpp"

namespace ibt {

struct CheckContext {
  const Collective* op = nullptr;
  OpShape shape;
  DType dtype = DType::float32;
  ReduceOp reduce_op = ReduceOp::sum;
  Placement placement = Placement::out_of_place;
  int rank = 0;  // rank within the group
  int n = 1;     // group size
  int root = 0;
};

// Host images of the buffers a run uses. Out of place: send and recv. In place: one
// buffer (`recv`, sized to hold both roles) and an empty `send`.
struct HostImages {
  std::vector<unsigned char> send;
  std::vector<unsigned char> recv;
};

// Fills the inputs and marks every output element with a value no correct result has.
HostImages make_inputs(const CheckContext& ctx);
// Counts the output elements of `recv_image` (the whole buffer as laid out by
// make_inputs) that differ from the exact result by more than the accepted error.
std::uint64_t count_wrong(const CheckContext& ctx, const unsigned char* recv_image);
// Accepted absolute error for an exact result `expected` (already rounded to the dtype).
double accepted_error(double expected, DType t, ReduceOp op, int n);

}  // namespace ibt
