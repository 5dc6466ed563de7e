#pragma once
// The "gemm" table of an `ibt gemm` run, one row per product and precision
// (core/row_schema.hpp). `ibt gemm` writes it (CUDA builds only); measured_gemm_peak()
// (gemm_peak.hpp) reads it by column name. The columns keep the names, types, units and
// order files have always had.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/row_schema.hpp"

namespace ibt::topo {

struct GemmRow {
  std::string name;
  std::int64_t m = 0, n = 0, k = 0;
  std::string dtype;
  double time_us = 0, min_us = 0, tflops = 0, rel_error = 0;
  std::int64_t reps = 0, input_sets = 0;

  static constexpr std::string_view kTable = "gemm";
  static constexpr std::array<store::Field<GemmRow>, 11> kFields{{
      {"name", &GemmRow::name, "", "the product: a layer's GEMM (\"mlp_up.fwd\") or MxNxK given by hand"},
      {"m", &GemmRow::m, "", "rows of the output"},
      {"n", &GemmRow::n, "", "columns of the output"},
      {"k", &GemmRow::k, "", "the inner dimension"},
      {"dtype", &GemmRow::dtype, "", "the input precision (bf16 or fp8_e4m3)"},
      {"time_us", &GemmRow::time_us, "us", "the median over the timed repetitions"},
      {"min_us", &GemmRow::min_us, "us", "the fastest timed repetition"},
      {"tflops", &GemmRow::tflops, "TFLOP/s", "2mnk over the median time"},
      {"rel_error", &GemmRow::rel_error, "", "sampled ||D - ref|| / ||ref|| against a float64 reference"},
      {"reps", &GemmRow::reps, "repetitions", "the timed repetitions"},
      {"input_sets", &GemmRow::input_sets, "sets",
       "the input buffers the repetitions rotate through, so L2 does not hold them"},
  }};
};

}  // namespace ibt::topo
