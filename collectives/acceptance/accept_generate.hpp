#pragma once
// A default acceptance reference from a catalog topology (ibt accept --generate-reference):
// targets come from the topology's link figures times an efficiency, so a new cluster can
// be judged before anyone has measured it. The assumptions are written into the file
// ("derivation" and each metric's "note"):
//   - bandwidth targets = link bandwidth per device x efficiency; the efficiency is the
//     topology's own model.scale_up_efficiency / scale_out_efficiency (stated assumptions
//     in the catalog), or --efficiency when given; a metric fails below 80% of its target
//     (lower = -0.2) and has no upper bound (ReFrame style: only slow fails);
//   - intra: all_reduce and all_gather busbw over 64-256 MiB against the scale-up link;
//   - inter and world (when the job spans more than one domain and the topology has a
//     scale-out network): all_reduce busbw against the per-device scale-out bandwidth
//     (a hierarchical or ring all-reduce over domains is limited by each device's NIC);
//   - small-message latency: 8-byte all_reduce p50 within 3x of launch + 2(n-1) ring steps
//     of the scope's link latency; the worst p2p pair at 8 bytes within 3x of the slowest
//     link's latency plus the launch cost; the worst p2p pair at 64 MiB at least 80% of the
//     slowest link's bandwidth x efficiency.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/errors.hpp"
#include "topologies/hardware/topology.hpp"

namespace ibt::suites {

inline std::string compact(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

inline nlohmann::json generate_reference(const topo::Topology& t, int ranks, std::optional<double> efficiency) {
  const int per_domain = static_cast<int>(t.scale_up.devices_per_domain.get());
  if (ranks < 2) throw UsageError("--ranks must be at least 2");
  if (per_domain < 1) throw UsageError(t.name + ": scale_up.devices_per_domain is unknown");
  const int domains = ranks / per_domain;
  if (ranks > per_domain && ranks % per_domain != 0)
    throw UsageError("--ranks " + std::to_string(ranks) + " is not a multiple of " + t.name + "'s " +
                     std::to_string(per_domain) + " devices per domain");
  if (!t.scale_up.bandwidth_GBps.known()) throw UsageError(t.name + ": scale_up.bandwidth_GBps is unknown");
  const bool multi_domain = domains > 1 && t.scale_out.present && t.scale_out.bandwidth_GBps.known();
  const double up_eff =
      efficiency.value_or(t.model.scale_up_efficiency.known() ? t.model.scale_up_efficiency.get() : 0.8);
  const double out_eff =
      efficiency.value_or(t.model.scale_out_efficiency.known() ? t.model.scale_out_efficiency.get() : 0.8);
  const double launch = t.model.collective_launch_us.get();
  const std::string eff_source = efficiency ? "--efficiency" : "the topology's model efficiencies";
  auto round3 = [](double v) { return std::round(v * 1000) / 1000; };

  nlohmann::json metrics = nlohmann::json::array();
  auto bandwidth = [&](const std::string& name, const std::string& op, const std::string& scope, nlohmann::json bytes,
                       const std::string& quantity, double link, double eff, const std::string& link_name) {
    nlohmann::json m = {{"name", name}, {"op", op}};
    if (op != "p2p") m.update({{"scope", scope}, {"dtype", "bfloat16"}});
    m.update({{"bytes", bytes},
              {"quantity", quantity},
              {"target", round3(link * eff)},
              {"lower", -0.2},
              {"upper", nullptr},
              {"unit", "GB/s"},
              {"note", link_name + " " + compact(link) + " GB/s per device x efficiency " + compact(eff)}});
    metrics.push_back(m);
  };
  auto latency = [&](const std::string& name, const std::string& op, const std::string& scope,
                     const std::string& quantity, double target, const std::string& how) {
    nlohmann::json m = {{"name", name}, {"op", op}};
    if (op != "p2p") m.update({{"scope", scope}, {"dtype", "float32"}});
    m.update({{"bytes", 8},
              {"quantity", quantity},
              {"target", round3(target)},
              {"lower", nullptr},
              {"upper", 2.0},
              {"unit", "us"},
              {"note", how}});
    metrics.push_back(m);
  };
  const nlohmann::json large = {64u << 20, 256u << 20};
  const double up_bw = t.scale_up.bandwidth_GBps.get(), up_lat = t.scale_up.latency_us.get();
  if (per_domain > 1 && ranks >= per_domain) {
    bandwidth("allreduce-intra-busbw", "all_reduce", "intra", large, "busbw_GBps", up_bw, up_eff, t.scale_up.name);
    bandwidth("allgather-intra-busbw", "all_gather", "intra", large, "busbw_GBps", up_bw, up_eff, t.scale_up.name);
    latency("allreduce-intra-8B-latency", "all_reduce", "intra", "p50_us", launch + 2 * (per_domain - 1) * up_lat,
            "collective launch " + compact(launch) + " us + 2(n-1) steps of " + compact(up_lat) + " us");
  }
  if (multi_domain) {
    const double out_bw = t.scale_out.bandwidth_GBps.get(), out_lat = t.scale_out.latency_us.get();
    bandwidth("allreduce-inter-busbw", "all_reduce", "inter", large, "busbw_GBps", out_bw, out_eff, t.scale_out.name);
    bandwidth("allreduce-world-busbw", "all_reduce", "world", large, "busbw_GBps", out_bw, out_eff, t.scale_out.name);
    latency("allreduce-inter-8B-latency", "all_reduce", "inter", "p50_us", launch + 2 * (domains - 1) * out_lat,
            "collective launch + 2(n-1) steps of " + compact(out_lat) + " us");
    bandwidth("p2p-worst-pair-bandwidth", "p2p", "", 64u << 20, "bandwidth_min_GBps", out_bw, out_eff,
              t.scale_out.name);
    latency("p2p-worst-pair-latency", "p2p", "", "latency_max_us", launch + out_lat,
            "launch + one step of " + t.scale_out.name);
  } else {
    bandwidth("p2p-worst-pair-bandwidth", "p2p", "", 64u << 20, "bandwidth_min_GBps", up_bw, up_eff, t.scale_up.name);
    latency("p2p-worst-pair-latency", "p2p", "", "latency_max_us", launch + up_lat,
            "launch + one step of " + t.scale_up.name);
  }
  return {
      {"system", t.name},
      {"description", "Generated from the " + t.name + " topology for " + std::to_string(ranks) + " ranks (" +
                          std::to_string(std::max(domains, 1)) + " domain(s) of " + std::to_string(per_domain) +
                          "), before any measurement."},
      {"derivation", "ibt accept --generate-reference: bandwidth targets = link bandwidth per device x efficiency (" +
                         eff_source + ": scale-up " + compact(up_eff) + ", scale-out " + compact(out_eff) +
                         "), failing below 80% of target; latency targets = the "
                         "topology's launch cost plus ring steps of its link latency, failing above 3x. "
                         "Bandwidth metrics use bfloat16 as training does. Replace with measured targets once "
                         "the system is known good."},
      {"job",
       {{"ranks", ranks}, {"domain_size", per_domain > ranks ? 0 : per_domain}, {"iters", 20}, {"warmup_iters", 5}}},
      {"metrics", metrics}};
}

}  // namespace ibt::suites
