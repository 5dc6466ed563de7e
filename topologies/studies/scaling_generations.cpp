// ibt scaling across hardware generations, compared by speed.
#include "topologies/studies/scaling_generations.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/stats.hpp"
#include "core/text_table.hpp"

namespace ibt::suites {
namespace {

const topo::ScalingPoint* baseline_point(const std::vector<topo::ScalingPoint>& all, const GenerationContext& ctx,
                                         int devices) {
  for (const auto& pt : all)
    if (pt.source == "projected" && pt.topology == ctx.baseline && pt.devices == devices) return &pt;
  return nullptr;
}

// "12.3" with a suffix, or "-" for a figure that does not exist.
std::string cell(double v, const char* format) {
  if (!std::isfinite(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// "2.17x +-0.26" (the band where both projections have one), "1.00x" for the baseline itself.
std::string speedup_cell(const topo::GenerationSpeed& g) {
  if (!std::isfinite(g.speedup)) return "-";
  std::string out = cell(g.speedup, "%.2fx");
  if (std::isfinite(g.speedup_uncertainty)) out += " +-" + cell(g.speedup_uncertainty, "%.2f");
  return out;
}

}  // namespace

double power_of(const topo::ScalingPoint& point, const GenerationContext& ctx) {
  if (point.source != "projected") return std::nan("");
  const auto it = ctx.power_W.find(point.topology);
  return it == ctx.power_W.end() ? std::nan("") : it->second;
}

topo::GenerationSpeed speed_of(const topo::ScalingPoint& point, const std::vector<topo::ScalingPoint>& all,
                               const GenerationContext& ctx) {
  return topo::generation_speed(point, baseline_point(all, ctx, point.devices), power_of(point, ctx), ctx.token_budget);
}

void print_generation_speed(const std::vector<topo::ScalingPoint>& all, const GenerationContext& ctx) {
  // Systems in the order met, then by median tokens/s per device over their feasible points.
  std::vector<std::string> systems;
  std::map<std::string, std::vector<double>> speeds;
  // A measured point's source is "measured FILE:RUN"; its file's folder is dropped so the
  // name fits the column.
  auto key_of = [](const topo::ScalingPoint& pt) {
    if (pt.source == "projected") return pt.topology;
    const auto slash = pt.source.rfind('/');
    return slash == std::string::npos ? pt.source : "measured " + pt.source.substr(slash + 1);
  };
  for (const auto& pt : all) {
    const std::string key = key_of(pt);
    if (!speeds.count(key)) systems.push_back(key);
    auto& s = speeds[key];
    if (pt.best.feasible) s.push_back(pt.tokens_per_s_per_device());
  }
  std::map<std::string, double> median_speed;
  for (const auto& [key, s] : speeds) median_speed[key] = quantile(s, 0.5);  // 0 when nothing fits
  std::stable_sort(systems.begin(), systems.end(),
                   [&](const std::string& a, const std::string& b) { return median_speed[a] < median_speed[b]; });

  std::printf(
      "\nSpeed by generation (slowest first; speed-up = tokens/s per device over %s's at the same count;\n"
      "+- = both projections' validation bands, taken as independent; days to train %.3g tokens;\n"
      "J/token = device board power / tokens/s per device; '-': no figure):\n",
      ctx.baseline.c_str(), ctx.token_budget);
  // Printed as printf always printed it: each row laid out on its own at these widths.
  using Align = TextTable::Align;
  TextTable table;
  table.add_column({"system", Align::left, "", 30});
  table.add_column({"devices", Align::right, "", 8});
  table.add_column({"tok/s/dev", Align::right, "", 11});
  table.add_column({"speed-up", Align::right, "", 14});
  table.add_column({"days", Align::right, "", 9});
  table.add_column({"MFU", Align::right, "", 7});
  table.add_column({"J/token", Align::right, "", 9});
  TextTable::Style style;
  style.indent = "  ";
  style.gap = " ";
  style.rule = false;
  style.trim = false;  // padded as printf padded, an empty last cell included
  std::printf("%s", table.header_text(style).c_str());
  for (const auto& key : systems)
    for (const auto& pt : all) {
      if (key_of(pt) != key) continue;
      const std::string name = key.substr(0, 30), devices = std::to_string(pt.devices);
      if (!pt.best.feasible) {
        std::printf("%s", table.row_text({name, devices, "-", "-", "-", "-", "-"}, style).c_str());
        continue;
      }
      const topo::GenerationSpeed g = speed_of(pt, all, ctx);
      std::printf("%s", table
                            .row_text({name, devices, fixed(pt.tokens_per_s_per_device(), 0), speedup_cell(g),
                                       cell(g.time_to_budget_s / 86400, "%.1f"), fixed(100 * pt.best.mfu, 1) + "%",
                                       cell(g.joules_per_token, "%.3g")},
                                      style)
                            .c_str());
    }
}

}  // namespace ibt::suites
