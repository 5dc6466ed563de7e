// ibt accept: cluster acceptance. Runs what a reference file asks for (collectives per
// scope through the harness, the point-to-point matrix), judges every metric against its
// target and tolerances, prints a PASS/FAIL table, writes JUnit XML for CI, stores it all
// in HDF5 (a run of kind "accept") and exits non-zero on any failure or wrong result.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "collectives/arrival_gate.hpp"
#include "collectives/harness.hpp"
#include "collectives/p2p_matrix.hpp"
#include "collectives/provenance.hpp"
#include "collectives/results_schema.hpp"
#include "collectives/sizes.hpp"
#include "core/output_file.hpp"
#include "core/stats.hpp"
#include "ibt/version.hpp"
#include "reports/store/store.hpp"
#include "reports/text/run_selection.hpp"
#include "suites/accept_generate.hpp"
#include "suites/accept_reference.hpp"
#include "suites/backends.hpp"
#include "suites/cli.hpp"
#include "suites/job_facts.hpp"
#include "suites/job_guard.hpp"
#include "suites/mpi_session.hpp"
#include "suites/p2p_rows.hpp"
#include "suites/suites.hpp"

extern char** environ;

namespace ibt::suites {
namespace {

namespace po = boost::program_options;

const char* kUsage =
    "mpiexec -n N ibt accept --reference REF.json [--junit FILE.xml] [--out FILE.h5]\n"
    "       ibt accept --reference REF.json --from RESULTS.h5 [--run N] [--junit FILE.xml]";
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
    "meant to run; a job of another size is refused. See topologies/references/.\n";

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

struct Verdict {
  const AcceptMetric* metric;
  Judgement judgement;
  std::string note;  // why it was not measured, or the sizes it covered
};

// One harness pass per (scope, op, dtype), over the sizes its metrics need: no op is
// measured at sizes only another op's metrics ask for.
using WorkKey = std::tuple<Scope, std::string, std::string>;

std::vector<std::size_t> sizes_of(const AcceptMetric& m) {
  if (m.min_bytes == m.max_bytes) return {m.min_bytes};
  SizeSweep sweep;
  sweep.min_bytes = m.min_bytes;
  sweep.max_bytes = m.max_bytes;
  sweep.factor = 2;
  return expand(sweep);
}

// The JUnit file. `run_failure` (not empty): the run ended before its verdict (a timeout,
// a crash, a signal); then one testcase "run" fails with that message and the metrics are
// listed as skipped, so CI sees a failed suite rather than no file.
void write_junit(const std::string& path, const AcceptReference& ref, const std::vector<Verdict>& verdicts,
                 std::uint64_t wrong, double seconds, const std::string& run_failure = "") {
  std::ostringstream out;
  const std::string suite = "ibt.accept." + ref.system;
  if (!run_failure.empty()) {
    const std::size_t tests = ref.metrics.size() + 1;
    out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        << "<testsuites name=\"ibt accept\" tests=\"" << tests << "\" failures=\"1\">\n"
        << "  <testsuite name=\"" << xml_escape(suite) << "\" tests=\"" << tests
        << "\" failures=\"1\" errors=\"0\" skipped=\"" << ref.metrics.size() << "\" time=\"" << seconds << "\">\n"
        << "    <testcase classname=\"" << xml_escape(suite) << "\" name=\"run\">\n"
        << "      <failure message=\"" << xml_escape(run_failure) << "\" type=\"run\"/>\n    </testcase>\n";
    for (const auto& m : ref.metrics)
      out << "    <testcase classname=\"" << xml_escape(suite) << "\" name=\"" << xml_escape(m.name)
          << "\">\n      <skipped message=\"not judged: the run ended first\"/>\n    </testcase>\n";
    out << "  </testsuite>\n</testsuites>\n";
    write_output_file(path, out.str(), "--junit");
    return;
  }
  int failures = wrong > 0;
  for (const auto& v : verdicts) failures += !v.judgement.pass;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites name=\"ibt accept\" tests=\"" << verdicts.size() + 1 << "\" failures=\"" << failures << "\">\n"
      << "  <testsuite name=\"" << xml_escape(suite) << "\" tests=\"" << verdicts.size() + 1 << "\" failures=\""
      << failures << "\" errors=\"0\" time=\"" << seconds << "\">\n";
  for (const auto& v : verdicts) {
    const AcceptMetric& m = *v.metric;
    out << "    <testcase classname=\"" << xml_escape(suite) << "\" name=\"" << xml_escape(m.name) << "\">\n";
    const std::string detail = "measured " + m.quantity + " " + number(v.judgement.measured) + " " + m.unit +
                               ", target " + number(m.target) + " " + m.unit + ", bounds [" + number(m.lower_bound()) +
                               ", " + number(m.upper_bound()) + "], margin " + number(v.judgement.margin) +
                               (v.note.empty() ? "" : "; " + v.note);
    if (!v.judgement.pass)
      out << "      <failure message=\"" << xml_escape(m.name + ": " + detail) << "\" type=\"threshold\"/>\n";
    out << "      <system-out>" << xml_escape(detail) << "</system-out>\n    </testcase>\n";
  }
  out << "    <testcase classname=\"" << xml_escape(suite) << "\" name=\"correctness\">\n";
  if (wrong > 0)
    out << "      <failure message=\"" << wrong << " wrong values in collectives or p2p transfers\" type=\"wrong\"/>\n";
  out << "    </testcase>\n  </testsuite>\n</testsuites>\n";
  write_output_file(path, out.str(), "--junit");
}

std::vector<store::Column> accept_columns() {
  using store::ColumnType;
  return {{"metric", ColumnType::str},
          {"op", ColumnType::str},
          {"scope", ColumnType::str},
          {"dtype", ColumnType::str},
          {"min_bytes", ColumnType::u64, "B"},
          {"max_bytes", ColumnType::u64, "B"},
          {"quantity", ColumnType::str},
          {"unit", ColumnType::str},
          {"measured", ColumnType::f64, ""},
          {"target", ColumnType::f64, ""},
          {"lower_bound", ColumnType::f64, ""},
          {"upper_bound", ColumnType::f64, ""},
          {"margin", ColumnType::f64, ""},
          {"verdict", ColumnType::str},
          {"note", ColumnType::str}};
}

// The parsed command line.
struct AcceptArgs {
  std::string reference_path, junit, out, backend_name = "mpi", generate_from, write_to, from, run_spec = "last";
  double timeout = 60, efficiency = 0;
  int generate_ranks = 0;
  bool force = false;
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
      "(no call of the op completed; a rank not arriving)")(
      "backend", po::value(&a.backend_name)->default_value(a.backend_name), "mpi or nccl (collectives; p2p is MPI)")(
      "generate-reference", po::value(&a.generate_from),
      "TOPOLOGY: instead of measuring, write a default reference from a catalog topology (name or .json path)")(
      "ranks", po::value(&a.generate_ranks), "--generate-reference: ranks of the job the reference is for")(
      "efficiency", po::value(&a.efficiency),
      "--generate-reference: fraction of link bandwidth to expect (default: the topology's model efficiencies)")(
      "write", po::value(&a.write_to), "--generate-reference: the file to write (default: standard output)")(
      "force", po::bool_switch(&a.force), "replace the --junit or --write file when it exists")(
      "from", po::value(&a.from),
      "FILE.h5: judge a results file instead of measuring (no MPI job needed): the collectives run --run names, "
      "and for p2p metrics the newest run in the file with a p2p matrix")(
      "run", po::value(&a.run_spec)->default_value(a.run_spec),
      "--from: the collectives run to judge: its id (000003), its number (3) or last (the newest collectives "
      "run)");
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
                  "ibt accept --generate-reference dgx-h100 --ranks 16 --write h100-16.json"});
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
  if (!a.junit.empty() || a.junit_given) refuse_existing_output(a.junit, "--junit", a.force);
  if (!a.write_to.empty() || a.write_given) refuse_existing_output(a.write_to, "--write", a.force);
}

// --generate-reference: writes (rank 0) a default reference instead of measuring.
int write_generated_reference(const AcceptArgs& a, const MpiSession& mpi) {
  if (a.efficiency_given && !(a.efficiency > 0 && a.efficiency <= 1))
    throw UsageError("--efficiency must be in (0, 1]");
  const auto reference = generate_reference(topo::load_topology(a.generate_from), a.generate_ranks,
                                            a.efficiency_given ? std::optional<double>(a.efficiency) : std::nullopt);
  if (mpi.rank() != 0) return kExitOk;
  if (a.write_to.empty()) {
    std::cout << reference.dump(2) << "\n";
    return kExitOk;
  }
  write_output_file(a.write_to, reference.dump(2) + "\n", "--write");
  std::printf("ibt accept: wrote %s (%zu metrics) from topology %s\n", a.write_to.c_str(), reference["metrics"].size(),
              a.generate_from.c_str());
  return kExitOk;
}

// The reference, refused when missing or made for a job of another size.
AcceptReference load_job_reference(const AcceptArgs& a, const MpiSession& mpi) {
  if (a.reference_path.empty()) throw UsageError("--reference is required (or --generate-reference TOPOLOGY)");
  require_timeout(a.timeout, "--timeout");
  AcceptReference ref = load_reference(a.reference_path);  // every rank parses: same errors everywhere
  if (!a.from.empty()) return ref;                         // the file's run is checked against the job instead
  if (ref.job.ranks > 0 && ref.job.ranks != mpi.size())
    throw UsageError(a.reference_path + ": the reference is for " + std::to_string(ref.job.ranks) +
                     " ranks; this job has " + std::to_string(mpi.size()) + " (mpiexec -n " +
                     std::to_string(ref.job.ranks) + ")");
  return ref;
}

// What to run: the sizes per (scope, op, dtype) and the p2p sizes the metrics ask for.
struct AcceptWork {
  std::map<WorkKey, std::set<std::size_t>> collectives;
  std::set<std::size_t> p2p_sizes;
};

// Every scope, op and dtype a metric names must exist in this job and on this backend.
AcceptWork plan_work(const AcceptReference& ref, const DomainLayout& layout, const Backend& backend,
                     const MpiSession& mpi) {
  AcceptWork work;
  for (const auto& m : ref.metrics) {
    if (m.is_p2p()) {
      work.p2p_sizes.insert(m.min_bytes);
      continue;
    }
    const Scope scope = parse_scopes(m.scope).at(0);
    try {
      group_key(scope, layout);
    } catch (const UsageError& e) {
      throw UsageError("metric '" + m.name + "': " + e.what());
    }
    find_collective(m.op);
    const DType dtype = parse_dtype_list(m.dtype).at(0);
    if (!backend.supports(dtype))
      throw UsageError("metric '" + m.name + "': dtype " + m.dtype + " not on this backend");
    for (auto s : sizes_of(m)) work.collectives[{scope, m.op, m.dtype}].insert(s);
  }
  if (!work.p2p_sizes.empty() && mpi.size() < 2) throw UsageError("p2p metrics need at least 2 ranks");
  return work;
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
  std::printf("# ibt accept %s (%s): reference %s (%s), %zu metrics, %d ranks on %zu host(s), %d domain(s) by %s\n",
              kVersion, kGitCommit, a.reference_path.c_str(), ref.system.c_str(), ref.metrics.size(), mpi.size(),
              facts.hosts.size(), layout.num_domains, layout.method.c_str());
  std::fflush(nullptr);
}

// What the job measured (rank 0's copy is the one judged).
struct AcceptMeasurements {
  // (op, scope, dtype, bytes) -> the out-of-place measurement (rank 0)
  std::map<std::tuple<std::string, std::string, std::string, std::size_t>, Measurement> collectives;
  std::uint64_t wrong = 0;
  std::unique_ptr<P2pCollector> p2p;     // rank 0, when the reference has p2p metrics
  std::vector<P2pResult> p2p_from_file;  // --from: the p2p matrix rows of the file
  bool p2p_read = false;                 // --from found a p2p matrix
  bool intra_is_world = false;           // --from: a one-domain run, its intra rows are its world rows
  std::string source;                    // --from: "FILE run N" (p2p: "run M")
};

// Where the measurements run.
struct MeasureContext {
  Backend& backend;
  const DomainLayout& layout;
  ArrivalGate& gate;
  JobGuard& guard;
  RunRecorder* recorder;  // rank 0's; nullptr elsewhere
};

// One harness pass per (scope, op, dtype); each size printed and stored (rank 0) as it comes.
void measure_collectives(const AcceptWork& work, const AcceptReference& ref, double timeout, const MeasureContext& job,
                         AcceptMeasurements& measured) {
  for (const auto& [key, sizes] : work.collectives) {
    const auto& [scope, op, dtype] = key;
    HarnessOptions h;
    h.ops = {&find_collective(op)};
    h.dtypes = {parse_dtype_list(dtype).at(0)};
    h.sizes.assign(sizes.begin(), sizes.end());
    h.scopes = {scope};
    // Out-of-place is judged; in-place only for an op that has nothing else (broadcast).
    // Measuring both doubled the time of large sizes for nothing (a generated reference's
    // 64-256 MiB sizes took minutes here).
    const Collective& c = find_collective(op);
    h.placements = {c.supports(Placement::out_of_place) ? Placement::out_of_place : Placement::in_place};
    h.iters = ref.job.iters;
    h.warmup_iters = ref.job.warmup_iters;
    h.timeout_seconds = timeout;
    HarnessEvents events;
    events.on_size = [&](const SizeResult& r) {
      const auto& m = r.out_of_place ? r.out_of_place : r.in_place;
      if (!m) return;
      measured.collectives[{m->op, m->scope, m->dtype, m->bytes}] = *m;
      measured.wrong += m->wrong;
      std::printf("  measured %-14s %-5s %-8s %10zu B  mean %10.2f us  p50 %10.2f us  busbw %8.3f GB/s  #wrong %llu\n",
                  m->op.c_str(), m->scope.c_str(), m->dtype.c_str(), m->bytes, m->time_us, m->p50_us, m->busbw_GBps,
                  static_cast<unsigned long long>(m->wrong));
      job.recorder->append(kCollectivesTable, collectives_columns(),
                           {m->op, m->scope, job.backend.name(), m->dtype, m->reduce_op,
                            std::string(to_string(m->placement)), static_cast<std::int64_t>(m->group_size),
                            static_cast<std::int64_t>(m->groups), static_cast<std::uint64_t>(m->bytes),
                            static_cast<std::uint64_t>(m->count), static_cast<std::int64_t>(m->iters), m->time_us,
                            m->p50_us, m->p99_us, m->algbw_GBps, m->busbw_GBps, static_cast<std::uint64_t>(m->wrong)});
    };
    events.on_note = [](const std::string& text) { std::fprintf(stderr, "# note: %s\n", text.c_str()); };
    run_harness(job.backend, MPI_COMM_WORLD, job.layout, h, job.gate, job.guard.watchdog(), events);
  }
}

// The point-to-point matrix at the p2p metrics' sizes; rank 0 collects the pairs.
void measure_p2p(const AcceptWork& work, const AcceptReference& ref, double timeout, const MpiSession& mpi,
                 const JobFacts& facts, const MeasureContext& job, AcceptMeasurements& measured) {
  P2pOptions p;
  p.sizes.assign(work.p2p_sizes.begin(), work.p2p_sizes.end());
  p.iters = ref.job.iters;
  p.warmup_iters = ref.job.warmup_iters;
  p.timeout_seconds = timeout;
  if (mpi.rank() == 0) {
    measured.p2p = std::make_unique<P2pCollector>(job.recorder, hosts_by_rank(facts.host_of_rank_list, mpi.size()));
    std::printf("# point-to-point matrix\n");
    print_p2p_header();
  }
  run_p2p_matrix(MPI_COMM_WORLD, job.layout, p, job.gate, job.guard.watchdog(),
                 measured.p2p ? measured.p2p->events() : P2pEvents{});
}

std::string cell_string(const store::TableData& t, const store::Row& row, const char* column) {
  const int i = t.column_index(column);
  if (i < 0) throw UsageError(std::string("the table has no column '") + column + "'");
  return std::get<std::string>(row[i]);
}

double cell_number(const store::TableData& t, const store::Row& row, const char* column) {
  const int i = t.column_index(column);
  if (i < 0) throw UsageError(std::string("the table has no column '") + column + "'");
  return store::as_number(row[i]);
}

bool has_table(const store::RunInfo& run, const std::string& table) {
  return std::find(run.tables.begin(), run.tables.end(), table) != run.tables.end();
}

// --from: the measurements an earlier `ibt collectives` run (and the newest p2p matrix in
// the same file) stored. The run must be of the reference's job size.
AcceptMeasurements read_measurements(const AcceptArgs& a, const AcceptReference& ref) {
  const auto runs = store::list_runs(a.from);
  std::vector<store::RunInfo> with_collectives;
  for (const auto& r : runs)
    if (has_table(r, kCollectivesTable)) with_collectives.push_back(r);
  if (with_collectives.empty())
    throw UsageError("--from " + a.from + ": no run with a collectives table (write one with `ibt collectives --out " +
                     a.from + "`)");
  const store::RunInfo& run =
      a.run_spec == "last" ? with_collectives.back() : reports::find_run(runs, a.run_spec, a.from);
  if (!has_table(run, kCollectivesTable))
    throw UsageError("--from " + a.from + ": run " + run.id + " has no collectives table");
  AcceptMeasurements measured;
  measured.source = a.from + " run " + run.id;
  const auto world = run.attr("world_size");
  const long long ranks = world ? static_cast<long long>(std::visit(
                                      [](const auto& v) -> double {
                                        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>)
                                          return 0;
                                        else
                                          return static_cast<double>(v);
                                      },
                                      *world))
                                : 0;
  if (ref.job.ranks > 0 && ranks != ref.job.ranks)
    throw UsageError(a.reference_path + ": the reference is for " + std::to_string(ref.job.ranks) + " ranks; run " +
                     run.id + " of " + a.from + " had " + std::to_string(ranks));
  const auto domains_attr = run.attr("domains");
  measured.intra_is_world =
      domains_attr && std::holds_alternative<std::int64_t>(*domains_attr) && std::get<std::int64_t>(*domains_attr) == 1;
  if (const std::string status = run.attr_string("status"); status != "complete")
    std::fprintf(stderr, "# note: run %s of %s is %s%s: judging the rows it stored\n", run.id.c_str(), a.from.c_str(),
                 status.c_str(),
                 run.attr_string("error").empty() ? "" : (" (" + run.attr_string("error") + ")").c_str());
  if (const std::string over = run.oversubscription(); !over.empty())
    std::fprintf(stderr, "# warning: run %s was oversubscribed (%s): its timings measure the scheduler\n",
                 run.id.c_str(), over.c_str());
  const store::TableData t = store::read_table(a.from, run.id, kCollectivesTable);
  std::size_t rows = 0;
  for (const auto& row : t.rows) {
    Measurement m;
    m.op = cell_string(t, row, "op");
    m.scope = cell_string(t, row, "scope");
    m.dtype = cell_string(t, row, "dtype");
    m.placement = cell_string(t, row, "placement") == "in" ? Placement::in_place : Placement::out_of_place;
    m.bytes = static_cast<std::size_t>(cell_number(t, row, "bytes"));
    m.time_us = cell_number(t, row, "time_us");
    m.p50_us = cell_number(t, row, "p50_us");
    m.p99_us = cell_number(t, row, "p99_us");
    m.algbw_GBps = cell_number(t, row, "algbw_GBps");
    m.busbw_GBps = cell_number(t, row, "busbw_GBps");
    m.wrong = static_cast<std::uint64_t>(cell_number(t, row, "wrong"));
    measured.wrong += m.wrong;
    const auto key = std::make_tuple(m.op, m.scope, m.dtype, m.bytes);
    // Out-of-place is judged, as when measuring; in-place where an op has only that (broadcast).
    // With -N cycles the last cycle's row counts.
    const auto it = measured.collectives.find(key);
    if (it == measured.collectives.end() || m.placement == Placement::out_of_place ||
        it->second.placement == Placement::in_place)
      measured.collectives[key] = m;
    ++rows;
  }
  std::printf("# judging %s: %zu collectives rows%s\n", measured.source.c_str(), rows,
              measured.intra_is_world ? " (one domain: intra metrics read the world rows)" : "");
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    if (!has_table(*it, kP2pTable)) continue;
    const store::TableData p = store::read_table(a.from, it->id, kP2pTable);
    for (const auto& row : p.rows) {
      P2pResult r;
      r.rank_a = static_cast<int>(cell_number(p, row, "rank_a"));
      r.rank_b = static_cast<int>(cell_number(p, row, "rank_b"));
      r.bytes = static_cast<std::size_t>(cell_number(p, row, "bytes"));
      r.time_us = cell_number(p, row, "time_us");
      r.p50_us = cell_number(p, row, "p50_us");
      r.p99_us = cell_number(p, row, "p99_us");
      r.bandwidth_GBps = cell_number(p, row, "bandwidth_GBps");
      r.wrong = static_cast<std::uint64_t>(cell_number(p, row, "wrong"));
      measured.wrong += r.wrong;
      measured.p2p_from_file.push_back(r);
    }
    measured.p2p_read = true;
    measured.source += ", p2p matrix from run " + it->id;
    std::printf("# judging p2p metrics from run %s: %zu pairs x sizes\n", it->id.c_str(), p.rows.size());
    break;
  }
  return measured;
}

// The values a metric is judged on, and a note on what they cover.
std::vector<double> metric_values(const AcceptMetric& m, const AcceptMeasurements& measured, std::string& note) {
  std::vector<double> values;
  if (m.is_p2p()) {
    std::vector<double> per_pair;
    const std::vector<P2pResult>& rows = measured.p2p ? measured.p2p->results() : measured.p2p_from_file;
    for (const auto& r : rows)
      if (r.bytes == m.min_bytes) per_pair.push_back(m.unit == "GB/s" ? r.bandwidth_GBps : r.p50_us);
    if (!per_pair.empty()) {
      std::sort(per_pair.begin(), per_pair.end());
      const bool median = m.quantity.find("median") != std::string::npos;
      const bool minimum = m.quantity.find("_min_") != std::string::npos;
      values.push_back(median ? quantile(per_pair, 0.5) : minimum ? per_pair.front() : per_pair.back());
      note = std::to_string(per_pair.size()) + " pairs";
    }
    return values;
  }
  int sizes = 0;
  // A one-domain collectives run measured intra once, as world (collectives --scope all).
  const std::string scope_wanted = m.scope == "intra" && measured.intra_is_world ? "world" : m.scope;
  for (const auto& [key, meas] : measured.collectives) {
    const auto& [op, scope, dtype, bytes] = key;
    if (op != m.op || scope != scope_wanted || dtype != m.dtype || bytes < m.min_bytes || bytes > m.max_bytes) continue;
    ++sizes;
    values.push_back(m.quantity == "time_us"      ? meas.time_us
                     : m.quantity == "p50_us"     ? meas.p50_us
                     : m.quantity == "busbw_GBps" ? meas.busbw_GBps
                                                  : meas.algbw_GBps);
  }
  if (sizes > 1) note = m.over_sizes + " over " + std::to_string(sizes) + " sizes";
  if (sizes > 0 && scope_wanted != m.scope)
    note += std::string(note.empty() ? "" : "; ") + "intra = world (one domain)";
  return values;
}

std::vector<Verdict> judge_metrics(const AcceptReference& ref, const AcceptMeasurements& measured) {
  std::vector<Verdict> verdicts;
  for (const auto& m : ref.metrics) {
    std::string note;
    const std::vector<double> values = metric_values(m, measured, note);
    Verdict v{&m, judge(m, values), note};
    if (!v.judgement.measured_ok)
      v.note = !measured.source.empty() && m.is_p2p() && !measured.p2p_read
                   ? "not in the file: no p2p matrix run (ibt p2p-matrix --sizes " + std::to_string(m.min_bytes) +
                         " --out FILE)"
               : !measured.source.empty()
                   ? "not in the file (run ibt collectives with this op, scope, dtype and size)"
                   : "not measured (the op may need another group size, or the size was rounded)";
    verdicts.push_back(v);
  }
  return verdicts;
}

struct Failures {
  int count = 0;
  std::string names;  // "a, b"
};

// The PASS/FAIL table, each verdict stored as a row of table "accept".
Failures print_and_record_verdicts(const std::vector<Verdict>& verdicts, RunRecorder& recorder) {
  std::printf("#\n# %-44s %-18s %12s %12s %25s %6s %8s  %s\n", "metric", "statistic", "measured", "target", "bounds",
              "unit", "margin", "verdict");
  Failures failed;
  for (const auto& v : verdicts) {
    const auto& m = *v.metric;
    const std::string bounds = "[" + number(m.lower_bound()) + ", " + number(m.upper_bound()) + "]";
    char margin[32];
    std::snprintf(margin, sizeof margin, "%+.3g", v.judgement.margin);
    std::printf("  %-44s %-18s %12s %12s %25s %6s %8s  %s%s%s\n", m.name.c_str(), m.quantity.c_str(),
                number(v.judgement.measured).c_str(), number(m.target).c_str(), bounds.c_str(), m.unit.c_str(),
                v.judgement.measured_ok ? margin : "n/a", v.judgement.pass ? "PASS" : "FAIL",
                v.note.empty() ? "" : "  ", v.note.c_str());
    if (!v.judgement.pass) {
      ++failed.count;
      failed.names += (failed.names.empty() ? "" : ", ") + m.name;
    }
    recorder.append(
        "accept", accept_columns(),
        {m.name, m.op, m.scope, m.dtype, static_cast<std::uint64_t>(m.min_bytes),
         static_cast<std::uint64_t>(m.max_bytes), m.quantity, m.unit, v.judgement.measured, m.target, m.lower_bound(),
         m.upper_bound(), v.judgement.margin, std::string(v.judgement.pass ? "PASS" : "FAIL"), v.note});
  }
  return failed;
}

// Rank 0: the verdict lines, the JUnit file, the run's status; the exit status.
int finish_accept_run(const AcceptArgs& a, const AcceptReference& ref, const std::vector<Verdict>& verdicts,
                      const Failures& failed, std::uint64_t wrong, double started, RunRecorder& recorder) {
  std::printf("# correctness: %llu wrong values %s\n", static_cast<unsigned long long>(wrong), wrong ? "FAIL" : "PASS");
  const bool ok = failed.count == 0 && wrong == 0;
  std::printf("# verdict: %s (%zu metrics, %d failed%s%s)\n", ok ? "PASS" : "FAIL", verdicts.size(), failed.count,
              failed.count ? ": " : "", failed.names.c_str());
  if (!a.junit.empty()) {
    write_junit(a.junit, ref, verdicts, wrong, MPI_Wtime() - started);
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
  AcceptMeasurements measured = read_measurements(a, ref);
  if (!a.out.empty()) check_output_on_all_ranks(a.out, MPI_COMM_WORLD);
  RunRecorder recorder(a.out, "accept");
  recorder.set_attr("command_line", joined_command_line(argc, argv));
  recorder.set_attr("ibt_version", std::string(kVersion));
  recorder.set_attr("git_commit", std::string(kGitCommit));
  recorder.set_attr("reference", a.reference_path);
  recorder.set_attr("reference_system", ref.system);
  recorder.set_attr("reference_json", ref.text);
  recorder.set_attr("judged_from", measured.source);
  std::printf("# ibt accept %s (%s): reference %s (%s), %zu metrics, judged from %s\n", kVersion, kGitCommit,
              a.reference_path.c_str(), ref.system.c_str(), ref.metrics.size(), measured.source.c_str());
  const std::vector<Verdict> verdicts = judge_metrics(ref, measured);
  const Failures failed = print_and_record_verdicts(verdicts, recorder);
  return finish_accept_run(a, ref, verdicts, failed, measured.wrong, started, recorder);
}

int run(int argc, char** argv, MpiSession& mpi) {
  AcceptArgs a;
  if (!parse_accept_args(argc, argv, mpi, a)) return kExitOk;
  refuse_existing_outputs(a);
  if (!a.generate_from.empty()) return write_generated_reference(a, mpi);
  const AcceptReference ref = load_job_reference(a, mpi);
  if (!a.from.empty()) return judge_file(argc, argv, a, ref, mpi);
  BackendOptions backend_options;
  backend_options.timeout_s = a.timeout;
  auto backend = make_backend(a.backend_name, MPI_COMM_WORLD, backend_options);
  const DomainLayout layout = detect_domains(MPI_COMM_WORLD, ref.job.domain_size);
  const AcceptWork work = plan_work(ref, layout, *backend, mpi);
  check_output_on_all_ranks(a.out, MPI_COMM_WORLD);

  const JobFacts facts = gather_job_facts(MPI_COMM_WORLD);
  std::unique_ptr<RunRecorder> recorder = open_run_on_all_ranks(a.out, "accept", MPI_COMM_WORLD);
  JobGuard guard("accept", mpi.rank(), recorder.get());
  const double started = MPI_Wtime();
  if (mpi.rank() == 0) start_accept_run(*recorder, argc, argv, mpi, facts, *backend, layout, a, ref);
  if (mpi.rank() == 0 && !a.junit.empty()) {
    // Written now and replaced by the verdict: a job that crashes or is killed before the
    // end still leaves CI a failed testcase; a timeout replaces it with its message.
    write_junit(a.junit, ref, {}, 0, 0,
                "ibt accept started but did not reach its verdict: the job crashed, was killed or is still running");
    const auto t0 = std::chrono::steady_clock::now();  // the hook runs on the watchdog thread: no MPI
    guard.set_on_failure([&a, &ref, t0](const std::string& message) {
      write_junit(a.junit, ref, {}, 0, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                  message);
      std::fprintf(stderr, "# JUnit XML: %s (the run failed: %s)\n", a.junit.c_str(), message.c_str());
    });
  }

  ArrivalGate gate(MPI_COMM_WORLD);
  AcceptMeasurements measured;
  const MeasureContext job{*backend, layout, gate, guard, recorder.get()};
  try {
    measure_collectives(work, ref, a.timeout, job, measured);
    if (!work.p2p_sizes.empty()) measure_p2p(work, ref, a.timeout, mpi, facts, job, measured);
  } catch (const TimeoutError& e) {
    guard.fail_and_exit(e.what(), kExitTimeout);
  }
  if (mpi.rank() != 0) return kExitOk;
  if (measured.p2p) {
    measured.wrong += measured.p2p->wrong();
    measured.p2p->report_outliers(0.5, 64 * 1024);
  }

  const std::vector<Verdict> verdicts = judge_metrics(ref, measured);
  const Failures failed = print_and_record_verdicts(verdicts, *recorder);
  return finish_accept_run(a, ref, verdicts, failed, measured.wrong, started, *recorder);
}

}  // namespace

int accept_main(int argc, char** argv) { return run_mpi_suite("accept", argc, argv, run); }

}  // namespace ibt::suites
