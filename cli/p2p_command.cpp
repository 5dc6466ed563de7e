// ibt p2p-matrix: ping-pong latency and bandwidth between every pair of ranks (or of
// domains), scheduled as a round-robin tournament, with the outliers named by host and rank.
#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "collectives/arrival_gate.hpp"
#include "collectives/host_memory.hpp"
#include "collectives/p2p_matrix.hpp"
#include "collectives/provenance.hpp"
#include "collectives/runtime/job_facts.hpp"
#include "collectives/runtime/job_guard.hpp"
#include "collectives/runtime/mpi_session.hpp"
#include "collectives/runtime/p2p_rows.hpp"
#include "collectives/sizes.hpp"
#include "core/text_wrap.hpp"
#include "ibt/version.hpp"

extern char** environ;

namespace ibt::suites {
namespace {

namespace po = boost::program_options;

struct P2pArgs {
  std::string sizes = "8,1M", out, bandwidth_from = "64K", inject_delay;
  int iters = 20, warmup = 5, check = 1, domain_size = 0;
  bool domains = false, serial = false, fail_on_outliers = false;
  bool wide = false;  // the header and outlier lines at their old widths, one line each
  double threshold = 0.5, timeout = 60;
};

const char* kUsage = "mpiexec -n N ibt p2p-matrix [options]";
const char* kAbout =
    "Ping-pong between every pair of ranks (or, with --domains, every pair of scale-up domains,\n"
    "rail-aligned: local rank l with local rank l, all local ranks at once). Pairs are scheduled\n"
    "as a round-robin tournament: N-1 rounds (N when odd), every rank in at most one pair per\n"
    "round, all pairs of a round concurrently (--serial: one pair at a time). time = half the\n"
    "round trip (mean over --iters); bandwidth = bytes / time. One buffer per pair, reused (warm\n"
    "caches): `collectives` rotates through 64 MiB unless --rotate-bytes 0, so its ping_pong reads\n"
    "lower where a message fits in cache. Every transfer is checked byte by\n"
    "byte in a separate pass. Outliers: a pair, or a rank's median over its pairs, slower than the\n"
    "median by more than --threshold (bandwidth below median x (1 - t) at sizes >=\n"
    "--bandwidth-from, latency above median x (1 + t) below it), listed by host and rank.\n"
    "Exit status: 0 ok, 1 wrong bytes (or outliers with --fail-on-outliers), 2 bad input, 3 timeout.\n";

po::options_description describe_options(P2pArgs& a) {
  po::options_description o("options");
  o.add_options()("help,h", "show this help")("sizes", po::value(&a.sizes)->default_value(a.sizes),
                                              "comma list of message sizes (K, M, G suffixes)")(
      "iters,n", po::value(&a.iters)->default_value(a.iters), "timed round trips per pair and size")(
      "warmup-iters,w", po::value(&a.warmup)->default_value(a.warmup), "untimed round trips first")(
      "check,c", po::value(&a.check)->default_value(a.check), "1: check every byte in an untimed pass; 0: skip")(
      "domains", po::bool_switch(&a.domains), "pairs of domains instead of pairs of ranks")(
      "domain-size", po::value(&a.domain_size)->default_value(a.domain_size),
      "declare every K consecutive ranks a domain (0: ranks that share memory)")(
      "serial", po::bool_switch(&a.serial), "one pair at a time instead of a whole round at once")(
      "threshold", double_value(&a.threshold), "relative distance from the median that makes an outlier (0.5 = 50%)")(
      "bandwidth-from", po::value(&a.bandwidth_from)->default_value(a.bandwidth_from),
      "sizes from this one up are judged by bandwidth, smaller ones by latency")(
      "fail-on-outliers", po::bool_switch(&a.fail_on_outliers), "exit 1 when any outlier is found")(
      "timeout,T", double_value(&a.timeout),
      "seconds one round may take; past it the job ends naming the ranks that did not arrive (pid and "
      "host); a rank that stops progressing, rank 0 included, ends the job within T + 15 s")(
      "out", po::value(&a.out), "append this run (kind p2p_matrix) to an HDF5 results file")(
      "wide", po::bool_switch(&a.wide),
      "the header and outlier lines on one line each, however long; by default every line fits 120 columns, a "
      "long one continuing on a '#   ' line")(
      "inject-delay", po::value(&a.inject_delay),
      "RANK:US - RANK waits US microseconds before every send (testing the outlier detection)");
  return o;
}

P2pOptions to_options(const P2pArgs& a) {
  P2pOptions o;
  o.sizes.clear();
  std::stringstream ss(a.sizes);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const std::size_t bytes = parse_size(item, "--sizes");
    if (bytes == 0) throw UsageError("--sizes: sizes must be positive (got '" + item + "')");
    o.sizes.push_back(bytes);
  }
  if (o.sizes.empty()) throw UsageError("--sizes is empty");
  require_positive(a.iters, "--iters");
  if (a.warmup < 0) throw UsageError("--warmup-iters must not be negative");
  if (a.check != 0 && a.check != 1) throw UsageError("--check must be 0 or 1");
  if (!(a.threshold > 0 && a.threshold < 1)) throw UsageError("--threshold must be between 0 and 1");
  require_timeout(a.timeout, "--timeout");
  o.iters = a.iters;
  o.warmup_iters = a.warmup;
  o.check = a.check == 1;
  o.by_domain = a.domains;
  o.concurrent = !a.serial;
  o.timeout_seconds = a.timeout;
  if (!a.inject_delay.empty()) {
    const auto colon = a.inject_delay.find(':');
    try {
      if (colon == std::string::npos) throw std::invalid_argument("no colon");
      o.delay_rank = std::stoi(a.inject_delay.substr(0, colon));
      o.delay_us = std::stod(a.inject_delay.substr(colon + 1));
      if (!(o.delay_us >= 0 && o.delay_us <= 1e9)) throw std::invalid_argument("delay out of range");
    } catch (const std::exception&) {
      throw UsageError("--inject-delay expects RANK:US (got '" + a.inject_delay + "')");
    }
  }
  return o;
}

int run(int argc, char** argv, MpiSession& mpi) {
  P2pArgs args;
  auto options = describe_options(args);
  po::variables_map vm;
  store_command_line(argc, argv, options, vm);
  if (vm.count("help")) {
    if (mpi.rank() == 0)
      print_help(std::cout, kUsage, kAbout, options,
                 {"mpiexec -n 8 ibt p2p-matrix --sizes 8,1M --out p2p.h5",
                  "mpiexec -n 8 ibt p2p-matrix --domains --domain-size 4 --fail-on-outliers"});
    return kExitOk;
  }
  po::notify(vm);
  const P2pOptions p2p = to_options(args);
  require_rank_in_job(p2p.delay_rank, "--inject-delay", mpi.size());
  const std::size_t bandwidth_from = parse_size(args.bandwidth_from, "--bandwidth-from");
  const DomainLayout layout = detect_domains(MPI_COMM_WORLD, args.domain_size);
  if (mpi.size() < 2) throw UsageError("p2p-matrix needs at least 2 ranks (run it under mpiexec -n N)");

  // One message buffer per rank, as large as the largest size: planned before any is allocated.
  const std::size_t largest = *std::max_element(p2p.sizes.begin(), p2p.sizes.end());
  if (largest > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw UsageError("--sizes " + args.sizes +
                     ": message sizes above 2 GiB - 1 are not supported (MPI counts are int)");
  require_memory_on_every_host(MPI_COMM_WORLD, static_cast<double>(largest),
                               "--sizes " + args.sizes + " (the largest message's buffer, per rank)");
  check_output_on_all_ranks(args.out, MPI_COMM_WORLD);

  const JobFacts facts = gather_job_facts(MPI_COMM_WORLD);
  std::unique_ptr<RunRecorder> recorder = open_run_on_all_ranks(args.out, "p2p_matrix", MPI_COMM_WORLD);
  JobGuard guard("p2p-matrix", mpi.rank(), recorder.get());
  std::unique_ptr<P2pCollector> collector;
  if (mpi.rank() == 0) {
    recorder->set_attr("command_line", joined_command_line(argc, argv));
    recorder->set_attr("ibt_version", std::string(kVersion));
    recorder->set_attr("git_commit", std::string(kGitCommit));
    recorder->set_attr("world_size", static_cast<std::int64_t>(mpi.size()));
    record_job_facts(recorder.get(), facts, "ibt p2p-matrix");
    recorder->set_attr("backend", std::string("mpi"));
    recorder->set_attr("domains", static_cast<std::int64_t>(layout.num_domains));
    recorder->set_attr("domain_method", layout.method);
    nlohmann::json config = {
        {"sizes", args.sizes},      {"iters", args.iters},         {"warmup_iters", args.warmup},
        {"check", args.check},      {"domains", args.domains},     {"domain_size", args.domain_size},
        {"serial", args.serial},    {"threshold", args.threshold}, {"bandwidth_from", args.bandwidth_from},
        {"timeout_s", args.timeout}};
    recorder->set_attr("config", config.dump());
    recorder->set_environment(allowed_environment(environ));
    collector = std::make_unique<P2pCollector>(recorder.get(), hosts_by_rank(facts.host_of_rank_list, mpi.size()));
    char header[1024];
    std::snprintf(header, sizeof header,
                  "# ibt p2p-matrix %s (%s): %d ranks on %zu host(s), %d domain(s) by %s; pairs of %s, %s\n", kVersion,
                  kGitCommit, mpi.size(), facts.hosts.size(), layout.num_domains, layout.method.c_str(),
                  args.domains ? "domains (rail-aligned)" : "ranks", args.serial ? "one at a time" : "a round at once");
    std::fputs(comment_lines(header, report_width(args.wide)).c_str(), stdout);
    if (recorder->active()) std::printf("# results: %s, run %s\n", args.out.c_str(), recorder->run_id().c_str());
    print_p2p_header();
  }

  ArrivalGate gate(MPI_COMM_WORLD);
  try {
    run_p2p_matrix(MPI_COMM_WORLD, layout, p2p, gate, guard.watchdog(), collector ? collector->events() : P2pEvents{});
  } catch (const TimeoutError& e) {
    guard.fail_and_exit(e.what(), kExitTimeout);
  }
  if (mpi.rank() != 0) return kExitOk;

  for (std::size_t bytes : p2p.sizes) collector->print_matrix(bytes, bytes >= bandwidth_from);
  const auto outliers = collector->report_outliers(args.threshold, bandwidth_from, report_width(args.wide));
  const std::uint64_t wrong = collector->wrong();
  std::printf("# Wrong bytes: %llu%s\n", static_cast<unsigned long long>(wrong),
              p2p.check ? "" : " (checking was off)");
  if (wrong > 0) {
    recorder->finish(store::RunStatus::failed, std::to_string(wrong) + " bytes arrived wrong");
    return kExitFailure;
  }
  if (args.fail_on_outliers && !outliers.empty()) {
    recorder->finish(store::RunStatus::failed, std::to_string(outliers.size()) + " outliers");
    return kExitFailure;
  }
  recorder->finish(store::RunStatus::complete);
  return kExitOk;
}

}  // namespace

int p2p_matrix_main(int argc, char** argv) { return run_mpi_suite("p2p-matrix", argc, argv, run); }

}  // namespace ibt::suites
