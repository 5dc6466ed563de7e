#include "models/training/train_peak.hpp"

#include "core/errors.hpp"
#include "models/engine/blas.hpp"
#include "models/engine/sgemm_peak.hpp"
#include "topologies/calibration/gemm_peak.hpp"
#include "topologies/hardware/device_peak.hpp"

namespace ibt::suites {

namespace {

// The best checked GEMM of the executor's precision on this GPU model from an `ibt gemm`
// file, in GFLOP/s. Rank 0 reads (the file may exist on its node only) and shares the
// figure or the error, so every rank fails alike.
double read_gemm_peak_gflops(const std::string& path, const TrainExecutor& exec, MPI_Comm world, std::string& source) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  double gflops = 0;
  std::string error;
  if (rank == 0) {
    try {
      const topo::MeasuredGemmPeak p = topo::measured_gemm_peak(path, exec.device_name(), exec.precision());
      gflops = p.tflops * 1e3;
      source = "measured: " + path + " run " + p.run_id + ", " + p.shape;
    } catch (const UsageError& e) {
      error = e.what();
    }
  }
  int length = static_cast<int>(error.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, world);
  error.resize(static_cast<size_t>(length));
  MPI_Bcast(error.data(), length, MPI_CHAR, 0, world);
  if (!error.empty()) throw UsageError("--gemm-peak-from " + error);
  MPI_Bcast(&gflops, 1, MPI_DOUBLE, 0, world);
  return gflops;
}

}  // namespace

// The peak MFU is measured against: cpu, the measured sgemm (or --peak-tflops); cuda, the
// given or the GPU's catalog peak.
Peak rank_peak(const TrainOptions& o, const TrainExecutor& exec, MPI_Comm world, int threads) {
  if (o.executor.kind != "cuda") {
    Peak p;
    p.gflops = o.peak_gflops > 0 ? o.peak_gflops : measure_sgemm_peak_gflops(world, threads);
    p.source = o.peak_gflops > 0
                   ? "given (--peak-tflops)"
                   : "measured sgemm " + std::to_string(models::kSgemmPeakSize) + "^3 at " +
                         std::to_string(models::blas_threads()) + " BLAS thread(s) per rank, median over ranks";
    return p;
  }
  if (o.peak_tflops > 0) return {o.peak_tflops * 1e3, "given (--peak-tflops)"};
  const auto catalog = topo::catalog_peak_for_gpu(exec.device_name(), exec.precision());
  if (!catalog)
    throw UsageError("--executor cuda: no catalog peak for GPU '" + exec.device_name() + "' at " + exec.precision() +
                     ": give --peak-tflops");
  return {catalog->tflops * 1e3, "catalog " + catalog->topology + " (" + catalog->device + ") dense " +
                                     exec.precision() + " peak, source " + catalog->source};
}

// The measured GEMM peak of the second MFU (cuda): --gemm-peak-tflops or --gemm-peak-from's; 0 = none.
Peak gemm_peak_of(const TrainOptions& o, const TrainExecutor& exec, MPI_Comm world) {
  Peak p{o.gemm_peak_tflops * 1e3, o.gemm_peak_tflops > 0 ? "given (--gemm-peak-tflops)" : ""};
  if (!o.gemm_peak_file.empty()) p.gflops = read_gemm_peak_gflops(o.gemm_peak_file, exec, world, p.source);
  return p;
}

}  // namespace ibt::suites
