// ibt gemm: GEMM throughput on one GPU over training-shaped problems (cuBLASLt, bf16 or
// fp8 inputs, fp32 accumulation), the measured peak that MFU is also reported against.
#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "collectives/provenance.hpp"
#include "core/errors.hpp"
#include "core/no_gpu.hpp"
#include "core/text_table.hpp"
#include "ibt/version.hpp"
#include "models/cuda/gemm_shapes.hpp"
#ifdef IBT_HAVE_CUDA
#include "models/cuda/gemm_bench.hpp"
#endif
#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "collectives/runtime/run_recorder.hpp"
#include "topologies/calibration/gemm_table.hpp"

#ifdef IBT_HAVE_CUDA
extern char** environ;
#endif

namespace ibt::suites {
namespace {

namespace po = boost::program_options;

struct GemmArgs {
  std::string shapes, dtypes = "bf16", out;
  long tokens = 8192, hidden = 8192, ffn = 28672, kv_hidden = 0;
  bool plain_mlp = false;
  int device = 0;
  gpu::GemmOptions measure;
};

}  // namespace

int gemm_main(int argc, char** argv) {
  GemmArgs a;
  const char* about =
      "GEMM throughput (cuBLASLt, fp32 accumulation, bf16 output) on one GPU, median of CUDA-event\n"
      "timed repetitions, each result checked against a sampled float64 reference.\n\n"
      "Default problems: every linear layer of a transformer block, forward and both backward\n"
      "products, M = tokens per GPU.\n";
  po::options_description opts("options");
  opts.add_options()("help,h", "show this help")("shapes", po::value(&a.shapes),
                                                 "comma list of MxNxK problems instead of the training shapes")(
      "tokens", po::value(&a.tokens)->default_value(a.tokens), "tokens per GPU per step (M)")(
      "hidden", po::value(&a.hidden)->default_value(a.hidden), "model hidden size")(
      "ffn", po::value(&a.ffn)->default_value(a.ffn), "MLP inner size")(
      "kv-hidden", po::value(&a.kv_hidden)->default_value(a.kv_hidden),
      "K/V projection width (kv heads x head dim; 0: the hidden size, no GQA)")(
      "plain-mlp", po::bool_switch(&a.plain_mlp), "ungated MLP (GELU): the up projection is ffn wide, not 2 x ffn")(
      "dtype", po::value(&a.dtypes)->default_value(a.dtypes), "comma list of bf16, fp8 (e4m3; sm_90 and newer)")(
      "warmup", po::value(&a.measure.warmup)->default_value(a.measure.warmup), "untimed products per problem")(
      "reps", po::value(&a.measure.reps)->default_value(a.measure.reps), "timed products per problem")(
      "algos", po::value(&a.measure.algorithms)->default_value(a.measure.algorithms),
      "cuBLASLt heuristic candidates to try; the fastest is measured")(
      "device", po::value(&a.device)->default_value(a.device), "CUDA device index")(
      "out", po::value(&a.out), "HDF5 results file to append the run to");
  po::variables_map vm;
  if (!parse_command_line(argc, argv, opts, vm)) {
    print_help(std::cout, "ibt gemm [--dtype bf16,fp8] [--hidden H --ffn F ...] [--out FILE.h5]", about, opts,
               {"ibt gemm --out gpu.h5", "ibt gemm --dtype fp8 --hidden 8192 --ffn 28672"});
    return kExitOk;
  }
#ifndef IBT_HAVE_CUDA
  // The help above works in every build; measuring needs the CUDA parts.
  throw UsageError(built_without_cuda_message(""));
#else
  std::vector<gpu::GemmShape> shapes;
  if (!a.shapes.empty()) {
    shapes = gpu::parse_shapes(a.shapes);
  } else {
    require_positive(a.tokens, "--tokens");
    require_positive(a.hidden, "--hidden");
    require_positive(a.ffn, "--ffn");
    shapes = gpu::training_shapes({a.tokens, a.hidden, a.ffn, a.kv_hidden > 0 ? a.kv_hidden : a.hidden, !a.plain_mlp});
  }
  const auto precisions = gpu::parse_gemm_precisions(a.dtypes);
  if (!a.out.empty()) store::check_appendable(a.out);

  gpu::GemmBench bench("", a.device);  // without a GPU: UsageError "no CUDA GPU on this machine ...", exit 2
  for (auto p : precisions)
    if (!bench.supports(p))
      throw UsageError("--dtype " + std::string(gpu::to_string(p)) + ": needs compute capability 9.0 or newer; " +
                       bench.device().name + " is " + std::to_string(bench.device().cc_major) + "." +
                       std::to_string(bench.device().cc_minor));

  RunRecorder recorder(a.out, "gemm");
  const auto& dev = bench.device();
  recorder.set_attr("command_line", joined_command_line(argc, argv));
  recorder.set_attr("ibt_version", std::string(kVersion));
  recorder.set_attr("git_commit", std::string(kGitCommit));
  recorder.set_attr("world_size", std::int64_t{1});
  recorder.set_attr("backend", std::string("cublasLt"));
  recorder.set_attr("gpu_name", dev.name);
  recorder.set_attr("gpu_compute_capability", std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor));
  recorder.set_attr("gpu_multiprocessors", std::int64_t{dev.multiprocessors});
  recorder.set_attr("gpu_pci_bus_id", dev.pci_bus_id);
  recorder.set_attr("cuda_driver_api", gpu::cuda_version_string(dev.driver_version));
  recorder.set_attr("cuda_runtime", gpu::cuda_version_string(dev.runtime_version));
  recorder.set_attr("cublaslt_version", bench.cublaslt_version());
  recorder.set_attr("gemm_layout", std::string("TN: D[m,n] = A[m,k] B[n,k]^T, fp32 accumulate, bf16 D"));
  recorder.set_environment(allowed_environment(environ));

  std::printf("# ibt gemm on %s (sm_%d%d, %d SMs, %s), cuBLASLt %s, %d reps after %d warm-up\n", dev.name.c_str(),
              dev.cc_major, dev.cc_minor, dev.multiprocessors, dev.pci_bus_id.c_str(), bench.cublaslt_version().c_str(),
              a.measure.reps, a.measure.warmup);
  using Align = TextTable::Align;
  TextTable table;  // at the printf widths it always had, each row laid out on its own
  table.add_column({"name", Align::left, "", 16});
  for (const char* dim : {"m", "n", "k"}) table.add_column({dim, Align::right, "", 7});
  table.add_column({"dtype", Align::left, "", 9});
  table.add_column({"median_us", Align::right, "", 11});
  table.add_column({"min_us", Align::right, "", 11});
  table.add_column({"TFLOP/s", Align::right, "", 9});
  table.add_column({"rel_err", Align::right, "", 9});
  table.add_column(TextTable::Column("", Align::left).after(""));  // "  WRONG", its own gap
  TextTable::Style style;
  style.gap = " ";
  style.rule = false;
  std::printf("%s", table.header_text(style).c_str());
  int wrong = 0;
  double best = 0;
  for (auto p : precisions) {
    for (const auto& shape : shapes) {
      const auto r = bench.measure(shape, p, a.measure);
      char rel_err[32];
      std::snprintf(rel_err, sizeof rel_err, "%.2e", r.rel_error);
      std::printf("%s",
                  table
                      .row_text({shape.name, std::to_string(shape.m), std::to_string(shape.n), std::to_string(shape.k),
                                 std::string(gpu::to_string(p)), fixed(r.median_s * 1e6, 1), fixed(r.min_s * 1e6, 1),
                                 fixed(r.tflops, 1), rel_err, r.correct ? "" : "  WRONG"},
                                style)
                      .c_str());
      std::fflush(stdout);
      recorder.append(topo::GemmRow{shape.name, shape.m, shape.n, shape.k, std::string(gpu::to_string(p)),
                                    r.median_s * 1e6, r.min_s * 1e6, r.tflops, r.rel_error,
                                    std::int64_t{a.measure.reps}, std::int64_t{r.input_sets}});
      if (!r.correct) ++wrong;
      if (r.correct) best = std::max(best, r.tflops);
    }
  }
  std::printf("# best %.1f TFLOP/s; %d of %zu products outside the %.0e tolerance\n", best, wrong,
              shapes.size() * precisions.size(), gpu::kGemmTolerance);
  if (recorder.active()) std::printf("# stored as run %s in %s\n", recorder.run_id().c_str(), a.out.c_str());
  recorder.finish(wrong ? store::RunStatus::failed : store::RunStatus::complete,
                  wrong ? std::to_string(wrong) + " GEMM results outside tolerance" : "");
  return wrong ? kExitFailure : kExitOk;
#endif
}

}  // namespace ibt::suites
