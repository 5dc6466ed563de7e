// ibt accept: cluster acceptance. Runs what a reference file asks for (collectives per
// scope through the harness, the point-to-point matrix), judges every metric against its
// target and tolerances, prints a PASS/FAIL table, writes JUnit XML for CI, stores it all
// in HDF5 (a run of kind "accept") and exits non-zero on any failure or wrong result.
#include <unistd.h>

#include <boost/program_options.hpp>
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

const char* kUsage = "mpiexec -n N ibt accept --reference REF.json [--junit FILE.xml] [--out FILE.h5]";
const char* kAbout =
    "Acceptance against a reference (ReFrame style): every metric names an op, scope, dtype and\n"
    "size (or size range) and a target with tolerances as fractions of it: bounds =\n"
    "target x (1 + lower) .. target x (1 + upper), null = open. The collectives the metrics need\n"
    "run through the harness (out-of-place, or in-place for broadcast; results checked), p2p metrics through the\n"
    "point-to-point matrix. Prints measured, target, bounds and margin (distance to the nearest\n"
    "bound as a fraction of the target; negative = outside) per metric. Any FAIL, any wrong\n"
    "value or a metric that could not be measured makes the exit status 1.\n"
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

void write_junit(const std::string& path, const AcceptReference& ref, const std::vector<Verdict>& verdicts,
                 std::uint64_t wrong, double seconds) {
  std::ostringstream out;
  int failures = wrong > 0;
  for (const auto& v : verdicts) failures += !v.judgement.pass;
  const std::string suite = "ibt.accept." + ref.system;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites name=\"ibt accept\" tests=\"" << verdicts.size() + 1 << "\" failures=\"" << failures << "\">\n"
      << "  <testsuite name=\"" << xml_escape(suite) << "\" tests=\"" << verdicts.size() + 1 << "\" failures=\""
      << failures << "\" errors=\"0\" time=\"" << seconds << "\">\n";
  for (const auto& v : verdicts) {
    const AcceptMetric& m = *v.metric;
    out << "    <testcase classname=\"" << xml_escape(suite) << "\" name=\"" << xml_escape(m.name) << "\">\n";
    const std::string detail = "measured " + number(v.judgement.measured) + " " + m.unit + ", target " +
                               number(m.target) + " " + m.unit + ", bounds [" + number(m.lower_bound()) + ", " +
                               number(m.upper_bound()) + "], margin " + number(v.judgement.margin) +
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

int run(int argc, char** argv, MpiSession& mpi) {
  std::string reference_path, junit, out, backend_name = "mpi", generate_from, write_to;
  double timeout = 60, efficiency = 0;
  int generate_ranks = 0;
  bool force = false;
  po::options_description opts("options");
  opts.add_options()("help,h", "show this help")("reference", po::value(&reference_path),
                                                 "reference file (JSON), e.g. topologies/references/local-cpu.json")(
      "junit", po::value(&junit), "write a JUnit XML report here (one testcase per metric, plus correctness)")(
      "out", po::value(&out), "append this run (kind accept) to an HDF5 results file")(
      "timeout,T", double_value(&timeout), "seconds one measurement may take")(
      "backend", po::value(&backend_name)->default_value(backend_name), "mpi or nccl (collectives; p2p is MPI)")(
      "generate-reference", po::value(&generate_from),
      "TOPOLOGY: instead of measuring, write a default reference from a catalog topology (name or .json path)")(
      "ranks", po::value(&generate_ranks), "--generate-reference: ranks of the job the reference is for")(
      "efficiency", po::value(&efficiency),
      "--generate-reference: fraction of link bandwidth to expect (default: the topology's model efficiencies)")(
      "write", po::value(&write_to), "--generate-reference: the file to write (default: standard output)")(
      "force", po::bool_switch(&force), "replace the --junit or --write file when it exists");
  po::variables_map vm;
  store_command_line(argc, argv, opts, vm);
  if (vm.count("help")) {
    if (mpi.rank() == 0)
      print_help(std::cout, kUsage, kAbout, opts,
                 {"mpiexec -n 2 ibt accept --reference topologies/references/local-cpu.json --junit accept.xml",
                  "ibt accept --generate-reference dgx-h100 --ranks 16 --write h100-16.json"});
    return kExitOk;
  }
  po::notify(vm);
  // Refused before anything is generated or measured (every rank sees the same files).
  if (!junit.empty() || vm.count("junit")) refuse_existing_output(junit, "--junit", force);
  if (!write_to.empty() || vm.count("write")) refuse_existing_output(write_to, "--write", force);
  if (!generate_from.empty()) {
    if (vm.count("efficiency") && !(efficiency > 0 && efficiency <= 1))
      throw UsageError("--efficiency must be in (0, 1]");
    const auto reference =
        generate_reference(topo::load_topology(generate_from), generate_ranks,
                           vm.count("efficiency") ? std::optional<double>(efficiency) : std::nullopt);
    if (mpi.rank() != 0) return kExitOk;
    if (write_to.empty()) {
      std::cout << reference.dump(2) << "\n";
      return kExitOk;
    }
    write_output_file(write_to, reference.dump(2) + "\n", "--write");
    std::printf("ibt accept: wrote %s (%zu metrics) from topology %s\n", write_to.c_str(), reference["metrics"].size(),
                generate_from.c_str());
    return kExitOk;
  }
  if (reference_path.empty()) throw UsageError("--reference is required (or --generate-reference TOPOLOGY)");
  require_timeout(timeout, "--timeout");
  const AcceptReference ref = load_reference(reference_path);  // every rank parses: same errors everywhere
  if (ref.job.ranks > 0 && ref.job.ranks != mpi.size())
    throw UsageError(reference_path + ": the reference is for " + std::to_string(ref.job.ranks) +
                     " ranks; this job has " + std::to_string(mpi.size()) + " (mpiexec -n " +
                     std::to_string(ref.job.ranks) + ")");
  BackendOptions backend_options;
  backend_options.timeout_s = timeout;
  auto backend = make_backend(backend_name, MPI_COMM_WORLD, backend_options);
  const DomainLayout layout = detect_domains(MPI_COMM_WORLD, ref.job.domain_size);

  // What to run, per scope; every scope a metric names must exist in this job.
  std::map<WorkKey, std::set<std::size_t>> work;
  std::set<std::size_t> p2p_sizes;
  for (const auto& m : ref.metrics) {
    if (m.is_p2p()) {
      p2p_sizes.insert(m.min_bytes);
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
    if (!backend->supports(dtype))
      throw UsageError("metric '" + m.name + "': dtype " + m.dtype + " not on this backend");
    for (auto s : sizes_of(m)) work[{scope, m.op, m.dtype}].insert(s);
  }
  if (!p2p_sizes.empty() && mpi.size() < 2) throw UsageError("p2p metrics need at least 2 ranks");

  check_output_on_all_ranks(out, MPI_COMM_WORLD);

  const JobFacts facts = gather_job_facts(MPI_COMM_WORLD);
  std::unique_ptr<RunRecorder> recorder;
  if (mpi.rank() == 0) recorder = std::make_unique<RunRecorder>(out, "accept");
  JobGuard guard("accept", mpi.rank(), recorder.get());
  const double started = MPI_Wtime();
  if (mpi.rank() == 0) {
    recorder->set_attr("command_line", joined_command_line(argc, argv));
    recorder->set_attr("ibt_version", std::string(kVersion));
    recorder->set_attr("git_commit", std::string(kGitCommit));
    recorder->set_attr("world_size", static_cast<std::int64_t>(mpi.size()));
    record_job_facts(recorder.get(), facts, "ibt accept");
    recorder->set_attr("backend", backend->name());
    for (const auto& [key, value] : backend->provenance()) recorder->set_attr(key, value);
    recorder->set_attr("domains", static_cast<std::int64_t>(layout.num_domains));
    recorder->set_attr("domain_method", layout.method);
    recorder->set_attr("reference", reference_path);
    recorder->set_attr("reference_system", ref.system);
    recorder->set_attr("reference_json", ref.text);
    recorder->set_environment(allowed_environment(environ));
    std::printf("# ibt accept %s (%s): reference %s (%s), %zu metrics, %d ranks on %zu host(s), %d domain(s) by %s\n",
                kVersion, kGitCommit, reference_path.c_str(), ref.system.c_str(), ref.metrics.size(), mpi.size(),
                facts.hosts.size(), layout.num_domains, layout.method.c_str());
    std::fflush(nullptr);
  }

  // (op, scope, dtype, bytes) -> the out-of-place measurement (rank 0)
  std::map<std::tuple<std::string, std::string, std::string, std::size_t>, Measurement> measured;
  std::uint64_t wrong = 0;
  ArrivalGate gate(MPI_COMM_WORLD);
  std::unique_ptr<P2pCollector> p2p_collector;
  try {
    for (const auto& [key, sizes] : work) {
      const auto& [scope, op, dtype] = key;
      HarnessOptions h;
      h.ops = {&find_collective(op)};
      h.dtypes = {parse_dtype_list(dtype).at(0)};
      h.sizes.assign(sizes.begin(), sizes.end());
      h.scopes = {scope};
      // Out-of-place is judged; in-place is measured too because broadcast has only that.
      h.placements = {Placement::out_of_place, Placement::in_place};
      h.iters = ref.job.iters;
      h.warmup_iters = ref.job.warmup_iters;
      h.timeout_seconds = timeout;
      HarnessEvents events;
      events.on_size = [&](const SizeResult& r) {
        const auto& m = r.out_of_place ? r.out_of_place : r.in_place;
        if (!m) return;
        measured[{m->op, m->scope, m->dtype, m->bytes}] = *m;
        wrong += m->wrong;
        std::printf("  measured %-14s %-5s %-8s %10zu B  %10.2f us  busbw %8.3f GB/s  #wrong %llu\n", m->op.c_str(),
                    m->scope.c_str(), m->dtype.c_str(), m->bytes, m->time_us, m->busbw_GBps,
                    static_cast<unsigned long long>(m->wrong));
        recorder->append(kCollectivesTable, collectives_columns(),
                         {m->op, m->scope, backend->name(), m->dtype, m->reduce_op,
                          std::string(to_string(m->placement)), static_cast<std::int64_t>(m->group_size),
                          static_cast<std::int64_t>(m->groups), static_cast<std::uint64_t>(m->bytes),
                          static_cast<std::uint64_t>(m->count), static_cast<std::int64_t>(m->iters), m->time_us,
                          m->p50_us, m->p99_us, m->algbw_GBps, m->busbw_GBps, static_cast<std::uint64_t>(m->wrong)});
      };
      events.on_note = [](const std::string& text) { std::fprintf(stderr, "# note: %s\n", text.c_str()); };
      run_harness(*backend, MPI_COMM_WORLD, layout, h, gate, guard.watchdog(), events);
    }
    if (!p2p_sizes.empty()) {
      P2pOptions p;
      p.sizes.assign(p2p_sizes.begin(), p2p_sizes.end());
      p.iters = ref.job.iters;
      p.warmup_iters = ref.job.warmup_iters;
      p.timeout_seconds = timeout;
      if (mpi.rank() == 0) {
        p2p_collector =
            std::make_unique<P2pCollector>(recorder.get(), hosts_by_rank(facts.host_of_rank_list, mpi.size()));
        std::printf("# point-to-point matrix\n");
        print_p2p_header();
      }
      run_p2p_matrix(MPI_COMM_WORLD, layout, p, gate, guard.watchdog(),
                     p2p_collector ? p2p_collector->events() : P2pEvents{});
    }
  } catch (const TimeoutError& e) {
    guard.fail_and_exit(e.what(), kExitTimeout);
  }
  if (mpi.rank() != 0) return kExitOk;
  if (p2p_collector) {
    wrong += p2p_collector->wrong();
    p2p_collector->report_outliers(0.5, 64 * 1024);
  }

  // ---- judge ----
  std::vector<Verdict> verdicts;
  for (const auto& m : ref.metrics) {
    std::vector<double> values;
    std::string note;
    if (m.is_p2p()) {
      std::vector<double> per_pair;
      for (const auto& r : p2p_collector->results())
        if (r.bytes == m.min_bytes) per_pair.push_back(m.unit == "GB/s" ? r.bandwidth_GBps : r.p50_us);
      if (!per_pair.empty()) {
        std::sort(per_pair.begin(), per_pair.end());
        const bool median = m.quantity.find("median") != std::string::npos;
        const bool minimum = m.quantity.find("_min_") != std::string::npos;
        values.push_back(median ? quantile(per_pair, 0.5) : minimum ? per_pair.front() : per_pair.back());
        note = std::to_string(per_pair.size()) + " pairs";
      }
    } else {
      int sizes = 0;
      for (const auto& [key, meas] : measured) {
        const auto& [op, scope, dtype, bytes] = key;
        if (op != m.op || scope != m.scope || dtype != m.dtype || bytes < m.min_bytes || bytes > m.max_bytes) continue;
        ++sizes;
        values.push_back(m.quantity == "time_us"      ? meas.time_us
                         : m.quantity == "p50_us"     ? meas.p50_us
                         : m.quantity == "busbw_GBps" ? meas.busbw_GBps
                                                      : meas.algbw_GBps);
      }
      if (sizes > 1) note = m.over_sizes + " over " + std::to_string(sizes) + " sizes";
    }
    Verdict v{&m, judge(m, values), note};
    if (!v.judgement.measured_ok) v.note = "not measured (the op may need another group size, or the size was rounded)";
    verdicts.push_back(v);
  }

  std::printf("#\n# %-56s %12s %12s %25s %6s %8s  %s\n", "metric", "measured", "target", "bounds", "unit", "margin",
              "verdict");
  int failures = 0;
  std::string failed_names;
  for (const auto& v : verdicts) {
    const auto& m = *v.metric;
    const std::string bounds = "[" + number(m.lower_bound()) + ", " + number(m.upper_bound()) + "]";
    std::printf("  %-56s %12s %12s %25s %6s %8s  %s%s%s\n", m.name.c_str(), number(v.judgement.measured).c_str(),
                number(m.target).c_str(), bounds.c_str(), m.unit.c_str(), number(v.judgement.margin).c_str(),
                v.judgement.pass ? "PASS" : "FAIL", v.note.empty() ? "" : "  ", v.note.c_str());
    if (!v.judgement.pass) {
      ++failures;
      failed_names += (failed_names.empty() ? "" : ", ") + m.name;
    }
    recorder->append(
        "accept", accept_columns(),
        {m.name, m.op, m.scope, m.dtype, static_cast<std::uint64_t>(m.min_bytes),
         static_cast<std::uint64_t>(m.max_bytes), m.quantity, m.unit, v.judgement.measured, m.target, m.lower_bound(),
         m.upper_bound(), v.judgement.margin, std::string(v.judgement.pass ? "PASS" : "FAIL"), v.note});
  }
  std::printf("# correctness: %llu wrong values %s\n", static_cast<unsigned long long>(wrong), wrong ? "FAIL" : "PASS");
  const bool ok = failures == 0 && wrong == 0;
  std::printf("# verdict: %s (%zu metrics, %d failed%s%s)\n", ok ? "PASS" : "FAIL", verdicts.size(), failures,
              failures ? ": " : "", failed_names.c_str());
  if (!junit.empty()) {
    write_junit(junit, ref, verdicts, wrong, MPI_Wtime() - started);
    std::printf("# JUnit XML: %s\n", junit.c_str());
  }
  recorder->set_attr("verdict", std::string(ok ? "PASS" : "FAIL"));
  if (ok) {
    recorder->finish(store::RunStatus::complete);
    return kExitOk;
  }
  std::string why = failures ? std::to_string(failures) + " metrics failed: " + failed_names : "";
  if (wrong) why += (why.empty() ? "" : "; ") + std::to_string(wrong) + " wrong values";
  recorder->finish(store::RunStatus::failed, "acceptance failed: " + why);
  std::fprintf(stderr, "ibt accept: FAIL: %s\n", why.c_str());
  return kExitFailure;
}

}  // namespace

int accept_main(int argc, char** argv) { return run_mpi_suite("accept", argc, argv, run); }

}  // namespace ibt::suites
