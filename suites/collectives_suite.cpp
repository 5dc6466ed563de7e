// ibt collectives: nccl-tests-style microbenchmarks over MPI (or NCCL), per scope.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "collectives/arrival_gate.hpp"
#include "collectives/harness.hpp"
#include "collectives/mpi_backend.hpp"
#include "collectives/provenance.hpp"
#include "collectives/results_schema.hpp"
#include "collectives/sizes.hpp"
#include "ibt/version.hpp"
#include "suites/backends.hpp"
#include "suites/cli.hpp"
#include "suites/collectives_table.hpp"
#include "suites/job_facts.hpp"
#include "suites/job_guard.hpp"
#include "suites/mpi_session.hpp"
#include "suites/suites.hpp"

extern char** environ;

namespace ibt::suites {
namespace {

namespace po = boost::program_options;

struct CollectivesArgs {
  std::string min_bytes = "8", max_bytes = "4M", step_bytes = "0";
  double step_factor = 2.0;
  std::string ops = "all", dtypes = "float32", reduce_op = "sum", scopes = "all", placement = "both";
  std::string aggregation = "max", backend = "mpi", out, rotate = "64M", inject_stall, nccl_comm = "split";
  int cuda_graph = 0;
  int iters = 20, warmup = 5, check = 1, blocking = 0, root = 0, domain_size = 0, inject_wrong = -1;
  double timeout = 60;
};

po::options_description describe_options(CollectivesArgs& a) {
  po::options_description sizes("Message sizes (nccl-tests' flags; sizes accept K, M, G suffixes, binary)");
  sizes.add_options()
      ("min-bytes,b", po::value(&a.min_bytes)->default_value(a.min_bytes), "smallest size")
      ("max-bytes,e", po::value(&a.max_bytes)->default_value(a.max_bytes), "largest size")
      ("step-factor,f", po::value(&a.step_factor)->default_value(a.step_factor),
       "multiply the size by this between steps")
      ("step-bytes,i", po::value(&a.step_bytes)->default_value(a.step_bytes),
       "add this many bytes between steps instead (0: use --step-factor)");
  po::options_description what("What to measure");
  what.add_options()
      ("op,t", po::value(&a.ops)->default_value(a.ops),
       "comma list of all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv, "
       "ping_pong, or all")
      ("dtype,d", po::value(&a.dtypes)->default_value(a.dtypes),
       "comma list of float32, float64, int32, bfloat16, float16 (fp8_e4m3, fp8_e5m2 on nccl); "
       "bf16/fp16 reduce through a user-defined MPI op")
      ("reduce-op,o", po::value(&a.reduce_op)->default_value(a.reduce_op), "sum, max or min")
      ("root,r", po::value(&a.root)->default_value(a.root), "root rank (within the group) of broadcast")
      ("scope", po::value(&a.scopes)->default_value(a.scopes),
       "intra (one scale-up domain), inter (one rank per domain, same local index), world, or all "
       "(inter is skipped with a note when the job has one domain)")
      ("domain-size", po::value(&a.domain_size)->default_value(a.domain_size),
       "declare every K consecutive ranks a domain (0: ranks that share memory)")
      ("placement", po::value(&a.placement)->default_value(a.placement), "out, in or both");
  po::options_description how("How to measure");
  how.add_options()
      ("iters,n", po::value(&a.iters)->default_value(a.iters), "timed iterations per size")
      ("warmup-iters,w", po::value(&a.warmup)->default_value(a.warmup), "untimed iterations first")
      ("check,c", po::value(&a.check)->default_value(a.check),
       "1: check every result in a separate, untimed pass; 0: skip")
      ("blocking,z", po::value(&a.blocking)->default_value(a.blocking),
       "1: barrier (untimed) between iterations, so each is timed alone")
      ("average,a", po::value(&a.aggregation)->default_value(a.aggregation),
       "combine per-rank mean times by avg, min or max (max: the slowest rank, as nccl-tests)")
      ("timeout,T", po::value(&a.timeout)->default_value(a.timeout),
       "seconds one measurement may take; past it the job ends, naming the op, scope, size and "
       "the ranks that did not arrive, and the run is marked failed")
      ("rotate-bytes", po::value(&a.rotate)->default_value(a.rotate),
       "rotate smaller messages through a pool of this size so caches do not flatter them "
       "(0: reuse one buffer, as OSU and IMB do by default)")
      ("backend", po::value(&a.backend)->default_value(a.backend),
       "mpi (host buffers) or nccl (one GPU per rank, device buffers, CUDA-event timing)")
      ("cuda-graph,G", po::value(&a.cuda_graph)->default_value(a.cuda_graph),
       "nccl: 1 captures each call once as a CUDA graph and replays it (as nccl-tests -G)")
      ("nccl-comm", po::value(&a.nccl_comm)->default_value(a.nccl_comm),
       "nccl: build group communicators by ncclCommSplit (split) or a fresh init per group (init)");
  po::options_description output("Output");
  output.add_options()
      ("out", po::value(&a.out), "append this run to an HDF5 results file (created if missing)");
  po::options_description testing("Testing (fault injection)");
  testing.add_options()
      ("inject-stall", po::value(&a.inject_stall),
       "RANK:K[:inside] - RANK stops before measurement K (0-based), to exercise --timeout; with "
       ":inside it stops after the start gate, so the others wait inside the op (the watchdog)")
      ("inject-wrong", po::value(&a.inject_wrong),
       "RANK - perturb RANK's checked result, to exercise the correctness check");
  po::options_description all;
  all.add_options()("help,h", "show this help");
  all.add(sizes).add(what).add(how).add(output).add(testing);
  return all;
}

const char* kHelpIntro =
    "usage: mpiexec -n N ibt collectives [options]      (or srun ... ibt collectives)\n\n"
    "Measures collectives as nccl-tests does: per size, warm-up, then --iters timed iterations;\n"
    "the time is the mean per iteration, combined over ranks (--average), with per-iteration\n"
    "p50/p99 of the slowest rank. algbw = bytes/time; busbw = algbw x factor: 2(n-1)/n for\n"
    "all_reduce, (n-1)/n for all_gather, reduce_scatter and all_to_all, 1 otherwise. Sizes are\n"
    "the whole buffer as nccl-tests counts them (all_gather: output; reduce_scatter and\n"
    "all_to_all: input); IMB and OSU quote per-peer sizes for those three. ping_pong reports\n"
    "half the round trip of a group of 2. Every result is checked (#wrong, summed over ranks);\n"
    "a wrong value makes the exit status 1.\n";

HarnessOptions to_harness_options(const CollectivesArgs& a, const Backend& backend) {
  HarnessOptions h;
  h.ops = parse_collectives(a.ops);
  h.dtypes = parse_dtype_list(a.dtypes);
  for (DType t : h.dtypes)
    if (!backend.supports(t))
      throw UsageError("dtype " + std::string(to_string(t)) + " is not available on the " + backend.name() + " backend");
  h.reduce_op = parse_reduce_op(a.reduce_op);
  SizeSweep sweep;
  sweep.min_bytes = parse_size(a.min_bytes, "--min-bytes");
  sweep.max_bytes = parse_size(a.max_bytes, "--max-bytes");
  sweep.step_bytes = parse_size(a.step_bytes, "--step-bytes");
  sweep.factor = a.step_factor;
  h.sizes = expand(sweep);
  if (a.placement == "both") h.placements = {Placement::out_of_place, Placement::in_place};
  else if (a.placement == "out") h.placements = {Placement::out_of_place};
  else if (a.placement == "in") h.placements = {Placement::in_place};
  else throw UsageError("--placement must be out, in or both (got '" + a.placement + "')");
  require_positive(a.iters, "--iters");
  if (a.warmup < 0) throw UsageError("--warmup-iters must not be negative");
  if (a.check != 0 && a.check != 1) throw UsageError("--check must be 0 or 1");
  if (a.blocking != 0 && a.blocking != 1) throw UsageError("--blocking must be 0 or 1");
  if (!(a.timeout > 0)) throw UsageError("--timeout must be positive");
  if (a.root < 0) throw UsageError("--root must not be negative");
  h.iters = a.iters;
  h.warmup_iters = a.warmup;
  h.check = a.check == 1;
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
    group_key(s, layout);  // throws UsageError when the scope cannot exist
    scopes.push_back(s);
  }
  return scopes;
}

store::Row to_row(const Measurement& m, const std::string& backend) {
  return {m.op, m.scope, backend, m.dtype, m.reduce_op, std::string(to_string(m.placement)),
          static_cast<std::int64_t>(m.group_size), static_cast<std::int64_t>(m.groups),
          static_cast<std::uint64_t>(m.bytes), static_cast<std::uint64_t>(m.count),
          static_cast<std::int64_t>(m.iters), m.time_us, m.p50_us, m.p99_us, m.algbw_GBps, m.busbw_GBps,
          static_cast<std::uint64_t>(m.wrong)};
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

int run(int argc, char** argv, MpiSession& mpi) {
  CollectivesArgs args;
  auto options = describe_options(args);
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(options).run(), vm);
  if (vm.count("help")) {
    if (mpi.rank() == 0) std::cout << kHelpIntro << "\n" << options << "\n";
    return kExitOk;
  }
  po::notify(vm);

  if (args.cuda_graph != 0 && args.cuda_graph != 1) throw UsageError("--cuda-graph must be 0 or 1");
  auto backend = make_backend(args.backend, MPI_COMM_WORLD,
                              {args.timeout, args.cuda_graph == 1, args.nccl_comm});
  const HarnessOptions base = to_harness_options(args, *backend);
  const DomainLayout layout = detect_domains(MPI_COMM_WORLD, args.domain_size);
  std::vector<std::string> notes;
  HarnessOptions harness = base;
  harness.scopes = feasible_scopes(args.scopes, layout, notes);

  check_output_on_all_ranks(args.out, MPI_COMM_WORLD);

  const JobFacts facts = gather_job_facts(MPI_COMM_WORLD);
  std::unique_ptr<RunRecorder> recorder;
  if (mpi.rank() == 0) recorder = std::make_unique<RunRecorder>(args.out, "collectives");
  JobGuard guard("collectives", mpi.rank(), recorder.get());

  if (mpi.rank() == 0) {
    const std::string command = joined_command_line(argc, argv);
    recorder->set_attr("command_line", command);
    recorder->set_attr("ibt_version", std::string(kVersion));
    recorder->set_attr("git_commit", std::string(kGitCommit));
    recorder->set_attr("world_size", static_cast<std::int64_t>(mpi.size()));
    record_job_facts(recorder.get(), facts, "ibt collectives");
    recorder->set_attr("backend", backend->name());
    for (const auto& [key, value] : backend->provenance()) recorder->set_attr(key, value);
    recorder->set_attr("domains", static_cast<std::int64_t>(layout.num_domains));
    recorder->set_attr("domain_method", layout.method);
    nlohmann::json config = {{"ops", args.ops}, {"dtypes", args.dtypes}, {"reduce_op", args.reduce_op},
                             {"scopes", args.scopes}, {"min_bytes", args.min_bytes},
                             {"max_bytes", args.max_bytes}, {"step_factor", args.step_factor},
                             {"step_bytes", args.step_bytes}, {"iters", args.iters},
                             {"warmup_iters", args.warmup}, {"check", args.check},
                             {"blocking", args.blocking}, {"average", args.aggregation},
                             {"timeout_s", args.timeout}, {"rotate_bytes", args.rotate},
                             {"placement", args.placement}, {"root", args.root},
                             {"domain_size", args.domain_size}, {"backend", args.backend},
                             {"cuda_graph", args.cuda_graph}, {"nccl_comm", args.nccl_comm}};
    recorder->set_attr("config", config.dump());
    recorder->set_environment(allowed_environment(environ));

    std::printf("# ibt collectives %s (%s): %d ranks on %zu host(s), %d domain(s) by %s, backend %s\n", kVersion,
                kGitCommit, mpi.size(), facts.hosts.size(), layout.num_domains, layout.method.c_str(),
                backend->name().c_str());
    std::printf("# %d timed iterations after %d warm-up; time = %s over ranks; check %s; %s; rotate %s\n",
                harness.iters, harness.warmup_iters, std::string(to_string(harness.aggregation)).c_str(),
                harness.check ? "on" : "off", harness.blocking ? "blocking" : "non-blocking",
                harness.rotate_bytes ? format_size(harness.rotate_bytes).c_str() : "off");
    if (recorder->active()) std::printf("# results: %s, run %s\n", args.out.c_str(), recorder->run_id().c_str());
    for (const auto& n : notes) std::fprintf(stderr, "# note: %s\n", n.c_str());
    print_table_header(stdout);
    std::fflush(nullptr);
  }

  Summary summary;
  HarnessEvents events;
  events.on_size = [&](const SizeResult& r) {
    print_table_line(stdout, r, args.reduce_op);
    for (const auto* m : {&r.out_of_place, &r.in_place}) {
      if (!*m) continue;
      summary.add(**m);
      recorder->append(kCollectivesTable, collectives_columns(), to_row(**m, backend->name()));
    }
  };
  events.on_note = [](const std::string& text) { std::fprintf(stderr, "# note: %s\n", text.c_str()); };

  ArrivalGate gate(MPI_COMM_WORLD);
  try {
    run_harness(*backend, MPI_COMM_WORLD, layout, harness, gate, guard.watchdog(), events);
  } catch (const TimeoutError& e) {
    guard.fail_and_exit(e.what(), kExitTimeout);
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    // A backend error on this rank (an aborted NCCL op, an MPI error): record it and end
    // the job, since the other ranks may be waiting for this one.
    guard.fail_and_exit(e.what(), kExitFailure);
  }

  if (mpi.rank() != 0) return kExitOk;
  std::printf("#\n# Average bus bandwidth (GB/s, over sizes and placements):\n");
  for (const auto& key : summary.order) {
    const auto& [sum, n] = summary.busbw[key];
    std::printf("#   %-14s %-5s %10.3f\n", key.first.c_str(), key.second.c_str(), n ? sum / n : 0.0);
  }
  std::printf("# Wrong values: %llu%s\n", static_cast<unsigned long long>(summary.wrong),
              harness.check ? "" : " (checking was off)");
  if (summary.wrong > 0) {
    recorder->finish(store::RunStatus::failed, std::to_string(summary.wrong) + " wrong values");
    std::fprintf(stderr, "ibt collectives: error: %llu wrong values (see #wrong)\n",
                 static_cast<unsigned long long>(summary.wrong));
    return kExitFailure;
  }
  recorder->finish(store::RunStatus::complete);
  return kExitOk;
}

}  // namespace

int collectives_main(int argc, char** argv) { return run_mpi_suite("collectives", argc, argv, run); }

}  // namespace ibt::suites
