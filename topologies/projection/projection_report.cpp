#include "topologies/projection/projection_report.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "core/text_table.hpp"
#include "core/text_wrap.hpp"

namespace ibt::topo {

std::string split_label(const models::ParallelSplit& s) { return models::describe(s); }

std::string strategy_and_split(const models::ParallelSplit& s) {
  return "[" + models::strategy_label(s) + "] " + models::describe(s);
}

namespace {

std::string fmt(const char* f, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}

// The exposed term that costs most (for one-line summaries).
std::string largest_exposure(const Projection& p) {
  int best = 0;
  for (int e = 1; e < kNumExposures; ++e)
    if (p.exposed_s[e] > p.exposed_s[best]) best = e;
  if (p.exposed_s[best] <= 0) return "-";
  return std::string(to_string(static_cast<Exposure>(best))) + " " +
         fmt("%.0f%%", 100.0 * p.exposed_s[best] / p.step_s);
}

// Every stage's breakdown (the sim keeps them for single projections) and the
// bottleneck: the stage with the most work of its own (compute + exposed
// communication = step time - its idle), which sets the pipeline's pace -- an MoE
// stage's EP all-to-all or the last stage's loss head hides here, not in stage 0.
std::string stage_table(const Projection& p) {
  const auto& stages = p.sim.stages;
  if (stages.size() < 2) return "";
  const double step_us = p.step_s * 1e6;
  std::string out = "stages       (seconds; busy = compute + exposed communication = step - bubble)\n";
  out += "  stage   compute";
  for (int e = 0; e < kNumExposures; ++e)
    if (static_cast<Exposure>(e) != Exposure::bubble) {
      char name[24];
      std::snprintf(name, sizeof name, "%10s", to_string(static_cast<Exposure>(e)));
      out += name;
    }
  out += "    bubble      busy\n";
  for (size_t i = 0; i < stages.size(); ++i) {
    const StageTime& st = stages[i];
    const double busy = step_us - st.exposed_us[static_cast<int>(Exposure::bubble)];
    out += fmt("  %5.0f", static_cast<double>(st.stage)) + fmt(" %9.4f", st.compute_us * 1e-6);
    for (int e = 0; e < kNumExposures; ++e)
      if (static_cast<Exposure>(e) != Exposure::bubble) out += fmt(" %9.4f", st.exposed_us[e] * 1e-6);
    out += fmt(" %9.4f", st.exposed_us[static_cast<int>(Exposure::bubble)] * 1e-6) + fmt(" %9.4f", busy * 1e-6) + "\n";
  }
  const StageTime& b = stages[p.bottleneck_stage];  // the least bubble (projection.cpp)
  int worst = -1;
  for (int e = 0; e < kNumExposures; ++e)
    if (static_cast<Exposure>(e) != Exposure::bubble && b.exposed_us[e] > 0 &&
        (worst < 0 || b.exposed_us[e] > b.exposed_us[worst]))
      worst = e;
  out += "bottleneck   stage " + std::to_string(b.stage) + ": busy " +
         fmt("%.1f%%", 100 * (step_us - b.exposed_us[static_cast<int>(Exposure::bubble)]) / step_us) + " of the step" +
         (worst >= 0 ? std::string(", largest exposed communication ") + to_string(static_cast<Exposure>(worst)) + " " +
                           fmt("%.4f s", b.exposed_us[worst] * 1e-6)
                     : std::string()) +
         "\n";
  return out;
}

}  // namespace

std::string describe_projection(const Projection& p, const std::string& dtype) {
  std::string out = "split        " + split_label(p.split) + " (" + std::to_string(p.devices) +
                    " devices)\nstrategy     " + models::strategy_label(p.split) + "\n";
  auto mem = [&]() {
    return "memory       " + fmt("%.1f GB", p.memory.total() / 1e9) + " per device on stage " +
           std::to_string(p.memory.stage) + " (weights " + fmt("%.1f", p.memory.weights / 1e9) + ", grads " +
           fmt("%.1f", p.memory.grads / 1e9) + ", optimizer " + fmt("%.1f", p.memory.optimizer / 1e9) +
           ", activations " + fmt("%.1f", p.memory.activations / 1e9) +
           (p.memory.buffers > 0 ? ", ZeRO buffers " + fmt("%.1f", p.memory.buffers / 1e9) : std::string()) +
           " GB) of " + fmt("%.1f GB", p.memory_capacity_bytes / 1e9) + " usable\n";
  };
  if (!p.feasible && !p.priced) return out + "INFEASIBLE   " + p.reason + "\n";
  if (!p.feasible)  // priced anyway: what the step would take if the memory were there
    out += "DOES NOT FIT " + p.reason + "\n             (the figures below assume the memory were there)\n";
  out += "step time    " + fmt("%.4f s", p.step_s) + "\n";
  out += "MFU          " + format_mfu_with_band(p.mfu, p.mfu_band, p.topology_name) + " (model FLOPs vs " + dtype +
         " peak), HFU " + fmt("%.1f%%", 100 * p.hfu) + " (with recompute)\n";
  out += "throughput   " + fmt("%.4g tokens/s", p.tokens_per_s) + ", " +
         fmt("%.4g model FLOP per step", p.model_flops) + "\n";
  // The bottleneck stage's breakdown where every stage's is known (it sets the pace;
  // stage 0 of an MoE or loss-heavy pipeline is mostly waiting), else stage 0's.
  const bool by_bottleneck = p.stages.size() > 1 && p.bottleneck_stage < static_cast<int>(p.stages.size());
  const double compute_s = by_bottleneck ? p.stages[p.bottleneck_stage].compute_s : p.compute_s;
  const auto& exposed_s = by_bottleneck ? p.stages[p.bottleneck_stage].exposed_s : p.exposed_s;
  out += "breakdown    (pipeline stage " + std::to_string(by_bottleneck ? p.bottleneck_stage : 0) +
         (by_bottleneck ? ", the bottleneck" : "") + "; parts add up to the step time" +
         (p.stages.size() > 1 ? "; every stage below" : "") + ")\n";
  out += "  compute          " + fmt("%9.4f s", compute_s) + fmt("  %5.1f%%", 100 * compute_s / p.step_s) + "\n";
  for (int e = 0; e < kNumExposures; ++e) {
    const auto x = static_cast<Exposure>(e);
    const std::string name = x == Exposure::bubble ? "bubble/idle" : std::string("exposed ") + to_string(x);
    char line[96];
    std::snprintf(line, sizeof line, "  %-16s %9.4f s  %5.1f%%\n", name.c_str(), exposed_s[e],
                  100 * exposed_s[e] / p.step_s);
    out += line;
  }
  out += stage_table(p);
  return out + mem();
}

namespace {

// The rows ranking_table prints: feasible, not bounded out, `limit` at most.
bool shown_row(const Projection& p, size_t shown, size_t limit) {
  return !p.bounded_out && p.feasible && !(limit && shown >= limit);
}

// "strategy  split" columns of a ranking row: wide, the strategy and the full label in
// fixed columns; else the compact label in a column as wide as the longest shown, but no
// wider than leaves the row within kReportColumns: a longer label continues on the lines
// below, in its column (cell_pieces).
struct SplitColumns {
  bool wide;
  int width;
  // The row's cells (strategy and label when wide, else the label's first piece), then
  // the label's continuation pieces (none when wide or it fits).
  std::vector<std::string> cells(const models::ParallelSplit& s) const {
    if (wide) return {models::strategy_label(s), split_label(s)};
    return cell_pieces(models::compact_label(s), static_cast<std::size_t>(width));
  }
};

// The header of the last column: shorter when the rows must fit kReportColumns.
const char* exposure_header(bool wide) { return wide ? "largest exposed" : "top exposed"; }

// `fixed`: the row's characters besides the split column and the last (largest exposed).
SplitColumns split_columns(const std::vector<Projection>& ranked, size_t limit, bool wide, int fixed) {
  SplitColumns c{wide, 5};
  int exposure = static_cast<int>(std::strlen(exposure_header(wide)));
  size_t shown = 0;
  for (const auto& p : ranked)
    if (shown_row(p, shown, limit)) {
      ++shown;
      c.width = std::max(c.width, static_cast<int>(models::compact_label(p.split).size()));
      exposure = std::max(exposure, static_cast<int>(largest_exposure(p).size()));
    }
  // No narrower than the longest piece a label must keep whole ("recompute=selective").
  c.width = std::min(c.width, std::max(static_cast<int>(kReportColumns) - fixed - exposure, 19));
  return c;
}

// The ranking's columns at the printf widths they always had; each row is laid out on its
// own (row_text), so a cell wider than its column pushes only its own row, as printf did.
TextTable ranking_columns(const SplitColumns& split, bool goodput) {
  using Align = TextTable::Align;
  using Column = TextTable::Column;
  TextTable table;
  table.add_column({"rank", Align::right, "", 4});
  if (split.wide) {
    table.add_column(Column("strategy", Align::left, "", 18).after("  "));
    table.add_column({"split", Align::left, "", 66});
  } else {
    table.add_column(Column("split", Align::left, "", static_cast<std::size_t>(split.width)).after("  "));
  }
  table.add_column({"PP", Align::right, "", 3});
  table.add_column({"step (s)", Align::right, "", 10});
  table.add_column({"MFU", Align::right, "", 6});
  table.add_column({"HFU", Align::right, "", 6});
  table.add_column({"mem GB", Align::right, "", 8});
  if (goodput) {
    table.add_column(Column("goodput", Align::right, "", 7).after("  "));
    table.add_column({"gMFU", Align::right, "", 6});
  }
  table.add_column(Column(exposure_header(split.wide), Align::left).after("  "));
  return table;
}

}  // namespace

std::string ranking_table(const std::vector<Projection>& ranked, size_t limit, bool wide) {
  // Goodput columns only when the failure figures were given (failure_model.hpp).
  bool goodput = false;
  for (const auto& p : ranked) goodput = goodput || p.goodput.computed;
  // rank, then PP, step, MFU, HFU, memory and the goodput columns around the split.
  const int fixed_width = 6 + 40 + (goodput ? 16 : 0);
  const SplitColumns columns = split_columns(ranked, limit, wide, fixed_width);
  const TextTable table = ranking_columns(columns, goodput);
  TextTable::Style style;
  style.gap = " ";
  style.rule = false;
  std::string out = table.header_text(style);
  size_t shown = 0, infeasible = 0, bounded = 0;
  const Projection* bounded_example = nullptr;
  for (size_t i = 0; i < ranked.size(); ++i) {
    const Projection& p = ranked[i];
    if (p.bounded_out) {
      ++bounded;
      if (!bounded_example) bounded_example = &p;
      continue;
    }
    if (!p.feasible) {
      ++infeasible;
      continue;
    }
    if (limit && shown >= limit) continue;
    ++shown;
    const std::vector<std::string> split = columns.cells(p.split);
    std::vector<std::string> cells{std::to_string(i + 1)};
    const std::size_t split_cells = wide ? 2 : 1;
    cells.insert(cells.end(), split.begin(), split.begin() + static_cast<std::ptrdiff_t>(split_cells));
    for (std::string cell :
         {std::string(p.split.pp > 1 ? "yes" : "no"), fixed(p.step_s, 4), fixed(100 * p.mfu, 1) + "%",
          fixed(100 * p.hfu, 1) + "%", fixed(p.memory.total() / 1e9, 1)})
      cells.push_back(cell);
    if (goodput) {
      cells.push_back(fixed(100 * p.goodput.goodput, 2) + "%");
      cells.push_back(fixed(100 * p.goodput.goodput_mfu, 1) + "%");
    }
    cells.push_back(largest_exposure(p));
    out += table.row_text(cells, style);
    for (size_t k = split_cells; k < split.size(); ++k) {  // the label's continuation, in its column
      std::vector<std::string> more(table.columns());
      more[1] = split[k];
      out += table.row_text(more, style);
    }
  }
  size_t feasible = ranked.size() - infeasible - bounded;
  std::string notes;  // prose under the rows: wrapped to 120 columns unless wide
  auto label = [wide](const models::ParallelSplit& sp) { return wide ? split_label(sp) : models::compact_label(sp); };
  notes += std::to_string(feasible) + " feasible split(s)" +
           (limit && feasible > shown ? " (" + std::to_string(shown) + " shown)" : std::string()) + ", " +
           std::to_string(infeasible) + " infeasible\n";
  // Splits a search skipped by their lower bound (SearchRun::keep_best): they fit but
  // cannot enter the top list, so their times were not computed.
  if (bounded)
    notes +=
        "  " + std::to_string(bounded) +
        " more split(s) fit in memory but were not priced: their step-time lower bound is above the top list's last "
        "(e.g. " +
        label(bounded_example->split) + ": " + bounded_example->reason + "; --top 0 prices every split)\n";
  // Examples: first the splits that fit in memory and were refused all the same (the
  // topology cannot carry them: rarer, and the more telling), then those too big; a
  // reason already shown is not repeated.
  size_t reasons = 0;
  std::vector<const std::string*> shown_reasons;
  for (const bool fit : {true, false})
    for (const auto& p : ranked) {
      if (p.feasible || p.bounded_out || p.fits_memory != fit || reasons == 3) continue;
      if (std::any_of(shown_reasons.begin(), shown_reasons.end(), [&](const std::string* r) { return *r == p.reason; }))
        continue;
      shown_reasons.push_back(&p.reason);
      notes += "  infeasible: " + label(p.split) + ": " + p.reason + "\n";
      ++reasons;
    }
  if (infeasible > reasons) notes += "  ... (every infeasible split and its reason is in the HDF5 table)\n";
  return out + wrap_lines(notes, wide ? 0 : kReportColumns);
}

std::vector<ProjectionStageRow> projection_stage_rows(const Projection& p) {
  std::vector<ProjectionStageRow> rows;
  for (size_t s = 0; s < p.stages.size(); ++s) {
    const auto& b = p.stages[s];
    auto x = [&](Exposure e) { return b.exposed_s[static_cast<int>(e)]; };
    rows.push_back({split_label(p.split), static_cast<std::int64_t>(s), static_cast<int>(s) == p.bottleneck_stage,
                    b.compute_s, x(Exposure::tp), x(Exposure::dp), x(Exposure::expert_dp), x(Exposure::pp),
                    x(Exposure::ep), x(Exposure::bubble), x(Exposure::cp)});
  }
  return rows;
}

namespace {

// The split's layout and verdict; the times, memory and goodput follow (projection_row).
void fill_split(ProjectionRow& r, const Projection& p) {
  const auto& s = p.split;
  r.split = split_label(s);
  r.devices = p.devices;
  r.dp = s.dp;
  r.tp = s.tp;
  r.pp = s.pp;
  r.ep = s.ep;
  r.vpp = s.vpp;
  r.microbatches = s.microbatches;
  r.micro_batch_size = s.micro_batch_size;
  r.schedule = models::to_string(s.schedule);
  r.sequence_parallel = s.sequence_parallel;
  r.zero = s.zero;
  r.shard_group = s.shard_group;
  r.strategy = models::strategy_label(s);
  r.recompute = models::to_string(s.recompute);
  r.feasible = p.feasible;
  r.reason = p.reason.substr(0, 255);
  r.cp = s.cp;
  r.cp_comm = models::to_string(s.cp_comm);
}

}  // namespace

ProjectionRow projection_row(const Projection& p) {
  ProjectionRow r;
  fill_split(r, p);
  r.model_flops = p.model_flops;
  // A split that was not priced has no time: NaN (the row's default), never 0, so an
  // average over rows cannot mix it in. A split that does not fit in memory is still
  // priced (its row says by how much it is over: fits_memory, memory_excess_bytes), so
  // its times are stored.
  if (p.feasible || p.priced) {
    auto x = [&](Exposure e) { return p.exposed_s[static_cast<int>(e)]; };
    r.step_s = p.step_s;
    r.mfu = p.mfu;
    r.hfu = p.hfu;
    r.tokens_per_s = p.tokens_per_s;
    r.compute_s = p.compute_s;
    r.exposed_tp_s = x(Exposure::tp);
    r.exposed_dp_s = x(Exposure::dp);
    r.exposed_expert_dp_s = x(Exposure::expert_dp);
    r.exposed_pp_s = x(Exposure::pp);
    r.exposed_ep_s = x(Exposure::ep);
    r.bubble_s = x(Exposure::bubble);
    r.exposed_cp_s = x(Exposure::cp);
  }
  r.memory_bytes = p.memory.total();
  r.memory_capacity_bytes = p.memory_capacity_bytes;
  r.fits_memory = p.fits_memory;
  r.memory_excess_bytes = p.memory_excess_bytes;
  r.priced = p.priced;
  const GoodputEstimate& g = p.goodput;
  if (g.computed) {  // else NaN: no failure figures
    r.job_mtbf_s = g.job_mtbf_s;
    r.checkpoint_bytes = g.checkpoint_bytes;
    r.checkpoint_s = g.checkpoint_s;
    r.restart_s = g.restart_s;
    r.interval_young_s = g.young_s;
    r.interval_daly_s = g.daly_s;
    r.goodput = g.goodput;
    r.goodput_mfu = g.goodput_mfu;
  }
  r.interval_steps = g.interval_steps;
  return r;
}

}  // namespace ibt::topo

#include <fstream>
#include <sstream>

#include "core/catalog_file.hpp"
#include "core/errors.hpp"
#include "core/input_file.hpp"
#include "models/plan/model_file.hpp"

namespace ibt::topo {

std::string model_file_text(const std::string& name_or_path) {
  const std::string path = catalog_file(name_or_path, models::catalog_dir());
  require_input_file(path, "model file");
  std::ifstream in(path);
  if (!in) throw UsageError("model file '" + path + "' cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ibt::topo
