#include "topologies/calibration/calibration_layout.hpp"

#include <algorithm>
#include <cstdint>
#include <variant>

#include "core/errors.hpp"
#include "reports/store/store.hpp"

namespace ibt::topo {

namespace {

std::optional<std::int64_t> int_attr(const store::RunInfo& run, const std::string& name) {
  const auto v = run.attr(name);
  if (!v) return std::nullopt;
  if (auto p = std::get_if<std::int64_t>(&*v)) return *p;
  if (auto p = std::get_if<double>(&*v)) return static_cast<std::int64_t>(*p);
  return std::nullopt;
}

std::string describe(const MeasuredLayout& l) {
  return std::to_string(l.world_size) + " ranks in " + std::to_string(l.domains) + " domain(s)";
}

// Steps of the ring algorithm the fitted alpha covers (one network hop each).
double ring_hops(const std::string& op, int n) {
  if (op == "all_reduce") return 2.0 * (n - 1);
  if (op == "all_gather" || op == "reduce_scatter") return n - 1.0;
  return 1.0;
}

}  // namespace

std::optional<MeasuredLayout> read_collective_layout(const std::string& path) {
  std::optional<MeasuredLayout> found;
  std::string found_run;
  for (const auto& run : store::list_runs(path)) {
    if (std::find(run.tables.begin(), run.tables.end(), "collectives") == run.tables.end()) continue;
    const auto world = int_attr(run, "world_size"), domains = int_attr(run, "domains");
    if (!world || !domains) continue;
    MeasuredLayout l{path, static_cast<int>(*world), static_cast<int>(*domains), run.attr_string("domain_method")};
    if (l.domains < 1 || l.world_size < 1 || l.world_size % l.domains != 0)
      throw UsageError(path + ": run " + run.id + ": " + describe(l) +
                       " do not split evenly into domains: no single scale-up domain size to calibrate");
    if (found && (found->world_size != l.world_size || found->domains != l.domains))
      throw UsageError(path + ": its collectives runs were measured on different layouts (run " + found_run + ": " +
                       describe(*found) + ", run " + run.id + ": " + describe(l) +
                       "): calibrate each layout from its own file");
    if (!found) found = l, found_run = run.id;
  }
  return found;
}

std::optional<MeasuredLayout> agreed_layout(const std::vector<MeasuredLayout>& layouts) {
  if (layouts.empty()) return std::nullopt;
  for (const auto& l : layouts)
    if (l.domain_size() != layouts.front().domain_size() || l.domains != layouts.front().domains)
      throw UsageError("the collectives runs were measured on different domain layouts: " + layouts.front().file +
                       " (" + describe(layouts.front()) + ") and " + l.file + " (" + describe(l) +
                       "); calibrate from runs of one layout");
  return layouts.front();
}

std::string apply_measured_layout(Topology& t, const MeasuredLayout& layout, const std::string& source) {
  t.scale_up.devices_per_domain = {static_cast<double>(layout.domain_size()), "devices", source,
                                   "measured: " + describe(layout) + " (" + layout.method + ") in " + layout.file};
  std::string what = "scale-up domain of " + std::to_string(layout.domain_size()) + " from " + describe(layout);
  // The inter fit that describes one network link best: send_recv is one transfer over
  // one link; a ring collective's busbw tends to the link bandwidth and its alpha spans
  // its ring steps. Among fits of one op, the smallest group (fewest steps folded in).
  const CollectiveFit* best = nullptr;
  auto rank = [](const std::string& op) {
    if (op == "send_recv") return 0;
    if (op == "all_reduce") return 1;
    if (op == "all_gather" || op == "reduce_scatter") return 2;
    return 9;
  };
  for (const auto& f : t.fits) {
    if (f.scope != "inter" || rank(f.op) == 9) continue;
    if (!best || rank(f.op) < rank(best->op) || (f.op == best->op && f.group_size < best->group_size)) best = &f;
  }
  if (!best) return what + "; no inter-scope fit, so no scale-out figures";
  const double launch = t.model.collective_launch_us.get();
  const double hops = ring_hops(best->op, best->group_size);
  const std::string from = best->op + " inter n=" + std::to_string(best->group_size) + " fit";
  t.scale_out.present = true;
  t.scale_out.name = "calibrated scale-out network (" + from + ")";
  t.scale_out.bandwidth_GBps = {best->op == "send_recv" ? best->algbw_GBps : best->busbw_GBps, "GB/s", source,
                                "from the " + from + (best->op == "send_recv" ? " (algbw)" : " (busbw)")};
  t.scale_out.latency_us = {std::max(0.0, best->alpha_us - launch) / hops, "us", source,
                            "from the " + from + ": (alpha - collective_launch_us) per ring step"};
  t.scale_out.algorithms = {Algorithm::ring};
  t.model.scale_out_efficiency = {1.0, "fraction", source, "the scale-out bandwidth is a fitted, achieved rate"};
  return what + "; scale-out " + std::to_string(t.scale_out.bandwidth_GBps.get()) + " GB/s, " +
         std::to_string(t.scale_out.latency_us.get()) + " us per step from the " + from;
}

}  // namespace ibt::topo
