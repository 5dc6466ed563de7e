// ibt collectives' command line: the flags and their help, their checks, and the harness
// options, scopes and stored configuration they become.
#include "cli/collectives_args.hpp"

#include <boost/program_options.hpp>
#include <iostream>

#include "cli/cli.hpp"
#include "collectives/sizes.hpp"
#include "core/errors.hpp"

namespace ibt::suites {
namespace {

namespace po = boost::program_options;

po::options_description describe_options(CollectivesArgs& a) {
  po::options_description sizes("Message sizes (nccl-tests' flags; sizes accept K, M, G suffixes, binary)");
  sizes.add_options()("min-bytes,b", po::value(&a.min_bytes)->default_value(a.min_bytes), "smallest size")(
      "max-bytes,e", po::value(&a.max_bytes)->default_value(a.max_bytes), "largest size")(
      "step-factor,f", po::value(&a.step_factor)->default_value(a.step_factor),
      "multiply the size by this between steps")("step-bytes,i", po::value(&a.step_bytes)->default_value(a.step_bytes),
                                                 "add this many bytes between steps instead (0: use --step-factor)");
  po::options_description what("What to measure");
  what.add_options()("op", po::value(&a.ops)->default_value(a.ops),
                     "comma list of all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv, "
                     "ping_pong, or all (not -t: that is nccl-tests' threads)")(
      "dtype,d", po::value(&a.dtypes)->default_value(a.dtypes),
      "comma list of float32, float64, int32, bfloat16, float16 (fp8_e4m3, fp8_e5m2 on nccl), or all "
      "(every type the backend has); nccl-tests' names float, double, half work too; bf16/fp16 "
      "reduce through a user-defined MPI op")(
      "reduce-op,o", po::value(&a.reduce_op)->default_value(a.reduce_op),
      "sum, prod, min, max, or avg (nccl only: MPI has no average). prod is checked exactly while "
      "the product fits the type (|5^ranks|)")("root,r", po::value(&a.root)->default_value(a.root),
                                               "root rank (within the group) of broadcast")(
      "scope", po::value(&a.scopes)->default_value(a.scopes),
      "intra (one scale-up domain), inter (one rank per domain, same local index), world, or all "
      "(inter is skipped with a note when the job has one domain)")(
      "domain-size", po::value(&a.domain_size)->default_value(a.domain_size),
      "declare every K consecutive ranks a domain (0: ranks that share memory)")(
      "placement", po::value(&a.placement)->default_value(a.placement), "out, in or both");
  po::options_description how("How to measure");
  how.add_options()("iters,n", po::value(&a.iters)->default_value(a.iters), "timed iterations per size")(
      "warmup-iters,w", po::value(&a.warmup)->default_value(a.warmup), "untimed iterations first")(
      "check,c", po::value(&a.check)->default_value(a.check),
      "N: check every result in N separate, untimed passes (nccl-tests' -c); 0: skip")(
      "agg-iters,m", po::value(&a.backend_flags.agg_iters)->default_value(a.backend_flags.agg_iters),
      "calls per timed iteration; the time is per call (nccl-tests' -m; on mpi the calls run back "
      "to back, as MPI has no group aggregation)")(
      "run-cycles,N", po::value(&a.cycles)->default_value(a.cycles),
      "run the whole sweep this many times, every cycle printed and stored (nccl-tests' -N; 0, "
      "infinite, is refused: nothing here runs unbounded)")(
      "timing", po::value(&a.timing)->default_value(a.timing),
      "loop: nccl-tests' timing (-n calls back to back, timed as a whole); imb: Intel MPI Benchmarks' "
      "(an untimed pass of -n calls before the -w warm-ups, a barrier before every call, each call timed "
      "alone, buffers reused unless --rotate-bytes is given and placed as malloc places them; -a "
      "avg/min/max = IMB's t_avg/t_min/t_max). See the text above")(
      "blocking,z", po::value(&a.blocking)->default_value(a.blocking),
      "1: barrier (untimed) between iterations, so each is timed alone")(
      "average,a", po::value(&a.aggregation)->default_value(a.aggregation),
      "combine per-rank mean times by avg, min, max or rank0 (nccl-tests' 1, 2, 3, 0; avg is "
      "nccl-tests' default, max the slowest rank)")(
      "timeout,T", po::value(&a.timeout)->default_value(a.timeout),
      "seconds a rank may wait for the others at a measurement's start, and that may pass without "
      "any call of the op completing (a slow measurement that keeps completing calls is not a "
      "stall); past it the job ends, naming the op, scope, size and the ranks that did not arrive "
      "(pid and host), and the run is marked failed with every row measured before kept. A rank "
      "that stops progressing, rank 0 included, ends the job within T + 15 s; a killed one at once "
      "(the launcher names its pid, the run's rank_pids maps it to the rank)")(
      "rotate-bytes", po::value(&a.rotate)->default_value(a.rotate),
      "rotate smaller messages through a pool of this size so caches do not flatter them "
      "(0: reuse one buffer, as OSU and IMB do by default)")(
      "backend", po::value(&a.backend)->default_value(a.backend),
      "mpi (host buffers) or nccl (one GPU per rank, device buffers, CUDA-event timing)")(
      "cuda-graph,G", po::value(&a.cuda_graph)->default_value(a.cuda_graph),
      "nccl: 1 captures each call once as a CUDA graph and replays it (as nccl-tests -G)")(
      "nccl-comm", po::value(&a.nccl_comm)->default_value(a.nccl_comm),
      "nccl: build group communicators by ncclCommSplit (split) or a fresh init per group (init)")(
      "threads,t", po::value(&a.backend_flags.threads)->default_value(a.backend_flags.threads),
      "threads per process (nccl-tests' -t): 1; ibt runs one rank per process")(
      "gpus,g", po::value(&a.backend_flags.gpus)->default_value(a.backend_flags.gpus),
      "GPUs per thread (nccl-tests' -g): 1; the nccl backend drives one GPU per rank")(
      "report-cputime,C", po::value(&a.backend_flags.report_cputime)->default_value(a.backend_flags.report_cputime),
      "1: label the time as CPU time (nccl-tests' -C); the mpi backend's time is the host clock "
      "around blocking calls either way; not on nccl yet")(
      "local-register,R", po::value(&a.backend_flags.local_register)->default_value(a.backend_flags.local_register),
      "buffer registration (nccl-tests' -R): 0 only (MPI has no registration call; not on nccl yet)");
  po::options_description output("Output");
  output.add_options()("out", po::value(&a.out), "append this run to an HDF5 results file (created if missing)")(
      "output-format", po::value(&a.output_format)->default_value(a.output_format),
      "ibt (scope, group, p50/p99 columns) or nccl-tests (nccl-tests' own lines, read unchanged by "
      "scripts that parse nccl-tests logs)")(
      "wide", po::bool_switch(&a.wide),
      "ibt's table with one line per size (174 columns), out-of-place and in-place side by side; by default "
      "each line fits 120 columns, a size's in-place half on the line below its out-of-place half")(
      "outlier-threshold", po::value(&a.outlier_threshold)->default_value(a.outlier_threshold),
      "intra/inter: a domain (rail) whose busbw is below median x (1 - t) at sizes >= "
      "--outlier-bandwidth-from, or whose time is above median x (1 + t) below it, is named (as "
      "p2p-matrix)")("outlier-bandwidth-from",
                     po::value(&a.outlier_bandwidth_from)->default_value(a.outlier_bandwidth_from),
                     "size from which domains are judged by busbw rather than time");
  po::options_description testing("Testing (fault injection)");
  testing.add_options()("inject-stall", po::value(&a.inject_stall),
                        "RANK:K[:inside] - RANK stops before measurement K (0-based), to exercise --timeout; with "
                        ":inside it stops after the start gate, so the others wait inside the op (the watchdog)")(
      "inject-wrong", po::value(&a.inject_wrong),
      "RANK - perturb RANK's checked result, to exercise the correctness check");
  po::options_description all("options");
  all.add_options()("help,h", "show this help");
  all.add(sizes).add(what).add(how).add(output).add(testing);
  return all;
}

const char* kUsage = "mpiexec -n N ibt collectives [options]      (or srun ... ibt collectives)";
const char* kHelpIntro =
    "Measures collectives as nccl-tests does: per size, warm-up, then --iters timed iterations;\n"
    "the time is the mean per iteration, combined over ranks (--average), with per-iteration\n"
    "p50/p99 of the slowest rank. algbw = bytes/time; busbw = algbw x factor: 2(n-1)/n for\n"
    "all_reduce, (n-1)/n for all_gather, reduce_scatter and all_to_all, 1 otherwise. Sizes are\n"
    "the whole buffer as nccl-tests counts them (all_gather: output; reduce_scatter and\n"
    "all_to_all: input); IMB and OSU quote per-peer sizes for those three. ping_pong reports\n"
    "half the round trip of a group of 2. Every result is checked (#wrong, summed over ranks);\n"
    "a wrong value makes the exit status 1.\n\n"
    "Timing modes (--timing, stored with every run):\n"
    "  loop  nccl-tests: -n calls back to back, the loop timed whole, time per call. Consecutive\n"
    "        calls overlap a little, as in a training step; compare with nccl-tests. Unlike imb\n"
    "        it rotates buffers through --rotate-bytes (64 MiB: caches cold, 1.2-3.8x IMB's time at\n"
    "        16 KiB-4 MiB on a 2-core host) and has no untimed pass (128 B-4 KiB sizes first met\n"
    "        in the timed loop read up to 3x); docs/measurements/imb-agreement.md has the runs.\n"
    "  imb   Intel MPI Benchmarks (IMB-MPI1): per size an untimed pass of -n calls, then the -w\n"
    "        warm-ups, then a barrier before every call, each call timed alone (IMB's order),\n"
    "        one buffer reused; -a avg|min|max = IMB's t_avg|t_min|t_max; ping_pong and send_recv\n"
    "        are timed as a loop, as IMB's PingPong and Sendrecv. Compare with IMB (its sizes for\n"
    "        all_gather, reduce_scatter, all_to_all are per rank: multiply by the group). A build\n"
    "        with CUDA reads faster than IMB at 1 MiB and up (the note it prints says why).\n"
    "-z 1 puts a barrier between loop iterations too. Flags follow nccl-tests (-t -g -b -e -i -f\n"
    "-n -m -w -N -c -o -d -r -z -T -G -C -a -R and their long names); the collectives are --op.\n"
    "intra/inter scopes store one row per domain (rail) too, and name a slow one.\n";
}  // namespace

// Parses argv (nccl-tests' spellings taken) into `args`; false when --help was asked for
// (rank 0 has printed it). rotate_given: --rotate-bytes was on the command line.
bool parse_collectives_args(int argc, char** argv, const MpiSession& mpi, CollectivesArgs& args, bool& rotate_given) {
  const po::options_description options = describe_options(args);
  po::variables_map vm;
  const std::vector<std::string> spelled = nccl_tests_spellings(argc, argv);
  store_command_line(std::vector<std::string>(spelled.begin() + 1, spelled.end()), options, vm);
  if (vm.count("help")) {
    if (mpi.rank() == 0)
      print_help(std::cout, kUsage, kHelpIntro, options,
                 {"mpiexec -n 8 ibt collectives -b 8 -e 128M -f 2 --op all_reduce --out results.h5",
                  "mpiexec -n 16 ibt collectives --scope intra --domain-size 8 --op all_gather,reduce_scatter",
                  "mpiexec -n 8 ibt collectives --backend nccl -d bfloat16 -o avg --output-format nccl-tests"});
    return false;
  }
  po::notify(vm);
  rotate_given = !vm["rotate-bytes"].defaulted();
  return true;
}

// The flags the harness options do not check; imb timing's buffer reuse settled. Returns
// --outlier-bandwidth-from in bytes.
std::size_t check_output_flags(CollectivesArgs& args, bool rotate_given) {
  if (args.cuda_graph != 0 && args.cuda_graph != 1) throw UsageError("--cuda-graph must be 0 or 1");
  check_backend_flags(args.backend_flags, args.backend);
  if (args.output_format != "ibt" && args.output_format != "nccl-tests")
    throw UsageError("--output-format must be ibt or nccl-tests (got '" + args.output_format + "')");
  if (args.wide && args.output_format == "nccl-tests")
    throw UsageError("--wide lays out ibt's table; --output-format nccl-tests prints nccl-tests' own lines: give one");
  // IMB reuses one buffer per role unless told otherwise (-off_cache): so does imb timing.
  if (args.timing == "imb" && !rotate_given) args.rotate = "0";
  return parse_size(args.outlier_bandwidth_from, "--outlier-bandwidth-from");
}

HarnessOptions to_harness_options(const CollectivesArgs& a, const Backend& backend) {
  HarnessOptions h;
  h.ops = parse_collectives(a.ops);
  if (a.dtypes == "all") {  // nccl-tests' -d all: every type the backend has
    for (DType t : {DType::float32, DType::float64, DType::int32, DType::bfloat16, DType::float16, DType::fp8_e4m3,
                    DType::fp8_e5m2})
      if (backend.supports(t)) h.dtypes.push_back(t);
  } else {
    h.dtypes = parse_dtype_list(a.dtypes);
  }
  for (DType t : h.dtypes)
    if (!backend.supports(t))
      throw UsageError("dtype " + std::string(to_string(t)) + " is not available on the " + backend.name() +
                       " backend");
  h.reduce_op = parse_reduce_op(a.reduce_op);
  SizeSweep sweep;
  sweep.min_bytes = parse_size(a.min_bytes, "--min-bytes");
  sweep.max_bytes = parse_size(a.max_bytes, "--max-bytes");
  sweep.step_bytes = parse_size(a.step_bytes, "--step-bytes");
  sweep.factor = a.step_factor;
  h.sizes = expand(sweep);
  if (a.placement == "both")
    h.placements = {Placement::out_of_place, Placement::in_place};
  else if (a.placement == "out")
    h.placements = {Placement::out_of_place};
  else if (a.placement == "in")
    h.placements = {Placement::in_place};
  else
    throw UsageError("--placement must be out, in or both (got '" + a.placement + "')");
  require_positive(a.iters, "--iters");
  if (a.check < 0) throw UsageError("--check must not be negative (0: off, N: N checked passes)");
  if (a.cycles < 1) throw UsageError("--run-cycles must be at least 1 (nccl-tests' 0, run forever, is not offered)");
  if (!(a.outlier_threshold > 0 && a.outlier_threshold < 1))
    throw UsageError("--outlier-threshold must be between 0 and 1");
  if (a.warmup < 0) throw UsageError("--warmup-iters must not be negative");
  if (a.blocking != 0 && a.blocking != 1) throw UsageError("--blocking must be 0 or 1");
  require_timeout(a.timeout, "--timeout");
  if (a.root < 0) throw UsageError("--root must not be negative");
  h.iters = a.iters;
  h.warmup_iters = a.warmup;
  h.check = a.check > 0;
  h.check_iters = a.check;
  h.agg_iters = a.backend_flags.agg_iters;
  h.timing = parse_timing_mode(a.timing);
  h.blocking = a.blocking == 1;
  h.aggregation = parse_rank_aggregation(a.aggregation);
  h.root = a.root;
  h.timeout_seconds = a.timeout;
  h.rotate_bytes = parse_size(a.rotate, "--rotate-bytes");
  apply_fault_injection(a.inject_stall, a.inject_wrong, h);
  return h;
}

void apply_fault_injection(const std::string& inject_stall, int inject_wrong, HarnessOptions& h) {
  if (!inject_stall.empty()) {
    const auto colon = inject_stall.find(':');
    try {
      h.stall_rank = std::stoi(inject_stall.substr(0, colon));
      h.stall_at_measurement = colon == std::string::npos ? 0 : std::stoi(inject_stall.substr(colon + 1));
      h.stall_inside = inject_stall.ends_with(":inside");
    } catch (const std::exception&) {
      throw UsageError("--inject-stall expects RANK:K (got '" + inject_stall + "')");
    }
  }
  h.corrupt_rank = inject_wrong;
}

std::vector<Scope> feasible_scopes(const std::string& requested, const DomainLayout& layout,
                                   std::vector<std::string>& notes) {
  std::vector<Scope> scopes;
  for (Scope s : parse_scopes(requested)) {
    if (s == Scope::inter && requested == "all" && layout.num_domains < 2) {
      notes.push_back("scope inter skipped: the job has one domain (" + layout.method + ")");
      continue;
    }
    // One domain: intra is the same group of ranks as world; measure it once, as world.
    if (s == Scope::intra && requested == "all" && layout.num_domains < 2) {
      notes.push_back(
          "scope intra skipped: the job has one domain, so intra is the same ranks as world (measured "
          "once, as world; --scope intra measures it by that name)");
      continue;
    }
    group_key(s, layout);  // throws UsageError when the scope cannot exist
    scopes.push_back(s);
  }
  return scopes;
}

nlohmann::json collectives_config(const CollectivesArgs& args) {
  return {{"ops", args.ops},
          {"dtypes", args.dtypes},
          {"reduce_op", args.reduce_op},
          {"scopes", args.scopes},
          {"min_bytes", args.min_bytes},
          {"max_bytes", args.max_bytes},
          {"step_factor", args.step_factor},
          {"step_bytes", args.step_bytes},
          {"iters", args.iters},
          {"warmup_iters", args.warmup},
          {"check", args.check},
          {"blocking", args.blocking},
          {"average", args.aggregation},
          {"timeout_s", args.timeout},
          {"rotate_bytes", args.rotate},
          {"placement", args.placement},
          {"root", args.root},
          {"domain_size", args.domain_size},
          {"backend", args.backend},
          {"cuda_graph", args.cuda_graph},
          {"nccl_comm", args.nccl_comm},
          {"timing", args.timing},
          {"agg_iters", args.backend_flags.agg_iters},
          {"run_cycles", args.cycles},
          {"report_cputime", args.backend_flags.report_cputime},
          {"output_format", args.output_format},
          {"outlier_threshold", args.outlier_threshold},
          {"outlier_bandwidth_from", args.outlier_bandwidth_from}};
}

}  // namespace ibt::suites
