#include "collectives/mpi_types.hpp"

#include <array>
#include <cstdint>
#include <string>

#include "core/errors.hpp"

namespace ibt {
namespace {

template <float (*Load)(std::uint16_t), std::uint16_t (*Store)(float), typename Reduce>
void reduce_16bit(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(inout);
  Reduce reduce;
  for (int i = 0; i < *len; ++i) b[i] = Store(reduce(Load(a[i]), Load(b[i])));
}

struct Sum {
  float operator()(float x, float y) const { return x + y; }
};
struct Max {
  float operator()(float x, float y) const { return x > y ? x : y; }
};
struct Min {
  float operator()(float x, float y) const { return x < y ? x : y; }
};
struct Prod {
  float operator()(float x, float y) const { return x * y; }
};

// MPI has no average: the mpi backend refuses it rather than timing a sum plus a scaling
// pass that no MPI program would issue as one call.
[[noreturn]] void refuse_avg() {
  throw UsageError(
      "reduce op avg is not supported by the mpi backend (MPI has no average reduction; "
      "use sum, prod, min or max, or --backend nccl)");
}

// Index: [0 = bf16, 1 = fp16][ReduceOp]
std::array<std::array<MPI_Op, 5>, 2> g_ops{{{MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL},
                                            {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL}}};

MPI_User_function* user_function(int type_index, ReduceOp op) {
  if (type_index == 0) {
    switch (op) {
      case ReduceOp::sum: return reduce_16bit<bf16_to_float, float_to_bf16, Sum>;
      case ReduceOp::max: return reduce_16bit<bf16_to_float, float_to_bf16, Max>;
      case ReduceOp::min: return reduce_16bit<bf16_to_float, float_to_bf16, Min>;
      case ReduceOp::prod: return reduce_16bit<bf16_to_float, float_to_bf16, Prod>;
      case ReduceOp::avg: refuse_avg();
    }
  }
  switch (op) {
    case ReduceOp::sum: return reduce_16bit<fp16_to_float, float_to_fp16, Sum>;
    case ReduceOp::max: return reduce_16bit<fp16_to_float, float_to_fp16, Max>;
    case ReduceOp::min: return reduce_16bit<fp16_to_float, float_to_fp16, Min>;
    case ReduceOp::prod: return reduce_16bit<fp16_to_float, float_to_fp16, Prod>;
    case ReduceOp::avg: refuse_avg();
  }
  return nullptr;
}

}  // namespace

void refuse_mpi_datatype(DType t) {
  throw UsageError("dtype " + std::string(to_string(t)) + " is not available on the MPI backend");
}

MPI_Op mpi_op(DType t, ReduceOp op) {
  if (op == ReduceOp::avg) refuse_avg();
  if (t == DType::bfloat16 || t == DType::float16) {
    const int type_index = t == DType::bfloat16 ? 0 : 1;
    MPI_Op& slot = g_ops[type_index][static_cast<int>(op)];
    if (slot == MPI_OP_NULL) MPI_Op_create(user_function(type_index, op), /*commute=*/1, &slot);
    return slot;
  }
  switch (op) {
    case ReduceOp::sum: return MPI_SUM;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
    case ReduceOp::prod: return MPI_PROD;
    case ReduceOp::avg: refuse_avg();
  }
  return MPI_SUM;
}

void free_mpi_ops() {
  for (auto& row : g_ops)
    for (auto& op : row)
      if (op != MPI_OP_NULL) MPI_Op_free(&op);
}

}  // namespace ibt
