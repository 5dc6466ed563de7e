#include "models/cuda/gemm_bench.hpp"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/errors.hpp"
#include "core/stats.hpp"
#include "models/cuda/gemm_kernels.hpp"

namespace ibt::gpu {
namespace {

// cuBLASLt's recommended workspace on Hopper; ample for Ampere.
constexpr std::size_t kWorkspaceBytes = 32u << 20;
constexpr int kSamples = 128;
constexpr int kTuneReps = 5;

void check_lt(cublasStatus_t rc, const std::string& what) {
  if (rc != CUBLAS_STATUS_SUCCESS)
    throw RuntimeError(what + " failed: cuBLAS status " + std::to_string(int(rc)) + " (" + cublasLtGetStatusString(rc) +
                       ")");
}

// Owns one device allocation.
struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(std::size_t bytes) {
    check_cuda(cudaMalloc(&ptr, std::max<std::size_t>(bytes, 1)), "cudaMalloc of " + std::to_string(bytes) + " B");
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

struct Event {
  cudaEvent_t e = nullptr;
  Event() { check_cuda(cudaEventCreate(&e), "cudaEventCreate"); }
  ~Event() { cudaEventDestroy(e); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

std::string shape_text(const GemmShape& s, GemmPrecision p) {
  return std::string(to_string(p)) + " GEMM " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
         std::to_string(s.k);
}

// The cuBLASLt description of one problem: D[m x n] = A^T B with A stored k x m and B
// stored k x n, column-major ("TN", the layout fp8 requires on Hopper and the one a
// linear layer's forward uses).
struct Problem {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  Problem(const GemmShape& s, GemmPrecision p) {
    const cudaDataType_t in = p == GemmPrecision::bf16 ? CUDA_R_16BF : CUDA_R_8F_E4M3;
    check_lt(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t transpose = CUBLAS_OP_T, none = CUBLAS_OP_N;
    check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose),
             "cublasLtMatmulDescSetAttribute");
    check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none),
             "cublasLtMatmulDescSetAttribute");
    check_lt(cublasLtMatrixLayoutCreate(&a, in, s.k, s.m, s.k), "cublasLtMatrixLayoutCreate(A)");
    check_lt(cublasLtMatrixLayoutCreate(&b, in, s.k, s.n, s.k), "cublasLtMatrixLayoutCreate(B)");
    check_lt(cublasLtMatrixLayoutCreate(&d, CUDA_R_16BF, s.m, s.n, s.m), "cublasLtMatrixLayoutCreate(D)");
  }
  ~Problem() {
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;
};

}  // namespace

struct GemmBench::Impl {
  cublasLtHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
  DeviceBuffer workspace{kWorkspaceBytes};
  int l2_bytes = 0;

  ~Impl() {
    if (handle) cublasLtDestroy(handle);
    if (stream) cudaStreamDestroy(stream);
  }

  cublasStatus_t run(const Problem& problem, const cublasLtMatmulAlgo_t& algo, const void* a, const void* b, void* d) {
    const float alpha = 1.0f, beta = 0.0f;
    return cublasLtMatmul(handle, problem.op, &alpha, a, problem.a, b, problem.b, &beta, d, problem.d, d, problem.d,
                          &algo, workspace.ptr, kWorkspaceBytes, stream);
  }

  // Seconds per product for `reps` products, rotating over the input sets.
  std::vector<double> time(const Problem& problem, const cublasLtMatmulAlgo_t& algo,
                           const std::vector<std::unique_ptr<DeviceBuffer>>& as,
                           const std::vector<std::unique_ptr<DeviceBuffer>>& bs, void* d, int reps) {
    std::vector<Event> starts(reps), ends(reps);
    for (int r = 0; r < reps; ++r) {
      const std::size_t set = r % as.size();
      check_cuda(cudaEventRecord(starts[r].e, stream), "cudaEventRecord");
      check_lt(run(problem, algo, as[set]->ptr, bs[set]->ptr, d), "cublasLtMatmul");
      check_cuda(cudaEventRecord(ends[r].e, stream), "cudaEventRecord");
    }
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize after timed GEMMs");
    std::vector<double> out(reps);
    for (int r = 0; r < reps; ++r) {
      float ms = 0;
      check_cuda(cudaEventElapsedTime(&ms, starts[r].e, ends[r].e), "cudaEventElapsedTime");
      out[r] = ms * 1e-3;
    }
    return out;
  }
};

GemmBench::GemmBench(const std::string& entry_point, int device) {
  const int count = require_cuda_devices(entry_point);
  if (device < 0 || device >= count)
    throw UsageError(entry_point + ": --device " + std::to_string(device) + " is out of range (" +
                     std::to_string(count) + " CUDA device(s))");
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  device_ = describe_device(device);
  impl_ = std::make_unique<Impl>();
  check_cuda(cudaDeviceGetAttribute(&impl_->l2_bytes, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute");
  check_cuda(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check_lt(cublasLtCreate(&impl_->handle), "cublasLtCreate");
}

GemmBench::~GemmBench() = default;

std::string GemmBench::cublaslt_version() const {
  const std::size_t v = cublasLtGetVersion();  // major*10000 + minor*100 + patch
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
}

bool GemmBench::supports(GemmPrecision p) const { return p == GemmPrecision::bf16 || device_.cc_major >= 9; }

GemmMeasurement GemmBench::measure(const GemmShape& shape, GemmPrecision p, const GemmOptions& options) {
  const std::string what = shape_text(shape, p);
  if (!supports(p))
    throw UsageError(what + ": fp8 needs compute capability 9.0 or newer; " + device_.name + " is " +
                     std::to_string(device_.cc_major) + "." + std::to_string(device_.cc_minor));
  if (options.reps < 1 || options.warmup < 0 || options.algorithms < 1)
    throw UsageError("--reps and --algos must be at least 1 and --warmup at least 0");
  Impl& x = *impl_;

  const std::size_t in_bytes = p == GemmPrecision::bf16 ? 2 : 1;
  const std::size_t a_elems = std::size_t(shape.m) * shape.k, b_elems = std::size_t(shape.k) * shape.n;
  const std::size_t d_bytes = std::size_t(shape.m) * shape.n * 2;
  const std::size_t set_bytes = (a_elems + b_elems) * in_bytes;

  // Rotate over enough input sets that together they exceed L2 several times over, so
  // small problems are not measured out of the cache (within free memory).
  std::size_t free_bytes = 0, total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  const std::size_t budget = free_bytes / 10 * 8;
  if (set_bytes + d_bytes > budget)
    throw UsageError(what + " needs " + std::to_string((set_bytes + d_bytes) >> 20) + " MiB; " +
                     std::to_string(free_bytes >> 20) + " MiB of GPU memory are free");
  std::size_t sets = (4 * std::size_t(x.l2_bytes) + set_bytes - 1) / set_bytes;
  sets = std::clamp<std::size_t>(sets, 1, 16);
  sets = std::min(sets, (budget - d_bytes) / set_bytes);

  std::vector<std::unique_ptr<DeviceBuffer>> as, bs;
  for (std::size_t s = 0; s < sets; ++s) {
    as.push_back(std::make_unique<DeviceBuffer>(a_elems * in_bytes));
    bs.push_back(std::make_unique<DeviceBuffer>(b_elems * in_bytes));
    fill_uniform(as.back()->ptr, a_elems, p, 2 * s + 1, x.stream);
    fill_uniform(bs.back()->ptr, b_elems, p, 2 * s + 2, x.stream);
  }
  DeviceBuffer d(d_bytes);

  Problem problem(shape, p);
  cublasLtMatmulPreference_t preference = nullptr;
  check_lt(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  const std::size_t workspace = kWorkspaceBytes;
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                       sizeof workspace);
  std::vector<cublasLtMatmulHeuristicResult_t> candidates(options.algorithms);
  int found = 0;
  const cublasStatus_t heuristic =
      cublasLtMatmulAlgoGetHeuristic(x.handle, problem.op, problem.a, problem.b, problem.d, problem.d, preference,
                                     options.algorithms, candidates.data(), &found);
  cublasLtMatmulPreferenceDestroy(preference);
  if (heuristic != CUBLAS_STATUS_SUCCESS || found == 0)
    throw UsageError("cuBLASLt has no algorithm for " + what +
                     (p == GemmPrecision::fp8_e4m3 ? " (fp8 needs m, n, k divisible by 16)" : ""));

  // Pick the fastest candidate on a few products.
  int best = -1;
  double best_time = std::numeric_limits<double>::infinity();
  for (int c = 0; c < found; ++c) {
    if (candidates[c].state != CUBLAS_STATUS_SUCCESS) continue;
    if (x.run(problem, candidates[c].algo, as[0]->ptr, bs[0]->ptr, d.ptr) != CUBLAS_STATUS_SUCCESS) continue;
    const double t = median(x.time(problem, candidates[c].algo, as, bs, d.ptr, kTuneReps));
    if (t < best_time) best_time = t, best = c;
  }
  if (best < 0) throw RuntimeError("no cuBLASLt algorithm ran for " + what);
  const cublasLtMatmulAlgo_t& algo = candidates[best].algo;

  GemmMeasurement result;
  result.shape = shape;
  result.precision = p;
  result.input_sets = int(sets);

  // Check: poison D, compute once from input set 0, compare sampled elements.
  fill_nan_bf16(d.ptr, d_bytes / 2, x.stream);
  check_lt(x.run(problem, algo, as[0]->ptr, bs[0]->ptr, d.ptr), "cublasLtMatmul");
  std::vector<std::int64_t> rows(kSamples), cols(kSamples);
  std::uint64_t state = 0x2545f4914f6cdd1dull ^ std::uint64_t(shape.m * 31 + shape.n * 17 + shape.k);
  for (int s = 0; s < kSamples; ++s) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    rows[s] = std::int64_t((state >> 33) % std::uint64_t(shape.m));
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    cols[s] = std::int64_t((state >> 33) % std::uint64_t(shape.n));
  }
  rows[0] = 0, cols[0] = 0, rows[1] = shape.m - 1, cols[1] = shape.n - 1;  // the corners
  DeviceBuffer rows_d(kSamples * sizeof(std::int64_t)), cols_d(kSamples * sizeof(std::int64_t));
  DeviceBuffer ref_d(kSamples * sizeof(double)), res_d(kSamples * sizeof(double));
  check_cuda(
      cudaMemcpyAsync(rows_d.ptr, rows.data(), kSamples * sizeof(std::int64_t), cudaMemcpyHostToDevice, x.stream),
      "cudaMemcpyAsync");
  check_cuda(
      cudaMemcpyAsync(cols_d.ptr, cols.data(), kSamples * sizeof(std::int64_t), cudaMemcpyHostToDevice, x.stream),
      "cudaMemcpyAsync");
  sample_reference(as[0]->ptr, bs[0]->ptr, d.ptr, p, shape.m, shape.k, static_cast<std::int64_t*>(rows_d.ptr),
                   static_cast<std::int64_t*>(cols_d.ptr), kSamples, static_cast<double*>(ref_d.ptr),
                   static_cast<double*>(res_d.ptr), x.stream);
  std::vector<double> ref(kSamples), res(kSamples);
  check_cuda(cudaMemcpyAsync(ref.data(), ref_d.ptr, kSamples * sizeof(double), cudaMemcpyDeviceToHost, x.stream),
             "cudaMemcpyAsync");
  check_cuda(cudaMemcpyAsync(res.data(), res_d.ptr, kSamples * sizeof(double), cudaMemcpyDeviceToHost, x.stream),
             "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(x.stream), "cudaStreamSynchronize after the GEMM check");
  double err2 = 0, ref2 = 0;
  for (int s = 0; s < kSamples; ++s) {
    err2 += (res[s] - ref[s]) * (res[s] - ref[s]);
    ref2 += ref[s] * ref[s];
  }
  result.rel_error = std::isfinite(err2) && ref2 > 0 ? std::sqrt(err2 / ref2) : std::numeric_limits<double>::infinity();
  result.correct = result.rel_error <= kGemmTolerance;

  for (int w = 0; w < options.warmup; ++w)
    check_lt(x.run(problem, algo, as[w % sets]->ptr, bs[w % sets]->ptr, d.ptr), "cublasLtMatmul (warm-up)");
  result.times_s = x.time(problem, algo, as, bs, d.ptr, options.reps);
  result.median_s = median(result.times_s);
  result.min_s = *std::min_element(result.times_s.begin(), result.times_s.end());
  result.tflops = shape.flops() / result.median_s / 1e12;
  return result;
}

}  // namespace ibt::gpu
