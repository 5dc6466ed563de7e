#include "collectives/nccl_tests_flags.hpp"

#include <array>
#include <string_view>

#include "core/errors.hpp"

namespace ibt::suites {
namespace {

struct Spelling {
  std::string_view nccl_tests, ibt;
};
// nccl-tests' long names (src/common.cu) whose ibt name differs.
constexpr std::array<Spelling, 13> kSpellings{{
    {"nthreads", "threads"},
    {"ngpus", "gpus"},
    {"minbytes", "min-bytes"},
    {"maxbytes", "max-bytes"},
    {"stepbytes", "step-bytes"},
    {"stepfactor", "step-factor"},
    {"agg_iters", "agg-iters"},
    {"warmup_iters", "warmup-iters"},
    {"run_cycles", "run-cycles"},
    {"datatype", "dtype"},
    {"cudagraph", "cuda-graph"},
    {"report_cputime", "report-cputime"},
    {"local_register", "local-register"},
}};

struct Unsupported {
  char short_name;
  std::string_view long_name, why;
};
// nccl-tests flags ibt does not offer, and why.
constexpr std::array<Unsupported, 11> kUnsupported{{
    {'p', "parallel_init", "ibt has one thread per rank, so there is nothing to initialise in parallel"},
    {'y', "stream_null", "the nccl backend always uses its own stream; the mpi backend has none"},
    {'S', "report_timestamps", "every run's start and end time are stored in the results file (--out)"},
    {'J', "output_file", "use --out FILE.h5 (every row, with provenance) and `ibt export FILE.h5 --json`"},
    {'M', "memory", "no device-memory report yet"},
    {'u', "unalign", "buffers are always 256-byte aligned"},
    {'I', "per_iter_timing", "per-iteration p50/p99 are always measured (the p50 and p99 columns)"},
    {'K', "per_iter_skip", "per-iteration p50/p99 are always measured over every timed iteration"},
    {'x', "cta_policy", "NCCL CTA policies are not exposed by the nccl backend"},
    {'D', "device_implementation", "NCCL device-side implementations are not exposed by the nccl backend"},
    {'V', "device_cta_count", "NCCL device-side implementations are not exposed by the nccl backend"},
}};

// -F: not a flag of NVIDIA's nccl-tests (its CUDA-graph flag is -G); two derivatives use it.
constexpr std::string_view kFlagF =
    "-F is not a flag of NVIDIA's nccl-tests (CUDA-graph launch there is -G, which ibt takes: -G 1 on --backend "
    "nccl). rccl-tests' -F/--cache_flush flushes caches between iterations: ibt rotates buffers through "
    "--rotate-bytes (64M by default) so caches do not flatter small sizes, --rotate-bytes 0 to reuse one. Forks "
    "that use -F/--ft_test for fault-tolerance tests: ibt's --inject-stall RANK:K[:inside] exercises the "
    "timeouts";

bool is_number(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

bool is_reduce_op_name(std::string_view s) {
  return s == "sum" || s == "prod" || s == "min" || s == "max" || s == "avg" || s == "mulsum";
}

}  // namespace

std::vector<std::string> nccl_tests_spellings(int argc, char** argv) {
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    const std::string next = i + 1 < argc ? argv[i + 1] : "";
    if (i > 0 && arg.starts_with("--")) {
      const auto eq = arg.find('=');
      const std::string_view name =
          std::string_view(arg).substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      const std::string value = eq == std::string::npos ? next : arg.substr(eq + 1);
      if (name == "cache_flush" || name == "ft_test")
        throw UsageError("--" + std::string(name) + ": " + std::string(kFlagF));
      for (const auto& u : kUnsupported)
        if (name == u.long_name)
          throw UsageError("nccl-tests' --" + std::string(u.long_name) + " (-" + u.short_name +
                           ") is not supported by ibt collectives: " + std::string(u.why));
      if (name == "op" && is_reduce_op_name(value))
        throw UsageError("--op names the collectives in ibt (e.g. --op all_reduce); the reduction '" + value +
                         "' is -o/--reduce-op (nccl-tests' -o/--op)");
      for (const auto& s : kSpellings)
        if (name == s.nccl_tests) {
          arg = "--" + std::string(s.ibt) + (eq == std::string::npos ? "" : arg.substr(eq));
          break;
        }
    } else if (i > 0 && arg.size() >= 2 && arg[0] == '-' && arg[1] != '-') {
      const std::string value = arg.size() > 2 ? arg.substr(2) : next;
      if (arg[1] == 'F') throw UsageError(std::string(kFlagF));
      for (const auto& u : kUnsupported)
        if (arg[1] == u.short_name)
          throw UsageError("nccl-tests' -" + std::string(1, u.short_name) + " (--" + std::string(u.long_name) +
                           ") is not supported by ibt collectives: " + std::string(u.why));
      if (arg[1] == 't' && !is_number(value))
        throw UsageError("-t is nccl-tests' threads per process (a number; got '" + value +
                         "'): choose the collectives with --op (e.g. --op all_reduce)");
    }
    out.push_back(std::move(arg));
  }
  return out;
}

void check_backend_flags(const BackendFlags& f, const std::string& backend) {
  if (f.threads < 1) throw UsageError("-t/--threads must be at least 1");
  if (f.gpus < 1) throw UsageError("-g/--gpus must be at least 1");
  if (f.agg_iters < 1) throw UsageError("-m/--agg-iters must be at least 1");
  if (f.report_cputime != 0 && f.report_cputime != 1) throw UsageError("-C/--report-cputime must be 0 or 1");
  if (f.local_register < 0 || f.local_register > 2) throw UsageError("-R/--local-register must be 0, 1 or 2");
  const bool mpi = backend == "mpi";
  if (f.threads != 1)
    throw UsageError("-t " + std::to_string(f.threads) + " (threads per process) is not supported by the " + backend +
                     " backend: ibt runs one rank per process; launch more ranks instead");
  if (f.gpus != 1)
    throw UsageError("-g " + std::to_string(f.gpus) + " (GPUs per thread) is not supported by the " + backend +
                     " backend: " + (mpi ? "it moves host memory, no GPUs" : "one GPU per rank; launch more ranks"));
  if (!mpi && f.agg_iters != 1)
    throw UsageError("-m " + std::to_string(f.agg_iters) +
                     " is not supported by the nccl backend yet (calls are not grouped with ncclGroupStart/End)");
  if (!mpi && f.report_cputime != 0)
    throw UsageError("-C 1 is not supported by the nccl backend yet (it times with CUDA events)");
  if (f.local_register != 0)
    throw UsageError("-R " + std::to_string(f.local_register) + " is not supported by the " + backend + " backend" +
                     (mpi ? " (MPI has no buffer registration call)" : " yet (no ncclCommRegister)"));
}

}  // namespace ibt::suites
