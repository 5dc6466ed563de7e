// ibt accept's measuring: the reference's metrics turned into harness and p2p-matrix
// passes, checked against the job first, run with each result printed and stored.
#include "cli/accept_measure.hpp"

#include <cstdio>

#include "cli/collectives_results.hpp"
#include "collectives/acceptance/accept_where.hpp"
#include "collectives/harness.hpp"
#include "collectives/p2p_matrix.hpp"
#include "collectives/runtime/p2p_rows.hpp"
#include "collectives/sizes.hpp"
#include "core/errors.hpp"
#include "core/text_table.hpp"
#include "reports/tables/collectives_table.hpp"

namespace ibt::suites {
namespace {

std::vector<std::size_t> sizes_of(const AcceptMetric& m) {
  if (m.min_bytes == m.max_bytes) return {m.min_bytes};
  SizeSweep sweep;
  sweep.min_bytes = m.min_bytes;
  sweep.max_bytes = m.max_bytes;
  sweep.factor = 2;
  return expand(sweep);
}

// A measurement as one aligned line while accept measures: words and figures in columns.
// Wide, at the printf widths these lines always had (123 columns); by default the times and
// the bandwidth a little narrower, so that the line fits 120.
TextTable measured_line(bool wide) {
  using Align = TextTable::Align;
  TextTable t;
  t.add_column({"", Align::left});
  t.add_column({"", Align::left, "", 14});
  t.add_column({"", Align::left, "", 5});
  t.add_column({"", Align::left, "", 8});
  t.add_column({"", Align::right, "", 10});
  t.add_column({"", Align::left});
  for (const std::size_t width : {wide ? 10u : 9u, wide ? 10u : 9u, wide ? 8u : 7u}) {
    t.add_column(TextTable::Column("", Align::left).after("  "));
    t.add_column({"", Align::right, "", width});
    t.add_column({"", Align::left});
  }
  t.add_column(TextTable::Column("", Align::left).after(wide ? "  " : " "));
  t.add_column({"", Align::left});
  return t;
}

TextTable::Style measured_style() {
  TextTable::Style s;
  s.indent = "  ";
  s.gap = " ";
  s.header = false;
  return s;
}

}  // namespace

// Every scope, op and dtype a metric names must exist in this job and on this backend.
AcceptWork plan_accept_work(const AcceptReference& ref, const DomainLayout& layout, const Backend& backend,
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

// One harness pass per (scope, op, dtype); each size printed and stored (rank 0) as it comes.
void measure_accept_collectives(const AcceptWork& work, const AcceptReference& ref, double timeout,
                                const MeasureContext& job, AcceptMeasurements& measured) {
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
    h.stall_rank = job.faults.stall_rank;
    h.stall_at_measurement = job.faults.stall_at_measurement;
    h.stall_inside = job.faults.stall_inside;
    h.corrupt_rank = job.faults.corrupt_rank;
    HarnessEvents events;
    events.on_size = [&](const SizeResult& r) {
      const auto& m = r.out_of_place ? r.out_of_place : r.in_place;
      if (!m) return;
      measured.collectives[{m->op, m->scope, m->dtype, m->bytes}] = *m;
      measured.wrong += m->wrong;
      if (m->wrong > 0) measured.wrong_where.push_back(wrong_values_where(*m, job.hosts));
      std::fputs(measured_line(job.wide)
                     .row_text({"measured", m->op, m->scope, m->dtype, std::to_string(m->bytes), "B", "mean",
                                fixed(m->time_us, 2), "us", "p50", fixed(m->p50_us, 2), "us", "busbw",
                                fixed(m->busbw_GBps, 3), "GB/s", "#wrong", std::to_string(m->wrong)},
                               measured_style())
                     .c_str(),
                 stdout);
      job.recorder->append(collectives_row(*m, job.backend.name()));
    };
    events.on_note = [](const std::string& text) { std::fprintf(stderr, "# note: %s\n", text.c_str()); };
    run_harness(job.backend, MPI_COMM_WORLD, job.layout, h, job.gate, job.guard.watchdog(), events);
  }
}

// The point-to-point matrix at the p2p metrics' sizes; rank 0 collects the pairs.
void measure_accept_p2p(const AcceptWork& work, const AcceptReference& ref, double timeout, const MpiSession& mpi,
                        const JobFacts& facts, const MeasureContext& job, AcceptMeasurements& measured) {
  P2pOptions p;
  p.sizes.assign(work.p2p_sizes.begin(), work.p2p_sizes.end());
  p.iters = ref.job.iters;
  p.warmup_iters = ref.job.warmup_iters;
  p.timeout_seconds = timeout;
  if (mpi.rank() == 0) {
    measured.p2p = std::make_unique<P2pCollector>(job.recorder, hosts_by_rank(facts.host_of_rank_list, mpi.size()));
    // The same link reads differently here and in the collectives rows: say why where both show.
    std::printf(
        "# point-to-point matrix: one buffer per pair, reused, and the mean half round trip; the\n"
        "# collectives rows above rotate buffers through 64 MiB (cold caches), so where a message fits in\n"
        "# cache their ping_pong reads lower (1 MiB, 2 ranks of one host: 3.2-3.6 against 7.0-7.7 GB/s)\n");
    print_p2p_header();
  }
  run_p2p_matrix(MPI_COMM_WORLD, job.layout, p, job.gate, job.guard.watchdog(),
                 measured.p2p ? measured.p2p->events() : P2pEvents{});
}

}  // namespace ibt::suites
