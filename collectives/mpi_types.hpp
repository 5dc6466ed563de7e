#pragma once
// MPI datatypes and reduction ops for ibt's element types. bfloat16 and float16 have no
// MPI type: they travel as MPI_UINT16_T and reduce through user-defined ops that widen
// to float, reduce, and round back (as NCCL does for these types).
#include <mpi.h>

#include "collectives/dtype.hpp"

namespace ibt {

[[noreturn]] void refuse_mpi_datatype(DType t);  // throws UsageError naming the type

// Inline: it runs inside every timed call.
inline MPI_Datatype mpi_datatype(DType t) {
  switch (t) {
    case DType::float32: return MPI_FLOAT;
    case DType::float64: return MPI_DOUBLE;
    case DType::int32: return MPI_INT32_T;
    case DType::bfloat16:
    case DType::float16: return MPI_UINT16_T;
    default: refuse_mpi_datatype(t);
  }
}
MPI_Op mpi_op(DType t, ReduceOp op);
// Frees the user-defined ops; called once before MPI_Finalize.
void free_mpi_ops();

}  // namespace ibt
