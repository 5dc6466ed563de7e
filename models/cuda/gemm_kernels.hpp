#pragma once
// Device helpers for the GEMM benchmark: deterministic random fills (never zeros, which
// hide unwritten outputs and run faster than real data), and a sampled float64
// reference that checks the library's product.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "models/cuda/gemm_shapes.hpp"

namespace ibt::gpu {

// Fills `count` elements of type p with values uniform in [-1, 1) drawn from `seed`.
void fill_uniform(void* data, std::size_t count, GemmPrecision p, std::uint64_t seed, cudaStream_t stream);

// Fills `count` bf16 elements with NaN, so that an element the product never writes
// fails the check.
void fill_nan_bf16(void* data, std::size_t count, cudaStream_t stream);

// For each sample s, computes in float64 the element (rows[s], cols[s]) of
// op(A) x B from the stored inputs, and copies the bf16 result element beside it.
// Layouts (column-major, as cuBLASLt sees them): A is k x m and used transposed, B is
// k x n, D is m x n. `reference` and `result` are device arrays of `samples` doubles.
void sample_reference(const void* a, const void* b, const void* d, GemmPrecision p, std::int64_t m, std::int64_t k,
                      const std::int64_t* rows, const std::int64_t* cols, int samples, double* reference,
                      double* result, cudaStream_t stream);

}  // namespace ibt::gpu
