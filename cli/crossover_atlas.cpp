#include "cli/crossover_atlas.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include "cli/cli.hpp"
#include "collectives/runtime/run_recorder.hpp"
#include "core/errors.hpp"
#include "core/text_table.hpp"
#include "core/text_wrap.hpp"
#include "ibt/version.hpp"
#include "models/plan/parallel_split.hpp"
#include "topologies/projection/projection_report.hpp"
#include "topologies/studies/atlas.hpp"
#include "topologies/studies/atlas_table.hpp"

namespace ibt::suites {
namespace {

std::string fit(std::string s, size_t n) { return s.size() < n ? s : s.substr(0, n - 1); }

std::string mfu_text(const topo::Projection& p) {
  if (!p.feasible) return "(none fits)";
  char buf[64];
  if (p.mfu_band.known)
    std::snprintf(buf, sizeof buf, "%.1f%% (%.1f-%.1f)", 100 * p.mfu, 100 * p.mfu_band.low, 100 * p.mfu_band.high);
  else
    std::snprintf(buf, sizeof buf, "%.1f%% (no band)", 100 * p.mfu);
  return buf;
}

// No gain where one side has no split (divisibility or memory): the cell's why says which.
std::string gain_text(const topo::CrossoverCell& c) {
  if (c.decided_by != topo::PpDecidedBy::gain) return "-";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * c.gain);
  return buf;
}

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string w;
  while (std::getline(ss, w, ','))
    if (!w.empty()) out.push_back(w);
  return out;
}

// The cells' table within kReportColumns: a row per cell with what decides (gain, verdict,
// practice, agreement, the deciding term), and under it the two bests, each its MFU (band)
// and strategy. --wide prints the Markdown table instead (AtlasTable::wide).
struct AtlasTable {
  bool wide = false;
  int model = 5, system = 6, scale = 23;  // column widths, from the cells to be run

  AtlasTable(const std::vector<topo::AtlasEntry>& cells, bool wide_table) : wide(wide_table) {
    for (const auto& e : cells) {
      model = std::max(model, static_cast<int>(e.model.size()));
      system = std::max(system, static_cast<int>(e.topology.size()));
      scale = std::max(scale, static_cast<int>(scale_text(e).size()));
    }
  }
  static std::string scale_text(const topo::AtlasEntry& e) {
    return std::to_string(e.devices) + " x " + std::to_string(e.global_batch) + " (" + e.scale + ")";
  }
  static std::string best_text(const topo::Projection& p) { return p.feasible ? models::strategy_label(p.split) : "-"; }

  // The narrow table's columns at the printf widths they always had; each row is laid out
  // on its own (row_text), so a cell wider than its column pushes only its own row.
  TextTable columns() const {
    using Align = TextTable::Align;
    TextTable table;
    table.add_column({"model", Align::left, "", static_cast<std::size_t>(model)});
    table.add_column({"system", Align::left, "", static_cast<std::size_t>(system)});
    table.add_column({"devices x batch (scale)", Align::left, "", static_cast<std::size_t>(scale)});
    table.add_column({"gain", Align::right, "", 7});
    table.add_column({"verdict", Align::left, "", 18});
    table.add_column({"practice", Align::left, "", 8});
    table.add_column({"agreement", Align::left, "", 12});
    table.add_column({"deciding term", Align::left});
    return table;
  }
  // The two lines under each row: which best, its MFU (band), its strategy.
  static TextTable bests() {
    using Align = TextTable::Align;
    TextTable table;
    table.add_column({"", Align::left, "", 10});
    table.add_column(TextTable::Column("", Align::left, "", 19).after("  "));
    table.add_column({"", Align::left});
    return table;
  }
  static TextTable::Style style() {
    TextTable::Style s;
    s.gap = " ";
    s.rule = false;
    return s;
  }

  void print_header() const {
    if (wide) {
      std::printf(
          "| model | system | devices x batch | scale | best with PP: MFU (band) | split | best without PP: "
          "MFU (band) | split | gain | verdict | practice | agreement | deciding term |\n");
      std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
      return;
    }
    std::printf("%s", columns().header_text(style()).c_str());
    std::printf("  (under each: the best split with and without PP, its MFU (band) and strategy)\n");
  }

  void print_cell(const topo::AtlasEntry& e, const topo::AtlasCell& c) const {
    const topo::Projection& w = c.cell.best_with_pp;
    const topo::Projection& n = c.cell.best_no_pp;
    if (wide) {
      std::printf("| %s | %s | %d x %lld | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", e.model.c_str(),
                  e.topology.c_str(), e.devices, e.global_batch, e.scale.c_str(), mfu_text(w).c_str(),
                  w.feasible ? topo::strategy_and_split(w.split).c_str() : "-", mfu_text(n).c_str(),
                  n.feasible ? topo::strategy_and_split(n.split).c_str() : "-", gain_text(c.cell).c_str(),
                  topo::verdict_text(c.cell.verdict), e.practice.c_str(), c.agreement.c_str(), c.deciding_term.c_str());
      return;
    }
    std::printf("%s", columns()
                          .row_text({e.model, e.topology, scale_text(e), gain_text(c.cell),
                                     topo::verdict_text(c.cell.verdict), e.practice, c.agreement, c.deciding_term},
                                    style())
                          .c_str());
    TextTable::Style under = style();
    under.indent = "  ";
    std::printf("%s", bests().row_text({"with PP", mfu_text(w), best_text(w)}, under).c_str());
    std::printf("%s", bests().row_text({"without PP", mfu_text(n), best_text(n)}, under).c_str());
  }
};

}  // namespace

int run_atlas(const AtlasFlags& flags, int argc, char** argv) {
  const std::string path = flags.file.empty() ? topo::default_atlas_path() : flags.file;
  const topo::AtlasSpec spec = topo::load_atlas(path);
  const std::vector<topo::AtlasEntry> cells = topo::select_cells(spec, flags.models, flags.topologies);
  if (!flags.out.empty()) store::check_appendable(flags.out);
  const std::size_t width = report_width(flags.wide);
  char intro[1024];
  std::snprintf(intro, sizeof intro,
                "ibt crossover --atlas: %zu cells of %s, threshold %.0f%%; each cell is one crossover at the "
                "system's own domain size and scale-out bandwidth\n",
                cells.size(), path.c_str(), 100 * flags.threshold);
  std::printf("%s", wrap_lines(intro, width).c_str());
  const AtlasTable table(cells, flags.wide);
  table.print_header();
  std::fflush(stdout);
  topo::keep_freed_memory_for_reuse();
  std::vector<topo::AtlasCell> results;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < cells.size(); ++i) {
    const topo::AtlasEntry& e = cells[i];
    // Progress goes to stderr line by line (the atlas runs for many minutes, usually
    // into a file), besides the redrawn bar a terminal shows.
    std::fprintf(stderr, "atlas [%zu/%zu] %s on %s, %d devices, batch %lld: searching\n", i + 1, cells.size(),
                 e.model.c_str(), e.topology.c_str(), e.devices, e.global_batch);
    const auto t0 = std::chrono::steady_clock::now();
    // No bar within a cell: its pricings mostly end skipped by the lower bound, so their
    // count says little about the time left. The estimate is per cell, from those done.
    topo::CrossoverRun run;
    run.jobs = flags.jobs;
    topo::AtlasCell c = topo::run_atlas_cell(e, flags.threshold, run);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double all = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double left = all / static_cast<double>(i + 1) * static_cast<double>(cells.size() - i - 1);
    std::fprintf(stderr, "atlas [%zu/%zu] %s on %s: %s in %.0f s (%.0f s so far, about %.0f s left)\n", i + 1,
                 cells.size(), e.model.c_str(), e.topology.c_str(), topo::verdict_text(c.cell.verdict), s, all, left);
    table.print_cell(e, c);
    std::fflush(stdout);
    results.push_back(std::move(c));
  }
  std::string notes =
      "\nwhy, per cell (the part of the step that separates the two bests; each one's bottleneck stage):\n";
  for (const auto& c : results)
    notes += "- " + c.entry.model + " on " + c.entry.topology + ": " + c.agreement + "; " + c.why + "\n";
  if (flags.wide) {
    notes += "\nsources:\n";
    for (const auto& [id, ref] : spec.sources) notes += "- " + id + ": " + ref + "\n";
  } else {  // their references hold URLs longer than a line: --wide prints them
    notes += "\nsources (their references: --wide, or the file's \"sources\"):";
    for (size_t i = 0; i < spec.sources.size(); ++i) notes += (i == 0 ? " " : ", ") + spec.sources[i].first;
    notes += "\n";
  }
  std::printf("%s", wrap_lines(notes, width).c_str());

  RunRecorder recorder(flags.out, "crossover");
  recorder.set_attr("command_line", joined_command_line(argc, argv));
  recorder.set_attr("ibt_version", std::string(kVersion));
  recorder.set_attr("git_commit", std::string(kGitCommit));
  recorder.set_attr("backend", std::string("sim"));
  recorder.set_attr("atlas", path);
  {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    recorder.set_attr("atlas_json", ss.str());
  }
  recorder.set_attr("threshold", flags.threshold);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& c : results) {
    const topo::Projection& w = c.cell.best_with_pp;
    const topo::Projection& n = c.cell.best_no_pp;
    const topo::Projection& any = n.feasible ? n : w;
    auto band = [&](const topo::Projection& p, bool high) {
      return p.feasible && p.mfu_band.known ? (high ? p.mfu_band.high : p.mfu_band.low) : nan;
    };
    recorder.append(topo::AtlasRow{
        c.entry.model, c.entry.topology, static_cast<std::int64_t>(c.entry.devices),
        static_cast<std::int64_t>(c.entry.global_batch), static_cast<std::int64_t>(c.cell.domain_size),
        c.cell.scale_out_gbps, c.entry.framework, c.entry.scale, c.entry.scale_source, w.feasible ? w.mfu : nan,
        band(w, false), band(w, true), fit(w.feasible ? topo::strategy_and_split(w.split) : "(none fits)", 120),
        n.feasible ? n.mfu : nan, band(n, false), band(n, true),
        fit(n.feasible ? topo::strategy_and_split(n.split) : "(none fits)", 120),
        any.mfu_band.known ? any.mfu_band.family : std::string(),
        // As ibt crossover stores it: NaN where nothing fits (no gain), 1e300 for "only PP fits".
        !w.feasible && !n.feasible ? nan
        : std::isinf(c.cell.gain)  ? 1e300
                                   : c.cell.gain,
        c.cell.uncertainty, std::string(topo::verdict_text(c.cell.verdict)), c.entry.practice, c.entry.practice_source,
        c.agreement, c.deciding_term, fit(c.why, 200)});
  }
  recorder.finish(store::RunStatus::complete);
  if (recorder.active()) std::printf("run %s written to %s\n", recorder.run_id().c_str(), flags.out.c_str());
  return kExitOk;
}

std::vector<std::string> atlas_list(const std::string& s) { return split_words(s); }

}  // namespace ibt::suites
