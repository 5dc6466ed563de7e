// ibt_validate_vtrain: projects every row of the vTrain ground truth (measured Megatron
// iteration times on DGX A100) with the dgx-a100 topology and prints the mean absolute
// percentage error, single-node and multi-node separately (the model: vtrain.hpp).
// With --max-single / --max-multi it fails (exit 1) when a MAPE exceeds its bound.
// With --pp-pairs it checks the PP verdict instead, on the groups measured both with and
// without PP (pp_pairs.hpp): verdict agreement, confusion, best-split top-1 and regret,
// and the gain error the crossover verdict's uncertainty is taken from.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "core/text_table.hpp"
#include "topologies/calibration/gain_error.hpp"
#include "topologies/calibration/pp_pairs.hpp"
#include "topologies/calibration/vtrain.hpp"

namespace {

struct Args {
  std::string dir = IBT_VTRAIN_DIR, topology = "dgx-a100", allreduce = IBT_VTRAIN_ALLREDUCE, write;
  std::string gain_error_file, gain_error_kind, gain_error_command, gain_error_note;  // --pp-pairs --write-gain-error
  double max_single = 0, max_multi = 0, threshold = 0.05;
  int groups = 0;  // --pp-pairs: the first N groups only (0: all)
  bool verbose = false, fit = false, pp_pairs = false;
};

// The arguments, or exit 2 with the usage line.
Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ibt_validate_vtrain: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--dir")
      a.dir = next();
    else if (arg == "--topology")
      a.topology = next();
    else if (arg == "--max-single")
      a.max_single = std::atof(next().c_str());
    else if (arg == "--max-multi")
      a.max_multi = std::atof(next().c_str());
    else if (arg == "--verbose")
      a.verbose = true;
    else if (arg == "--fit")
      a.fit = true;
    else if (arg == "--write")
      a.write = next();
    else if (arg == "--allreduce")
      a.allreduce = next();
    else if (arg == "--pp-pairs")
      a.pp_pairs = true;
    else if (arg == "--write-gain-error")
      a.gain_error_file = next();
    else if (arg == "--gain-error-kind")
      a.gain_error_kind = next();
    else if (arg == "--gain-error-command")
      a.gain_error_command = next();
    else if (arg == "--gain-error-note")
      a.gain_error_note = next();
    else if (arg == "--groups" || arg == "--threshold") {
      const std::string v = next();
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      const bool groups = arg == "--groups";
      if (end == v.c_str() || *end || (groups ? (x < 1 || x != static_cast<int>(x)) : (x < 0 || x >= 1))) {
        std::fprintf(stderr, "ibt_validate_vtrain: %s '%s': expected %s\n", arg.c_str(), v.c_str(),
                     groups ? "a whole number of groups >= 1" : "a fraction in [0, 1), e.g. 0.05");
        std::exit(2);
      }
      if (groups)
        a.groups = static_cast<int>(x);
      else
        a.threshold = x;
    } else {
      std::fprintf(stderr,
                   "usage: ibt_validate_vtrain [--dir DIR] [--topology T] [--max-single PCT] [--max-multi PCT] "
                   "[--verbose] [--fit [--allreduce CSV] [--write FILE.json]] [--pp-pairs [--groups N] [--threshold F] "
                   "[--write-gain-error FILE.json --gain-error-kind catalog|calibrated "
                   "[--gain-error-command TEXT] [--gain-error-note TEXT]]]\n");
      std::exit(2);
    }
  }
  return a;
}

// --fit: the topology with the authors' measured all-reduce and the efficiency model
// fitted on every 4th row of each vTrain file, written to --write when given.
ibt::topo::Topology fit_topology(ibt::topo::Topology t, const Args& a) {
  // First the measured all-reduce of the authors' A100 node (fitted to collective
  // timings, not to iteration times), then the efficiency model on top of it.
  const auto coll = ibt::topo::fit_allreduce_table(a.allreduce);
  for (const auto& c : coll)
    std::printf("all-reduce of %d GPUs (%d sizes): alpha %.1f us, busbw %.1f GB/s (max residual %.0f%%)\n",
                c.group_size, c.points, c.alpha_us, c.busbw_GBps, 100 * c.max_rel_residual);
  t = ibt::topo::with_collective_fits(
      t, coll,
      "NCCL all-reduce (nccl-tests) on one A100 node of the vTrain authors, 2/4/8 GPUs, 1 MiB-1 GiB: "
      "trace/a100/AR_GPU{2,4,8}_1M_1024M_LUT of github.com/VIA-Research/vTrain, copied to "
      "topologies/validation/vtrain-a100-allreduce.csv; one latency-bandwidth fit per group size");
  // Fit the one efficiency model on every 4th row of each file (single-node rows are
  // small ops, multi-node rows large ones: a fit on one regime alone leaves the other
  // unconstrained); the other rows are held out.
  std::vector<ibt::topo::VtrainRow> subset;
  for (bool multi : {false, true}) {
    const auto rows =
        ibt::topo::read_vtrain_csv(a.dir + (multi ? "/ground_truth_multi.csv" : "/ground_truth_single.csv"), multi);
    for (size_t i = 0; i < rows.size(); i += 4) subset.push_back(rows[i]);
  }
  const auto f = ibt::topo::fit_vtrain_efficiency(subset, t);
  std::printf("fit on %zu rows (every 4th of each file): gemm_efficiency %.4f, op_overhead_us %.2f (fit MAPE %.2f%%)\n",
              subset.size(), f.gemm_efficiency, f.op_overhead_us, 100 * f.mape);
  char how[512];
  std::snprintf(how, sizeof how,
                "ibt_validate_vtrain --fit: gemm_efficiency and op_overhead_us fitted once (golden-section "
                "coordinate descent on the mean of the single- and multi-node MAPE) on every 4th row of each "
                "vTrain file (%zu rows); the other rows are held out. Every other figure is %s's, but the "
                "intra-node all-reduce (vtrain-nccl fits).",
                subset.size(), t.name.c_str());
  t = ibt::topo::with_efficiency(t, f.gemm_efficiency, f.op_overhead_us, how);
  t.name = "dgx-a100-vtrain-fit";
  t.description =
      "DGX A100 (catalog figures) with the compute efficiency model fitted once to "
      "Megatron-DeepSpeed runs of 2022 (the vTrain ground truth): " +
      t.description;
  if (!a.write.empty()) {
    std::FILE* o = std::fopen(a.write.c_str(), "w");
    if (!o) throw ibt::UsageError("cannot write " + a.write);
    std::fputs(ibt::topo::to_json(t).c_str(), o);
    std::fclose(o);
    std::printf("wrote %s\n", a.write.c_str());
  }
  return t;
}

// The --verbose line of each row: its fields named inline ("gpus   8 gb   32 ..."), each
// name the separator before its value (the indent names the first), at the printf widths
// they always had; no header.
ibt::TextTable row_columns() {
  using Align = ibt::TextTable::Align;
  using Column = ibt::TextTable::Column;
  ibt::TextTable table;
  table.add_column(Column("gpus", Align::right, "", 3));  // named by the indent
  const std::pair<const char*, std::size_t> fields[] = {
      {" gb ", 4}, {" mb ", 2}, {" h ", 5},  {" a ", 3},         {" l ", 3},           {" s ", 4},
      {" tp ", 1}, {" dp ", 3}, {" pp ", 2}, {": measured ", 9}, {" ms projected ", 9}};
  for (const auto& [gap, width] : fields) table.add_column(Column("", Align::right, "", width).after(gap));
  table.add_column(Column("error", Align::left).after(" ms "));
  return table;
}

// Projects one vTrain file and prints its MAPE; false when it exceeds its bound.
bool report_file(const ibt::topo::Topology& t, const Args& a, bool multi) {
  const std::string file = a.dir + (multi ? "/ground_truth_multi.csv" : "/ground_truth_single.csv");
  const auto results = ibt::topo::project_vtrain(ibt::topo::read_vtrain_csv(file, multi), t);
  const auto m = ibt::topo::mape(results);
  // The rows --fit never sees (it takes every 4th row of each file).
  std::vector<ibt::topo::VtrainResult> held_out;
  for (size_t i = 0; i < results.size(); ++i)
    if (i % 4 != 0) held_out.push_back(results[i]);
  const auto h = ibt::topo::mape(held_out);
  double worst = 0, bias = 0;
  for (const auto& r : results)
    if (r.error.empty()) {
      worst = std::max(worst, r.ape);
      bias += (r.projected_ms - r.row.measured_ms) / r.row.measured_ms;
    }
  std::printf(
      "%-6s rows %4d projected, %d skipped: MAPE %.2f%% (mean signed error %+.2f%%, worst %.1f%%; "
      "%d rows not in the fit subset: %.2f%%)%s\n",
      multi ? "multi" : "single", m.rows, m.skipped, 100 * m.mape, m.rows ? 100 * bias / m.rows : 0.0, 100 * worst,
      h.rows, 100 * h.mape, multi ? "  [vTrain: 14.73%]" : "  [vTrain: 8.37%]");
  if (a.verbose) {
    const ibt::TextTable table = row_columns();
    ibt::TextTable::Style style;
    style.header = false;
    style.indent = "  gpus ";
    style.trim = false;  // "ms " ends a row without error, as it always did
    for (const auto& r : results)
      std::printf("%s",
                  table
                      .row_text({std::to_string(r.row.gpus), std::to_string(r.row.global_batch),
                                 std::to_string(r.row.micro_batch), std::to_string(r.row.hidden),
                                 std::to_string(r.row.heads), std::to_string(r.row.layers), std::to_string(r.row.seq),
                                 std::to_string(r.row.tp), std::to_string(r.row.dp), std::to_string(r.row.pp),
                                 ibt::fixed(r.row.measured_ms, 1), ibt::fixed(r.projected_ms, 1), r.error},
                                style)
                      .c_str());
  }
  const double bound = multi ? a.max_multi : a.max_single;
  if (bound > 0 && 100 * m.mape > bound) {
    std::printf("FAIL: %s MAPE %.2f%% exceeds the bound %.2f%%\n", multi ? "multi" : "single", 100 * m.mape, bound);
    return false;
  }
  return true;
}

// --pp-pairs: the PP verdict against the groups measured with and without PP.
void report_pp_pairs(const ibt::topo::Topology& t, const Args& a) {
  std::vector<ibt::topo::VtrainRow> rows;
  for (bool multi : {false, true}) {
    const auto r =
        ibt::topo::read_vtrain_csv(a.dir + (multi ? "/ground_truth_multi.csv" : "/ground_truth_single.csv"), multi);
    rows.insert(rows.end(), r.begin(), r.end());
  }
  const auto groups = ibt::topo::pp_groups(rows, a.groups);
  const auto pairs = ibt::topo::compare_pp_pairs(groups, t, a.threshold);
  if (a.verbose)
    for (const auto& p : pairs)
      std::printf(
          "  %-44s splits %2zu: gain measured %+7.1f%% projected %+7.1f%% (err %+6.1f pts) %s%s%s\n",
          ibt::topo::group_label(p.key).c_str(), p.splits.size(), 100 * p.measured_gain, 100 * p.projected_gain,
          100 * (p.projected_gain - p.measured_gain), p.projected_needed ? "said PP needed" : "said PP not needed",
          p.measured_needed == p.projected_needed ? "" : " (measured: the other)", p.top1 ? ", best split found" : "");
  const auto s = ibt::topo::summarize(pairs);
  const auto pct = [&](int n) { return s.groups ? 100.0 * n / s.groups : 0.0; };
  std::printf("PP verdict on %s, %d groups measured with and without PP (verdict: gain > %.0f%%):\n", t.name.c_str(),
              s.groups, 100 * a.threshold);
  std::printf("  verdict agrees with the measured one: %d/%d (%.0f%%)\n", s.agree, s.groups, pct(s.agree));
  std::printf("  said PP not needed where PP won: %d; said PP needed where it did not: %d\n", s.confusion[1][0],
              s.confusion[0][1]);
  std::printf("  agreed PP needed: %d; agreed PP not needed: %d\n", s.confusion[1][1], s.confusion[0][0]);
  std::printf("  best split among the measured: top-1 %d/%d (%.0f%%), regret median %.1f%%, p90 %.1f%%\n", s.top1,
              s.groups, pct(s.top1), s.regret_median, s.regret_p90);
  std::printf("  gain error (projected - measured gain, points): median %+.1f, p10 %+.1f, p90 %+.1f, |err| p80 %.1f\n",
              s.err_median, s.err_p10, s.err_p90, s.abs_err_p80);
  if (!a.gain_error_file.empty()) {
    // The verdict's uncertainty rests on every pair: a subset would understate how few it has.
    if (a.groups)
      throw ibt::UsageError("--write-gain-error with --groups: the stored error must come from every group");
    ibt::topo::write_gain_error(a.gain_error_file, a.gain_error_kind, t.name, s, a.threshold,
                                a.gain_error_command.empty() ? "ibt_validate_vtrain --pp-pairs" : a.gain_error_command,
                                a.gain_error_note);
    std::printf("wrote the %s gain error to %s\n", a.gain_error_kind.c_str(), a.gain_error_file.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse_args(argc, argv);
  try {
    auto t = ibt::topo::load_topology(a.topology);
    if (a.fit) t = fit_topology(t, a);
    if (!a.gain_error_file.empty() && !a.pp_pairs) throw ibt::UsageError("--write-gain-error needs --pp-pairs");
    if (a.pp_pairs) {
      report_pp_pairs(t, a);
      return 0;
    }
    int status = 0;
    for (bool multi : {false, true})
      if (!report_file(t, a, multi)) status = 1;
    return status;
  } catch (const ibt::UsageError& e) {
    std::fprintf(stderr, "ibt_validate_vtrain: error: %s\n", e.what());
    return 2;
  }
}
