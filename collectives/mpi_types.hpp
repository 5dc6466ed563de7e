#pragma once
// MPI datatypes and reduction ops for ibt's element types. bfloat16 and float16 have no
// MPI type: they travel as MPI_UINT16_T and reduce through user-defined ops that widen
// to float, reduce, and round back (as NCCL does for these types).
#include <mpi.h>

#include "collectives/dtype.hpp"

namespace ibt {

MPI_Datatype mpi_datatype(DType t);  // throws UsageError for types MPI cannot carry
MPI_Op mpi_op(DType t, ReduceOp op);
// Frees the user-defined ops; called once before MPI_Finalize.
void free_mpi_ops();

}  // namespace ibt
