#pragma once
// Element types and reduction operators the collectives are measured with.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ibt {

// fp8 types exist only on the NCCL backend (MPI has no such type).
enum class DType { float32, float64, int32, bfloat16, float16, fp8_e4m3, fp8_e5m2 };
// prod and avg as nccl-tests' -o; avg (sum / n) exists only where the backend has it (NCCL).
enum class ReduceOp { sum, max, min, prod, avg };

std::string_view to_string(DType t);
std::string_view to_string(ReduceOp op);
DType parse_dtype(std::string_view name);         // throws UsageError naming the value
ReduceOp parse_reduce_op(std::string_view name);  // throws UsageError naming the value
std::vector<DType> parse_dtype_list(std::string_view csv);
std::size_t size_of(DType t);
bool is_floating(DType t);
bool mpi_supports(DType t);

// Conversions between float and the 16-bit formats (round to nearest even),
// used by the MPI reduction ops for bf16/fp16 and by the correctness checks.
std::uint16_t float_to_bf16(float f);
float bf16_to_float(std::uint16_t b);
std::uint16_t float_to_fp16(float f);
float fp16_to_float(std::uint16_t h);

// Reads element i of a buffer of type t as a double; writes one back, rounding as
// the type does.
double load_element(const void* buf, std::size_t i, DType t);
void store_element(void* buf, std::size_t i, DType t, double v);

// Unit in the last place of v in type t (1 for integers): the unit of the
// accepted error of a reduced floating-point result.
double ulp_of(double v, DType t);

}  // namespace ibt
