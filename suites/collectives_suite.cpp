// ibt collectives: nccl-tests-style microbenchmarks over MPI (or NCCL), per scope.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "collectives/arrival_gate.hpp"
#include "collectives/group_outliers.hpp"
#include "collectives/harness.hpp"
#include "collectives/host_memory.hpp"
#include "collectives/mpi_backend.hpp"
#include "collectives/provenance.hpp"
#include "collectives/results_schema.hpp"
#include "collectives/sizes.hpp"
#include "ibt/version.hpp"
#include "suites/backends.hpp"
#include "suites/cli.hpp"
#include "suites/collectives_nccl_flags.hpp"
#include "suites/collectives_nccl_format.hpp"
#include "suites/collectives_table.hpp"
#include "suites/job_facts.hpp"
#include "suites/job_guard.hpp"
#include "suites/mpi_session.hpp"
#include "suites/p2p_rows.hpp"
#include "suites/suites.hpp"

extern char** environ;

namespace ibt::suites {
namespace {

namespace po = boost::program_options;

struct CollectivesArgs {
  std::string min_bytes = "8", max_bytes = "4M", step_bytes = "0";
  double step_factor = 2.0;
  std::string ops = "all", dtypes = "float32", reduce_op = "sum", scopes = "all", placement = "both";
  std::string aggregation = "avg", backend = "mpi", out, rotate = "64M", inject_stall, nccl_comm = "split";
  std::string output_format = "ibt", timing = "loop", outlier_bandwidth_from = "64K";
  int cuda_graph = 0;
  int iters = 20, warmup = 5, check = 1, blocking = 0, root = 0, domain_size = 0, inject_wrong = -1;
  int cycles = 1;
  BackendFlags backend_flags;
  double timeout = 60, outlier_threshold = 0.5;
};

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
      "stall); past it the job ends, naming the op, scope, size and the ranks that did not arrive, "
      "and the run is marked failed with every row measured before kept")(
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
    "        calls overlap a little, as in a training step; compare with nccl-tests.\n"
    "  imb   Intel MPI Benchmarks (IMB-MPI1): per size an untimed pass of -n calls, then the -w\n"
    "        warm-ups, then a barrier before every call, each call timed alone (IMB's order),\n"
    "        one buffer reused; -a avg|min|max = IMB's t_avg|t_min|t_max; ping_pong and send_recv\n"
    "        are timed as a loop, as IMB's PingPong and Sendrecv. Compare with IMB (its sizes for\n"
    "        all_gather, reduce_scatter, all_to_all are per rank: multiply by the group).\n"
    "-z 1 puts a barrier between loop iterations too. Flags follow nccl-tests (-t -g -b -e -i -f\n"
    "-n -m -w -N -c -o -d -r -z -T -G -C -a -R and their long names); the collectives are --op.\n"
    "intra/inter scopes store one row per domain (rail) too, and name a slow one.\n";

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
  if (!a.inject_stall.empty()) {
    const auto colon = a.inject_stall.find(':');
    try {
      h.stall_rank = std::stoi(a.inject_stall.substr(0, colon));
      h.stall_at_measurement = colon == std::string::npos ? 0 : std::stoi(a.inject_stall.substr(colon + 1));
      h.stall_inside = a.inject_stall.ends_with(":inside");
    } catch (const std::exception&) {
      throw UsageError("--inject-stall expects RANK:K (got '" + a.inject_stall + "')");
    }
  }
  h.corrupt_rank = a.inject_wrong;
  return h;
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

store::Row to_row(const Measurement& m, const std::string& backend) {
  return {m.op,
          m.scope,
          backend,
          m.dtype,
          m.reduce_op,
          std::string(to_string(m.placement)),
          static_cast<std::int64_t>(m.group_size),
          static_cast<std::int64_t>(m.groups),
          static_cast<std::uint64_t>(m.bytes),
          static_cast<std::uint64_t>(m.count),
          static_cast<std::int64_t>(m.iters),
          m.time_us,
          m.p50_us,
          m.p99_us,
          m.algbw_GBps,
          m.busbw_GBps,
          static_cast<std::uint64_t>(m.wrong)};
}

// "0-3" or "0,2,4": world ranks of a group.
std::string rank_list(const std::vector<int>& ranks) {
  if (ranks.empty()) return "";
  bool consecutive = true;
  for (std::size_t i = 1; i < ranks.size(); ++i) consecutive = consecutive && ranks[i] == ranks[i - 1] + 1;
  if (consecutive && ranks.size() > 1) return std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

// The distinct hosts of a group's ranks, in rank order.
std::string hosts_of(const std::vector<int>& ranks, const std::vector<std::string>& host_of_rank) {
  std::vector<std::string> seen;
  std::string out;
  for (int r : ranks) {
    const std::string h = r < static_cast<int>(host_of_rank.size()) ? host_of_rank[r] : "?";
    if (std::find(seen.begin(), seen.end(), h) != seen.end()) continue;
    seen.push_back(h);
    out += (out.empty() ? "" : ",") + h;
  }
  return out;
}

struct Summary {
  std::map<std::pair<std::string, std::string>, std::pair<double, int>> busbw;  // (op, scope) -> sum, n
  std::vector<std::pair<std::string, std::string>> order;
  std::uint64_t wrong = 0;
  void add(const Measurement& m) {
    auto key = std::make_pair(m.op, m.scope);
    if (!busbw.count(key)) order.push_back(key);
    busbw[key].first += m.busbw_GBps;
    busbw[key].second += 1;
    wrong += m.wrong;
  }
};

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
  // IMB reuses one buffer per role unless told otherwise (-off_cache): so does imb timing.
  if (args.timing == "imb" && !rotate_given) args.rotate = "0";
  return parse_size(args.outlier_bandwidth_from, "--outlier-bandwidth-from");
}

// The largest measurement's buffers, planned on every host before any is allocated.
void require_host_memory(const CollectivesArgs& args, const HarnessOptions& harness, const DomainLayout& layout,
                         const Backend& backend) {
  const HostMemoryPlan plan = plan_host_memory(harness, layout, backend.buffers_on_host());
  require_memory_on_every_host(MPI_COMM_WORLD, plan.bytes,
                               "--max-bytes " + args.max_bytes + " with --rotate-bytes " + args.rotate + ": " +
                                   plan.what +
                                   " (send and receive buffers, their rotation pools and the check copies, per rank)");
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

// Rank 0: the run's provenance and configuration.
void record_collectives_run(RunRecorder& recorder, int argc, char** argv, const MpiSession& mpi, const JobFacts& facts,
                            const Backend& backend, const DomainLayout& layout, const CollectivesArgs& args) {
  const std::string command = joined_command_line(argc, argv);
  recorder.set_attr("command_line", command);
  recorder.set_attr("ibt_version", std::string(kVersion));
  recorder.set_attr("git_commit", std::string(kGitCommit));
  recorder.set_attr("world_size", static_cast<std::int64_t>(mpi.size()));
  record_job_facts(&recorder, facts, "ibt collectives");
  recorder.set_attr("backend", backend.name());
  for (const auto& [key, value] : backend.provenance()) recorder.set_attr(key, value);
  recorder.set_attr("domains", static_cast<std::int64_t>(layout.num_domains));
  recorder.set_attr("domain_method", layout.method);
  recorder.set_attr("config", collectives_config(args).dump());
  recorder.set_attr("timing_mode", args.timing);
  recorder.set_environment(allowed_environment(environ));
}

// Rank 0: the header lines, the notes (stderr) and, for ibt's format, the table header.
void print_collectives_header(const CollectivesArgs& args, const HarnessOptions& harness, const MpiSession& mpi,
                              const JobFacts& facts, const DomainLayout& layout, const Backend& backend,
                              const RunRecorder& recorder, const std::vector<std::string>& notes) {
  std::printf("# ibt collectives %s (%s): %d ranks on %zu host(s), %d domain(s) by %s, backend %s\n", kVersion,
              kGitCommit, mpi.size(), facts.hosts.size(), layout.num_domains, layout.method.c_str(),
              backend.name().c_str());
  std::printf(
      "# timing %s: %d timed iterations of %d call(s) after %d warm-up; time = %s over ranks; check %s; "
      "%s; rotate %s\n",
      args.timing.c_str(), harness.iters, harness.agg_iters, harness.warmup_iters,
      std::string(to_string(harness.aggregation)).c_str(),
      harness.check ? (std::to_string(harness.check_iters) + "x").c_str() : "off",
      harness.blocking ? "blocking" : "non-blocking",
      harness.rotate_bytes ? format_size(harness.rotate_bytes).c_str() : "off");
  if (recorder.active()) std::printf("# results: %s, run %s\n", args.out.c_str(), recorder.run_id().c_str());
  for (const auto& n : notes) std::fprintf(stderr, "# note: %s\n", n.c_str());
  if (args.output_format != "nccl-tests") print_table_header(stdout);
  std::fflush(nullptr);
}

// Each size's results as they come (rank 0): printed in the chosen format, summed for the
// summary, stored with one row per group, and slow groups named on stderr.
class SizeResults {
 public:
  SizeResults(const CollectivesArgs& args, std::size_t outlier_bandwidth_from, const Backend& backend,
              RunRecorder* recorder, std::vector<std::string> host_of_rank)
      : args_(args),
        outlier_bandwidth_from_(outlier_bandwidth_from),
        nccl_format_(args.output_format == "nccl-tests"),
        backend_(backend),
        recorder_(recorder),
        host_of_rank_(std::move(host_of_rank)),
        nccl_printer_(stdout, {parse_size(args.min_bytes, "--min-bytes"),
                               parse_size(args.max_bytes, "--max-bytes"),
                               parse_size(args.step_bytes, "--step-bytes"),
                               args.step_factor,
                               args.warmup,
                               args.iters,
                               args.backend_flags.agg_iters,
                               args.check,
                               args.cuda_graph,
                               args.blocking,
                               args.backend_flags.report_cputime == 1,
                               args.reduce_op,
                               args.root,
                               {},
                               {},
                               -1}) {}

  void on_size(const SizeResult& r) {
    if (nccl_format_)
      nccl_printer_.line(r);
    else
      print_table_line(stdout, r, args_.reduce_op);
    for (const auto* m : {&r.out_of_place, &r.in_place}) {
      if (!*m) continue;
      summary_.add(**m);
      recorder_->append(kCollectivesTable, collectives_columns(), to_row(**m, backend_.name()));
      record_groups(**m);
    }
  }

  // nccl-tests' header facts: the version line, one "Rank ... device" line per rank.
  NcclTestsRunFacts& nccl_facts() { return nccl_printer_.facts(); }
  // An (op, scope) whose average bus bandwidth is below 90% of NCCL_TESTS_MIN_BW.
  bool below_min_bw() const { return below_min_bw_ || nccl_printer_.below_min_bw(); }

  // The summary lines below the table (rank 0); the wrong values counted.
  std::uint64_t print_summary(bool checked) {
    if (nccl_format_) {
      nccl_printer_.finish();
    } else {
      const double min_bw = nccl_printer_.facts().min_bw;
      std::printf("#\n# Average bus bandwidth (GB/s, over sizes and placements):\n");
      for (const auto& key : summary_.order) {
        const auto& [sum, n] = summary_.busbw[key];
        const double avg = n ? sum / n : 0.0;
        const bool below = min_bw >= 0 && avg < min_bw * 0.9;
        below_min_bw_ = below_min_bw_ || below;
        std::printf("#   %-14s %-5s %10.3f%s\n", key.first.c_str(), key.second.c_str(), avg,
                    min_bw < 0 ? ""
                    : below    ? "  FAILED (NCCL_TESTS_MIN_BW)"
                               : "  OK");
      }
    }
    if (outliers_ > 0)
      std::printf("# Outlier domains: %zu (listed on stderr; rows in table %s)\n", outliers_, kCollectivesGroupsTable);
    std::printf("# Wrong values: %llu%s\n", static_cast<unsigned long long>(summary_.wrong),
                checked ? "" : " (checking was off)");
    return summary_.wrong;
  }

 private:
  // One row per group of the measurement; a group slower than the others is flagged.
  void record_groups(const Measurement& m) {
    const auto slow = find_group_outliers(m.per_group, m.bytes, args_.outlier_threshold, outlier_bandwidth_from_);
    for (const auto& g : m.per_group) {
      const GroupOutlier* flagged = nullptr;
      for (const auto& o : slow)
        if (o.group == g.group) flagged = &o;
      const std::string hosts = hosts_of(g.world_ranks, host_of_rank_), ranks = rank_list(g.world_ranks);
      recorder_->append(
          kCollectivesGroupsTable, collectives_groups_columns(),
          {m.op, m.scope, m.dtype, std::string(to_string(m.placement)), static_cast<std::uint64_t>(m.bytes),
           static_cast<std::int64_t>(g.group), ranks, hosts, g.time_us, g.busbw_GBps,
           static_cast<std::int64_t>(flagged != nullptr), flagged ? flagged->ratio : 0.0});
      if (flagged) {
        ++outliers_;
        std::fprintf(stderr, "# outlier: %s %s %zu B %s: %s %d (hosts %s; ranks %s) %s %.3g, %.2fx the median %.3g\n",
                     m.op.c_str(), m.scope.c_str(), m.bytes, std::string(to_string(m.placement)).c_str(),
                     m.scope == "intra" ? "domain" : "rail", g.group, hosts.c_str(), ranks.c_str(),
                     flagged->metric == "bandwidth" ? "busbw GB/s" : "time us", flagged->value, flagged->ratio,
                     flagged->median);
      }
    }
  }

  const CollectivesArgs& args_;
  std::size_t outlier_bandwidth_from_;
  bool nccl_format_;
  const Backend& backend_;
  RunRecorder* recorder_;
  std::vector<std::string> host_of_rank_;
  Summary summary_;
  NcclTestsPrinter nccl_printer_;
  std::size_t outliers_ = 0;
  bool below_min_bw_ = false;
};

// "MPICH Version:\t4.0.2" -> "MPICH_Version:_4.0.2": one field for parsers that split on blanks.
std::string one_word(std::string s) {
  std::string out;
  for (char c : s) {
    const bool blank = c == ' ' || c == '\t';
    if (blank && !out.empty() && out.back() == '_') continue;
    out += blank ? '_' : c;
  }
  return out;
}

// nccl-tests' "# nccl-tests version" line and "# Using devices" lines (every rank's pid,
// host and device, gathered to rank 0). The mpi backend has no device: "[cpu] host memory".
void describe_devices(NcclTestsRunFacts& f, const Backend& backend, const MpiSession& mpi,
                      const std::vector<std::string>& host_of_rank) {
  const int pid = static_cast<int>(getpid());
  std::vector<int> pids(mpi.rank() == 0 ? mpi.size() : 0);
  MPI_Gather(&pid, 1, MPI_INT, pids.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (mpi.rank() != 0) return;
  std::map<std::string, std::string> prov;
  for (const auto& [k, v] : backend.provenance()) prov[k] = v;
  const bool nccl = backend.name() == "nccl";
  f.version_line = "# nccl-tests version ibt-" + std::string(kVersion) +
                   (nccl ? " nccl-headers=" + prov["nccl_build_version"] + " nccl-library=" + prov["nccl_version"]
                         : " mpi-library=" + one_word(prov["mpi_library"]));
  std::map<std::string, int> next_device;  // per host: ranks in order take devices 0, 1, ...
  for (int r = 0; r < mpi.size(); ++r) {
    const std::string host = r < static_cast<int>(host_of_rank.size()) ? host_of_rank[r] : "?";
    const int device = next_device[host]++;
    f.device_lines.push_back(nccl_tests_device_line(r, pids[r], host, device, nccl ? "gpu" : "cpu",
                                                    nccl ? "GPU (ibt nccl backend)" : "host memory (ibt mpi backend)"));
  }
}

// Every cycle of the sweep; a timeout, a storage error or a backend error ends the job.
void run_cycles(const CollectivesArgs& args, Backend& backend, const DomainLayout& layout,
                const HarnessOptions& harness, ArrivalGate& gate, JobGuard& guard, SizeResults& results) {
  HarnessEvents events;
  events.on_size = [&](const SizeResult& r) { results.on_size(r); };
  events.on_note = [](const std::string& text) { std::fprintf(stderr, "# note: %s\n", text.c_str()); };
  try {
    for (int cycle = 0; cycle < args.cycles; ++cycle)
      run_harness(backend, MPI_COMM_WORLD, layout, harness, gate, guard.watchdog(), events);
  } catch (const TimeoutError& e) {
    guard.fail_and_exit(e.what(), kExitTimeout);
  } catch (const UsageError&) {
    throw;
  } catch (const StorageError& e) {
    guard.fail_and_exit(e.what(), kExitStorage);  // the store undid the append and recorded why
  } catch (const std::exception& e) {
    // A backend error on this rank (an aborted NCCL op, an MPI error): record it and end
    // the job, since the other ranks may be waiting for this one.
    guard.fail_and_exit(e.what(), kExitFailure);
  }
}

int run(int argc, char** argv, MpiSession& mpi) {
  CollectivesArgs args;
  bool rotate_given = false;
  if (!parse_collectives_args(argc, argv, mpi, args, rotate_given)) return kExitOk;
  const std::size_t outlier_bandwidth_from = check_output_flags(args, rotate_given);
  const double min_bw = nccl_tests_min_bw(std::getenv("NCCL_TESTS_MIN_BW"));
  auto backend = make_backend(args.backend, MPI_COMM_WORLD, {args.timeout, args.cuda_graph == 1, args.nccl_comm});
  const HarnessOptions base = to_harness_options(args, *backend);
  require_rank_in_job(base.stall_rank, "--inject-stall", mpi.size());
  require_rank_in_job(base.corrupt_rank, "--inject-wrong", mpi.size());
  const DomainLayout layout = detect_domains(MPI_COMM_WORLD, args.domain_size);
  std::vector<std::string> notes;
  HarnessOptions harness = base;
  harness.scopes = feasible_scopes(args.scopes, layout, notes);
  require_host_memory(args, harness, layout, *backend);
  check_output_on_all_ranks(args.out, MPI_COMM_WORLD);

  const JobFacts facts = gather_job_facts(MPI_COMM_WORLD);
  std::unique_ptr<RunRecorder> recorder = open_run_on_all_ranks(args.out, "collectives", MPI_COMM_WORLD);
  JobGuard guard("collectives", mpi.rank(), recorder.get());
  if (mpi.rank() == 0) {
    record_collectives_run(*recorder, argc, argv, mpi, facts, *backend, layout, args);
    print_collectives_header(args, harness, mpi, facts, layout, *backend, *recorder, notes);
  }

  SizeResults results(args, outlier_bandwidth_from, *backend, recorder.get(),
                      hosts_by_rank(facts.host_of_rank_list, mpi.size()));
  results.nccl_facts().min_bw = min_bw;
  describe_devices(results.nccl_facts(), *backend, mpi, hosts_by_rank(facts.host_of_rank_list, mpi.size()));
  ArrivalGate gate(MPI_COMM_WORLD);
  run_cycles(args, *backend, layout, harness, gate, guard, results);
  if (mpi.rank() != 0) return kExitOk;
  const std::uint64_t wrong = results.print_summary(harness.check);
  if (wrong > 0) {
    recorder->finish(store::RunStatus::failed, std::to_string(wrong) + " wrong values");
    std::fprintf(stderr, "ibt collectives: error: %llu wrong values (see #wrong)\n",
                 static_cast<unsigned long long>(wrong));
    return kExitFailure;
  }
  if (results.below_min_bw()) {
    const std::string why =
        "average bus bandwidth below 90% of NCCL_TESTS_MIN_BW=" + std::string(std::getenv("NCCL_TESTS_MIN_BW")) +
        " GB/s (nccl-tests' rule)";
    recorder->finish(store::RunStatus::failed, why);
    std::fprintf(stderr, "ibt collectives: error: %s\n", why.c_str());
    return kExitFailure;
  }
  recorder->finish(store::RunStatus::complete);
  return kExitOk;
}

}  // namespace

int collectives_main(int argc, char** argv) { return run_mpi_suite("collectives", argc, argv, run); }

}  // namespace ibt::suites
