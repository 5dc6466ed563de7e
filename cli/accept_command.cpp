// ibt accept: cluster acceptance. Runs what a reference file asks for (collectives per
// scope through the harness, the point-to-point matrix), judges every metric against its
// target and tolerances, prints a PASS/FAIL table, writes JUnit XML for CI, stores it all
// in HDF5 (a run of kind "accept") and exits non-zero on any failure or wrong result.
//
// This file holds the command line and the run's course; the parts live beside it:
// accept_measure (what to run, and running it), accept_from_file (--from), accept_judge
// (verdicts, the table and its rows), accept_junit (the JUnit file), accept_generate
// (--generate-reference) and accept_reference (the reference file).
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "cli/accept_measure.hpp"
#include "cli/cli.hpp"
#include "cli/collectives_args.hpp"
#include "cli/commands.hpp"
#include "collectives/acceptance/accept_baseline.hpp"
#include "collectives/acceptance/accept_from_file.hpp"
#include "collectives/acceptance/accept_generate.hpp"
#include "collectives/acceptance/accept_judge.hpp"
#include "collectives/acceptance/accept_junit.hpp"
#include "collectives/acceptance/accept_reference.hpp"
#include "collectives/acceptance/accept_where.hpp"
#include "collectives/arrival_gate.hpp"
#include "collectives/provenance.hpp"
#include "collectives/runtime/backends.hpp"
#include "collectives/runtime/job_facts.hpp"
#include "collectives/runtime/job_guard.hpp"
#include "collectives/runtime/mpi_session.hpp"
#include "core/output_file.hpp"
#include "core/text_wrap.hpp"
#include "ibt/version.hpp"
#include "reports/store/store.hpp"

extern char** environ;

namespace ibt::suites {
namespace {

namespace po = boost::program_options;

const char* kUsage =
    "mpiexec -n N ibt accept --reference REF.json [--junit FILE.xml] [--out FILE.h5]\n"
    "       ibt accept --reference REF.json --from RESULTS.h5 [--run N] [--junit FILE.xml]\n"
    "       ibt accept --generate-reference TOPOLOGY --ranks N | RESULTS.h5 [--run N] [--write REF.json]";
const char* kAbout =
    "Acceptance against a reference (ReFrame style): every metric names an op, scope, dtype and\n"
    "size (or size range) and a target with tolerances as fractions of it: bounds =\n"
    "target x (1 + lower) .. target x (1 + upper), null = open. The collectives the metrics need\n"
    "run through the harness (out-of-place, or in-place for broadcast; results checked), p2p metrics through the\n"
    "point-to-point matrix; --from judges a file an earlier `ibt collectives` (and `ibt p2p-matrix`)\n"
    "run wrote instead. Prints per metric the judged statistic (p50_us, busbw_GBps, ...), measured,\n"
    "target, bounds and margin: (measured - target) / target in the metric's good direction,\n"
    "+ = better than target. Any FAIL, any wrong value or a metric that could not be measured\n"
    "makes the exit status 1. With --junit the JUnit file is written in every case: a run that\n"
    "times out, crashes or is killed leaves a failed testcase \"run\" with the reason.\n"
    "The reference's job section (ranks, domain_size, iters, warmup_iters) fixes how it was\n"
    "meant to run; a job of another size is refused. See topologies/references/.\n"
    "--generate-reference writes a reference instead: from a catalog topology before anything is\n"
    "measured, or from a results file of a run known to be good (its measured values become the\n"
    "targets: the way to guard a cluster, or this machine, against later regressions).\n";

// The parsed command line.
struct AcceptArgs {
  std::string reference_path, junit, out, backend_name = "mpi", generate_from, write_to, from, run_spec = "last";
  std::string inject_stall;  // testing hooks, as collectives has them
  int inject_wrong = -1;
  double timeout = 60, efficiency = 0;
  int generate_ranks = 0;
  bool force = false;
  bool wide = false;  // the verdict table at its old widths, one line per metric
  // Given on the command line (an empty --junit or --write is refused by name, --efficiency
  // checked only when given).
  bool junit_given = false, write_given = false, efficiency_given = false;
};

po::options_description accept_options(AcceptArgs& a) {
  po::options_description opts("options");
  opts.add_options()("help,h", "show this help")("reference", po::value(&a.reference_path),
                                                 "reference file (JSON), e.g. topologies/references/local-cpu.json")(
      "junit", po::value(&a.junit), "write a JUnit XML report here (one testcase per metric, plus correctness)")(
      "out", po::value(&a.out), "append this run (kind accept) to an HDF5 results file")(
      "timeout,T", double_value(&a.timeout),
      "seconds without progress before a measurement counts as stalled "
      "(no call of the op completed; a rank not arriving); a rank that stops progressing, rank 0 "
      "included, ends the job within T + 15 s")("backend", po::value(&a.backend_name)->default_value(a.backend_name),
                                                "mpi or nccl (collectives; p2p is MPI)")(
      "generate-reference", po::value(&a.generate_from),
      "SOURCE: instead of measuring, write a reference. From a catalog topology (name or .json path): "
      "targets from its link figures, before anything is measured. From a results file (.h5): targets are what "
      "its collectives run (--run) and p2p matrix measured, for a system known to be good")(
      "ranks", po::value(&a.generate_ranks), "--generate-reference: ranks of the job the reference is for")(
      "efficiency", po::value(&a.efficiency),
      "--generate-reference: fraction of link bandwidth to expect (default: the topology's model efficiencies)")(
      "write", po::value(&a.write_to), "--generate-reference: the file to write (default: standard output)")(
      "force", po::bool_switch(&a.force), "replace the --junit or --write file when it exists")(
      "wide", po::bool_switch(&a.wide),
      "the verdict table with one line per metric at fixed widths (about 140 columns and more with a note); by "
      "default every line fits 120 columns, a verdict's note continuing under it")(
      "from", po::value(&a.from),
      "FILE.h5: judge a results file instead of measuring (no MPI job needed): the collectives run --run names, "
      "and for p2p metrics the newest run in the file with a p2p matrix")(
      "run", po::value(&a.run_spec)->default_value(a.run_spec),
      "--from, or --generate-reference FILE.h5: the collectives run to read: its id (000003), its number (3) or "
      "last (the newest collectives run); --generate-reference also takes several, comma-separated (3,4,5), or "
      "all: each target is then the median over the runs");
  po::options_description testing("Testing (fault injection)");
  testing.add_options()("inject-stall", po::value(&a.inject_stall),
                        "RANK:K[:inside] - RANK stops before measurement K of each op measured, to exercise "
                        "--timeout (the JUnit file then names the rank and its host); with :inside it stops inside "
                        "the op")("inject-wrong", po::value(&a.inject_wrong),
                                  "RANK - perturb RANK's checked result, to exercise the correctness check (the JUnit "
                                  "failure names the rank and its host)");
  opts.add(testing);
  return opts;
}

// Parses argv into `a`; false when --help was asked for (rank 0 has printed it).
bool parse_accept_args(int argc, char** argv, const MpiSession& mpi, AcceptArgs& a) {
  const po::options_description opts = accept_options(a);
  po::variables_map vm;
  store_command_line(argc, argv, opts, vm);
  if (vm.count("help")) {
    if (mpi.rank() == 0)
      print_help(std::cout, kUsage, kAbout, opts,
                 {"mpiexec -n 2 ibt accept --reference topologies/references/local-cpu.json --junit accept.xml",
                  "ibt accept --reference topologies/references/local-cpu.json --from cluster.h5 --junit accept.xml",
                  "ibt accept --generate-reference dgx-h100 --ranks 16 --write h100-16.json",
                  "ibt accept --generate-reference known-good.h5 --write mine.json"});
    return false;
  }
  po::notify(vm);
  a.junit_given = vm.count("junit") > 0;
  a.write_given = vm.count("write") > 0;
  a.efficiency_given = vm.count("efficiency") > 0;
  return true;
}

// Refused before anything is generated or measured (every rank sees the same files).
void refuse_existing_outputs(const AcceptArgs& a) {
  const std::vector<InputFile> inputs = {
      {"--reference", a.reference_path}, {"--from", a.from}, {"--generate-reference", a.generate_from}};
  refuse_output_over_inputs(a.junit, "--junit", inputs);
  refuse_output_over_inputs(a.write_to, "--write", inputs);
  refuse_output_over_inputs(a.out, "--out", inputs);
  if (!a.junit.empty() || a.junit_given) refuse_existing_output(a.junit, "--junit", a.force);
  if (!a.write_to.empty() || a.write_given) refuse_existing_output(a.write_to, "--write", a.force);
}

// --run of --generate-reference: one run spec, or several separated by commas.
std::vector<std::string> run_list(const std::string& text) {
  std::vector<std::string> specs;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string spec = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (spec.empty()) throw UsageError("--run '" + text + "': an empty run name; give runs as 3,4,5, last or all");
    if (spec == "all" && text != "all") throw UsageError("--run '" + text + "': all stands alone");
    specs.push_back(spec);
    if (comma == std::string::npos) return specs;
    start = comma + 1;
  }
}

// --generate-reference: writes (rank 0) a default reference instead of measuring.
int write_generated_reference(const AcceptArgs& a, const MpiSession& mpi) {
  const bool from_results = is_results_file(a.generate_from);
  if (from_results && (a.generate_ranks != 0 || a.efficiency_given))
    throw UsageError("--generate-reference " + a.generate_from +
                     ": a results file gives the job and the targets itself; drop --ranks and --efficiency");
  if (a.efficiency_given && !(a.efficiency > 0 && a.efficiency <= 1))
    throw UsageError("--efficiency must be in (0, 1]");
  const auto reference =
      from_results ? reference_from_runs(a.generate_from, run_list(a.run_spec))
                   : generate_reference(topo::load_topology(a.generate_from), a.generate_ranks,
                                        a.efficiency_given ? std::optional<double>(a.efficiency) : std::nullopt);
  if (mpi.rank() != 0) return kExitOk;
  if (a.write_to.empty()) {
    std::cout << reference.dump(2) << "\n";
    return kExitOk;
  }
  write_output_file(a.write_to, reference.dump(2) + "\n", "--write");
  std::printf("ibt accept: wrote %s (%zu metrics) from %s %s\n", a.write_to.c_str(), reference["metrics"].size(),
              from_results ? "results file" : "topology", a.generate_from.c_str());
  return kExitOk;
}

// The reference, refused when missing or made for a job of another size.
AcceptReference load_job_reference(const AcceptArgs& a, const MpiSession& mpi) {
  if (a.reference_path.empty())
    throw UsageError("--reference is required (or --generate-reference TOPOLOGY|RESULTS.h5)");
  require_timeout(a.timeout, "--timeout");
  AcceptReference ref = load_reference(a.reference_path);  // every rank parses: same errors everywhere
  if (!a.from.empty()) return ref;                         // the file's run is checked against the job instead
  if (ref.job.ranks > 0 && ref.job.ranks != mpi.size())
    throw UsageError(a.reference_path + ": the reference is for " + std::to_string(ref.job.ranks) +
                     " ranks; this job has " + std::to_string(mpi.size()) + " (mpiexec -n " +
                     std::to_string(ref.job.ranks) + ")");
  return ref;
}

// Rank 0: the run's provenance and the header line.
void start_accept_run(RunRecorder& recorder, int argc, char** argv, const MpiSession& mpi, const JobFacts& facts,
                      const Backend& backend, const DomainLayout& layout, const AcceptArgs& a,
                      const AcceptReference& ref) {
  recorder.set_attr("command_line", joined_command_line(argc, argv));
  recorder.set_attr("ibt_version", std::string(kVersion));
  recorder.set_attr("git_commit", std::string(kGitCommit));
  recorder.set_attr("world_size", static_cast<std::int64_t>(mpi.size()));
  record_job_facts(&recorder, facts, "ibt accept");
  recorder.set_attr("backend", backend.name());
  for (const auto& [key, value] : backend.provenance()) recorder.set_attr(key, value);
  recorder.set_attr("domains", static_cast<std::int64_t>(layout.num_domains));
  recorder.set_attr("domain_method", layout.method);
  recorder.set_attr("reference", a.reference_path);
  recorder.set_attr("reference_system", ref.system);
  recorder.set_attr("reference_json", ref.text);
  recorder.set_environment(allowed_environment(environ));
  char line[2048];
  std::snprintf(line, sizeof line,
                "# ibt accept %s (%s): reference %s (%s), %zu metrics, %d ranks on %zu host(s), %d domain(s) by %s\n",
                kVersion, kGitCommit, a.reference_path.c_str(), ref.system.c_str(), ref.metrics.size(), mpi.size(),
                facts.hosts.size(), layout.num_domains, layout.method.c_str());
  std::fputs(comment_lines(line, report_width(a.wide)).c_str(), stdout);
  std::fflush(nullptr);
}

// Rank 0: the verdict lines, the JUnit file, the run's status; the exit status.
int finish_accept_run(const AcceptArgs& a, const AcceptReference& ref, const std::vector<Verdict>& verdicts,
                      const Failures& failed, const AcceptMeasurements& measured, double started,
                      RunRecorder& recorder) {
  const std::uint64_t wrong = measured.wrong;
  std::printf("# correctness: %llu wrong values %s\n", static_cast<unsigned long long>(wrong), wrong ? "FAIL" : "PASS");
  for (const std::string& where : measured.wrong_where)
    std::fputs(comment_lines("#   " + where + "\n", report_width(a.wide)).c_str(), stdout);
  const bool ok = failed.count == 0 && wrong == 0;
  const std::string verdict = std::string("# verdict: ") + (ok ? "PASS" : "FAIL") + " (" +
                              std::to_string(verdicts.size()) + " metrics, " + std::to_string(failed.count) +
                              " failed" + (failed.count ? ": " : "") + failed.names + ")\n";
  std::fputs(comment_lines(verdict, report_width(a.wide)).c_str(), stdout);
  if (!a.junit.empty()) {
    write_junit(a.junit, ref, verdicts, wrong, measured.wrong_where, MPI_Wtime() - started);
    std::printf("# JUnit XML: %s\n", a.junit.c_str());
  }
  recorder.set_attr("verdict", std::string(ok ? "PASS" : "FAIL"));
  if (ok) {
    recorder.finish(store::RunStatus::complete);
    return kExitOk;
  }
  std::string why = failed.count ? std::to_string(failed.count) + " metrics failed: " + failed.names : "";
  if (wrong) why += (why.empty() ? "" : "; ") + std::to_string(wrong) + " wrong values";
  recorder.finish(store::RunStatus::failed, "acceptance failed: " + why);
  std::fprintf(stderr, "ibt accept: FAIL: %s\n", why.c_str());
  return kExitFailure;
}

// --from: judges the file's measurements; one process, nothing measured.
int judge_file(int argc, char** argv, const AcceptArgs& a, const AcceptReference& ref, const MpiSession& mpi) {
  if (mpi.size() > 1) throw UsageError("--from judges a file: run it as one process (without mpiexec)");
  const double started = MPI_Wtime();
  if (!a.out.empty()) check_output_on_all_ranks(a.out, MPI_COMM_WORLD);
  AcceptMeasurements measured =
      read_accept_measurements(a.from, a.run_spec, a.reference_path, ref, stdout, report_width(a.wide));
  RunRecorder recorder(a.out, "accept");
  recorder.set_attr("command_line", joined_command_line(argc, argv));
  recorder.set_attr("ibt_version", std::string(kVersion));
  recorder.set_attr("git_commit", std::string(kGitCommit));
  recorder.set_attr("reference", a.reference_path);
  recorder.set_attr("reference_system", ref.system);
  recorder.set_attr("reference_json", ref.text);
  recorder.set_attr("judged_from", measured.source);
  const std::string header = std::string("# ibt accept ") + kVersion + " (" + kGitCommit + "): reference " +
                             a.reference_path + " (" + ref.system + "), " + std::to_string(ref.metrics.size()) +
                             " metrics, judged from " + measured.source + "\n";
  std::fputs(comment_lines(header, report_width(a.wide)).c_str(), stdout);
  const std::vector<Verdict> verdicts = judge_metrics(ref, measured);
  const Failures failed = print_and_record_verdicts(verdicts, recorder, report_width(a.wide));
  return finish_accept_run(a, ref, verdicts, failed, measured, started, recorder);
}

int run(int argc, char** argv, MpiSession& mpi) {
  AcceptArgs a;
  if (!parse_accept_args(argc, argv, mpi, a)) return kExitOk;
  refuse_existing_outputs(a);
  HarnessOptions faults;  // the testing hooks, checked before anything is measured
  apply_fault_injection(a.inject_stall, a.inject_wrong, faults);
  if ((!a.inject_stall.empty() || a.inject_wrong >= 0) && (!a.from.empty() || !a.generate_from.empty()))
    throw UsageError("--inject-stall and --inject-wrong act on a measurement: not with --from or --generate-reference");
  require_rank_in_job(faults.stall_rank, "--inject-stall", mpi.size());
  require_rank_in_job(faults.corrupt_rank, "--inject-wrong", mpi.size());
  if (!a.generate_from.empty()) return write_generated_reference(a, mpi);
  const AcceptReference ref = load_job_reference(a, mpi);
  if (!a.from.empty()) return judge_file(argc, argv, a, ref, mpi);
  BackendOptions backend_options;
  backend_options.timeout_s = a.timeout;
  auto backend = make_backend(a.backend_name, MPI_COMM_WORLD, backend_options);
  const DomainLayout layout = detect_domains(MPI_COMM_WORLD, ref.job.domain_size);
  const AcceptWork work = plan_accept_work(ref, layout, *backend, mpi);
  check_output_on_all_ranks(a.out, MPI_COMM_WORLD);

  const JobFacts facts = gather_job_facts(MPI_COMM_WORLD);
  std::unique_ptr<RunRecorder> recorder = open_run_on_all_ranks(a.out, "accept", MPI_COMM_WORLD);
  JobGuard guard("accept", mpi.rank(), recorder.get());
  const double started = MPI_Wtime();
  if (mpi.rank() == 0) start_accept_run(*recorder, argc, argv, mpi, facts, *backend, layout, a, ref);
  if (mpi.rank() == 0 && !a.junit.empty()) {
    // Written now and replaced by the verdict: a job that crashes or is killed before the
    // end still leaves CI a failed testcase; a timeout replaces it with its message.
    write_junit(a.junit, ref, {}, 0, {}, 0,
                "ibt accept started but did not reach its verdict: the job crashed, was killed or is still running");
    const auto t0 = std::chrono::steady_clock::now();  // the hook runs on the watchdog thread: no MPI
    guard.set_on_failure([&a, &ref, t0](const std::string& message) {
      write_junit(a.junit, ref, {}, 0, {}, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                  message);
      std::fprintf(stderr, "# JUnit XML: %s (the run failed: %s)\n", a.junit.c_str(), message.c_str());
    });
  }

  ArrivalGate gate(MPI_COMM_WORLD);
  AcceptMeasurements measured;
  const MeasureContext job{
      *backend, layout, gate, guard, recorder.get(), a.wide, hosts_by_rank(facts.host_of_rank_list, mpi.size()),
      faults};
  try {
    measure_accept_collectives(work, ref, a.timeout, job, measured);
    if (!work.p2p_sizes.empty()) measure_accept_p2p(work, ref, a.timeout, mpi, facts, job, measured);
  } catch (const TimeoutError& e) {
    guard.fail_and_exit(timeout_with_hosts(e, job.hosts), kExitTimeout);  // names the missing ranks' hosts
  }
  if (mpi.rank() != 0) return kExitOk;
  if (measured.p2p) {
    for (const P2pResult& r : measured.p2p->results())
      if (r.wrong > 0) measured.wrong_where.push_back(wrong_bytes_where(r, job.hosts));
    measured.wrong += measured.p2p->wrong();
    measured.p2p->report_outliers(0.5, 64 * 1024, report_width(a.wide));
  }

  const std::vector<Verdict> verdicts = judge_metrics(ref, measured);
  const Failures failed = print_and_record_verdicts(verdicts, *recorder, report_width(a.wide));
  return finish_accept_run(a, ref, verdicts, failed, measured, started, *recorder);
}

}  // namespace

int accept_main(int argc, char** argv) { return run_mpi_suite("accept", argc, argv, run); }

}  // namespace ibt::suites
