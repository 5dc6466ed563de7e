#pragma once
// The measured GEMM peak of a GPU, read from an `ibt gemm` results file: the best
// TFLOP/s among the checked products of one precision in the newest complete gemm run
// on a GPU of that name. `ibt train --executor cuda --gemm-peak-from FILE` reports MFU
// against it beside the catalog peak: what the hardware's library reaches, not what
// the datasheet promises.
#include <string>

namespace ibt::topo {

struct MeasuredGemmPeak {
  double tflops = 0;
  std::string run_id;  // the gemm run it came from
  std::string shape;   // the product that reached it ("llama3-70b.mlp_up" ...)
};

// Throws UsageError naming the file and what is missing: no such file or not ibt's, no
// complete gemm run on `gpu_name` (listing the GPUs it has), or no correct `dtype` row.
MeasuredGemmPeak measured_gemm_peak(const std::string& path, const std::string& gpu_name, const std::string& dtype);

}  // namespace ibt::topo
