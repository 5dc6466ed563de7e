#include "collectives/check.hpp"

#include <algorithm>
#include <cmath>

namespace ibt {
namespace {

std::size_t in_place_elems(const OpShape& s) { return std::max(s.send_elems, s.recv_elems); }

double rounded(double v, DType t) {
  unsigned char slot[8];
  store_element(slot, 0, t, v);
  return load_element(slot, 0, t);
}

}  // namespace

double accepted_error(double expected, DType t, ReduceOp op, int n) {
  if (!is_floating(t) || n <= 1) return 0.0;
  switch (op) {
    case ReduceOp::max:
    case ReduceOp::min: return 0.0;
    // Another order of n-1 additions or multiplications may round each differently.
    case ReduceOp::sum:
    case ReduceOp::prod: return (n - 1) * ulp_of(expected, t);
    // The sum's rounding, then the division's (one more ulp).
    case ReduceOp::avg: return n * ulp_of(expected, t);
  }
  return 0.0;
}

HostImages make_inputs(const CheckContext& c) {
  const std::size_t elem = size_of(c.dtype);
  HostImages img;
  const bool in_place = c.placement == Placement::in_place;
  const std::size_t recv_offset = in_place ? c.op->in_place_recv_offset(c.shape, c.rank) : 0;
  const std::size_t send_offset = in_place ? c.op->in_place_send_offset(c.shape, c.rank) : 0;
  img.recv.resize((in_place ? in_place_elems(c.shape) : c.shape.recv_elems) * elem);
  if (!in_place) img.send.resize(c.shape.send_elems * elem);
  // Output slots first get a sentinel of the opposite sign to the result ...
  for (std::size_t i = 0; i < c.shape.recv_elems; ++i) {
    const double want = c.op->expected(c.rank, i, c.n, c.shape, c.reduce_op, c.root);
    store_element(img.recv.data(), recv_offset + i, c.dtype, -want - 17);
  }
  // ... then the inputs are written, in place over the slots the op reads from.
  unsigned char* send = in_place ? img.recv.data() : img.send.data();
  for (std::size_t j = 0; j < c.shape.send_elems; ++j)
    store_element(send, send_offset + j, c.dtype, c.op->input(c.rank, j, c.n, c.root));
  return img;
}

std::uint64_t count_wrong(const CheckContext& c, const unsigned char* recv_image) {
  const std::size_t recv_offset = c.placement == Placement::in_place ? c.op->in_place_recv_offset(c.shape, c.rank) : 0;
  std::uint64_t wrong = 0;
  for (std::size_t i = 0; i < c.shape.recv_elems; ++i) {
    const double want = rounded(c.op->expected(c.rank, i, c.n, c.shape, c.reduce_op, c.root), c.dtype);
    const double got = load_element(recv_image, recv_offset + i, c.dtype);
    if (!(std::fabs(got - want) <= accepted_error(want, c.dtype, c.reduce_op, c.n))) ++wrong;
  }
  return wrong;
}

}  // namespace ibt
