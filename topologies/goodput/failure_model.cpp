#include "topologies/goodput/failure_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "core/errors.hpp"
#include "models/plan/schedule.hpp"
#include "topologies/goodput/goodput.hpp"
#include "topologies/sim/sim_fast.hpp"

namespace ibt::topo {

namespace {

std::string fmt(const char* f, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}

Assumption from_topology(const Topology& t, const Figure& f) {
  Assumption a;
  a.value = f.value;
  const Source* s = t.find_source(f.source);
  const char* kind = !s                                  ? "?"
                     : s->kind == SourceKind::assumption ? "assumption"
                     : s->kind == SourceKind::measured   ? "measured"
                                                         : "public";
  a.origin = t.name + " reliability, " + kind + " '" + f.source + "'";
  a.ref = s ? s->ref : "";
  a.note = f.note;
  return a;
}

void take(Assumption& a, const std::optional<double>& flag, const char* name, double min, double max) {
  if (!flag) return;
  if (!(*flag >= min && *flag <= max))
    throw UsageError(std::string(name) + " must be in [" + fmt("%g", min) + ", " + fmt("%g", max) + "] (got " +
                     fmt("%g", *flag) + ")");
  a.value = flag;
  a.origin = std::string(name) + " (command line)";
  a.ref.clear();
  a.note.clear();
}

}  // namespace

std::string FailureAssumptions::missing() const {
  if (!node_mtbf_hours.value)
    return "no failure rate (give --node-mtbf-hours or a topology with a reliability section)";
  if (!devices_per_node.value) return "no node size (give --devices-per-node)";
  if (!checkpoint_write_GBps.value) return "no checkpoint write bandwidth (give --checkpoint-write-GBps)";
  if (!restart_minutes.value) return "no restart time (give --restart-minutes)";
  return "";
}

FailureAssumptions failure_assumptions(const Topology& topology, const FailureOverrides& o) {
  FailureAssumptions a;
  if (topology.reliability) {
    const Reliability& r = *topology.reliability;
    a.node_mtbf_hours = from_topology(topology, r.node_mtbf_hours);
    a.devices_per_node = from_topology(topology, r.devices_per_node);
    a.checkpoint_write_GBps = from_topology(topology, r.checkpoint_write_GBps);
    a.restart_minutes = from_topology(topology, r.restart_minutes);
  }
  // Open bounds written as tiny minima: a zero MTBF or bandwidth has no meaning.
  take(a.node_mtbf_hours, o.node_mtbf_hours, "--node-mtbf-hours", 1e-6, 1e12);
  take(a.devices_per_node, o.devices_per_node, "--devices-per-node", 1, 1e7);
  if (o.devices_per_node && *o.devices_per_node != std::floor(*o.devices_per_node))
    throw UsageError("--devices-per-node must be a whole number (got " + fmt("%g", *o.devices_per_node) + ")");
  take(a.checkpoint_write_GBps, o.checkpoint_write_GBps, "--checkpoint-write-GBps", 1e-9, 1e9);
  take(a.restart_minutes, o.restart_minutes, "--restart-minutes", 0, 1e6);
  return a;
}

int nodes_for(int devices, int devices_per_node) {
  if (devices < 1 || devices_per_node < 1) throw UsageError("nodes_for: devices and devices per node must be >= 1");
  return (devices + devices_per_node - 1) / devices_per_node;
}

double checkpoint_bytes_per_device(const models::ModelConfig& model, const models::ParallelSplit& split,
                                   const models::Precision& precision) {
  // The parameters do not depend on the schedule; memory_per_rank reads it for the
  // activations, which the compute orders (cached per schedule, sim_fast.hpp) give
  // without building the lock-step schedule for every ranked split.
  const std::shared_ptr<const models::PipelineSchedule> orders = schedule_compute_orders(split);
  const models::PipelineSchedule& schedule = *orders;
  const double per_param = precision.weight_bytes + precision.optimizer_bytes;
  // Every rank that holds the same weights shares their save: the DP replicas and, since
  // context-parallel ranks hold the whole layer too, the CP ranks of each (dp x cp for
  // dense weights, expert_dp x cp for experts).
  double worst = 0;
  for (int stage = 0; stage < split.pp; ++stage) {
    const models::RankMemory m = models::memory_per_rank(model, split, precision, stage, schedule);
    const double dense = m.params - m.expert_params;
    worst =
        std::max(worst, per_param * (dense / split.grad_replicas() + m.expert_params / (split.expert_dp() * split.cp)));
  }
  return worst;
}

GoodputEstimate estimate_goodput(const FailureAssumptions& a, int devices, double checkpoint_bytes, double step_s,
                                 double mfu) {
  GoodputEstimate g;
  g.why_not = a.missing();
  if (!g.why_not.empty()) return g;
  if (!(step_s > 0)) {
    g.why_not = "no step time (the split is infeasible)";
    return g;
  }
  g.nodes = nodes_for(devices, static_cast<int>(*a.devices_per_node.value));
  g.job_mtbf_s = *a.node_mtbf_hours.value * 3600.0 / g.nodes;
  g.checkpoint_bytes = checkpoint_bytes;
  g.checkpoint_s = checkpoint_bytes / (*a.checkpoint_write_GBps.value * 1e9);
  g.restart_s = *a.restart_minutes.value * 60.0;
  g.young_s = young_interval(g.checkpoint_s, g.job_mtbf_s);
  g.daly_s = daly_interval(g.checkpoint_s, g.job_mtbf_s);
  g.interval_steps = std::max(1L, std::lround(g.daly_s / step_s));
  g.interval_s = g.interval_steps * step_s;
  g.goodput = goodput_exact(g.interval_s, g.checkpoint_s, g.restart_s, g.job_mtbf_s);
  g.goodput_first_order = goodput_first_order(g.interval_s, g.checkpoint_s, g.restart_s, g.job_mtbf_s);
  g.goodput_mfu = mfu * g.goodput;
  g.computed = true;
  return g;
}

std::string describe_assumptions(const FailureAssumptions& a) {
  auto line = [](const char* name, const Assumption& x, const char* unit) {
    std::string out = std::string("  ") + name;
    out.resize(26, ' ');
    if (!x.value) return out + "not given\n";
    out += fmt("%g", *x.value) + (*unit ? std::string(" ") + unit : "") + "  from " + x.origin + "\n";
    if (!x.note.empty()) out += "      note: " + x.note + "\n";
    return out;
  };
  // Each source's reference once, after the figures that cite it.
  std::string refs;
  for (const Assumption* x : {&a.node_mtbf_hours, &a.devices_per_node, &a.checkpoint_write_GBps, &a.restart_minutes}) {
    const std::string id =
        x->origin.substr(x->origin.find('\'') == std::string::npos ? x->origin.size() : x->origin.find('\''));
    if (!x->ref.empty() && refs.find(id + ": ") == std::string::npos) refs += "  source " + id + ": " + x->ref + "\n";
  }
  return "failure and storage assumptions:\n" + line("node MTBF", a.node_mtbf_hours, "h") +
         line("devices per node", a.devices_per_node, "") +
         line("checkpoint write", a.checkpoint_write_GBps, "GB/s per device, all devices at once") +
         line("restart", a.restart_minutes, "min") + refs +
         "  model: job MTBF = node MTBF / nodes; checkpoint = weights + optimizer state of the largest "
         "pipeline stage / DP replicas (fully parallel save); Poisson failures, a failure loses the work "
         "since the last checkpoint and costs a restart (Daly 2006)\n";
}

std::string describe_assumptions_brief(const FailureAssumptions& a) {
  auto item = [](const char* name, const Assumption& x, const char* unit) {
    if (!x.value) return std::string(name) + " not given";
    const auto quote = x.origin.find('\'');
    const std::string source = quote == std::string::npos ? x.origin : x.origin.substr(quote);
    return std::string(name) + " " + fmt("%g", *x.value) + (*unit ? std::string(" ") + unit : "") + " (" + source + ")";
  };
  return "failure assumptions: " + item("node MTBF", a.node_mtbf_hours, "h") + ", " +
         item("devices per node", a.devices_per_node, "") + ", " +
         item("checkpoint write", a.checkpoint_write_GBps, "GB/s per device") + ", " +
         item("restart", a.restart_minutes, "min") + "; --assumptions prints their notes and sources\n";
}

std::string describe_goodput(const GoodputEstimate& g) {
  if (!g.computed) return "goodput      not computed: " + g.why_not + "\n";
  std::string out = "goodput      " + fmt("%.1f%%", 100 * g.goodput) +
                    " of wall time is training; goodput-adjusted MFU " + fmt("%.1f%%", 100 * g.goodput_mfu) + "\n";
  out += "  job MTBF         " + fmt("%.2f h", g.job_mtbf_s / 3600) + " (" + std::to_string(g.nodes) + " nodes)\n";
  out += "  checkpoint       " + fmt("%.3f GB", g.checkpoint_bytes / 1e9) + " per device, written in " +
         fmt("%.1f s", g.checkpoint_s) + "\n";
  out += "  restart          " + fmt("%.0f s", g.restart_s) + "\n";
  out += "  interval         Young " + fmt("%.0f s", g.young_s) + ", Daly " + fmt("%.0f s", g.daly_s) +
         " -> checkpoint every " + std::to_string(g.interval_steps) + " step(s) = " + fmt("%.0f s", g.interval_s) +
         " of compute\n";
  // Of the wall time: checkpoint writes are (T_s / tau) delta / T_w = goodput x delta / tau;
  // the rest of the waste is failures (lost work and restarts). Poisson: T_w / M failures.
  const double writes = g.goodput * g.checkpoint_s / g.interval_s;
  out += "  waste            checkpoint writes " + fmt("%.2f%%", 100 * writes) +
         ", failures (lost work and restarts) " + fmt("%.2f%%", 100 * (1 - g.goodput - writes)) + "; " +
         fmt("%.2f", 86400 / g.job_mtbf_s) + " failures per day\n";
  out += "  goodput          " + fmt("%.2f%%", 100 * g.goodput) + " (Daly's exact expected wall time), " +
         fmt("%.2f%%", 100 * g.goodput_first_order) + " (first order)\n";
  return out;
}

RankBy parse_rank_by(const std::string& text) {
  if (text == "mfu") return RankBy::mfu;
  if (text == "goodput") return RankBy::goodput;
  throw UsageError("--rank-by must be mfu or goodput (got '" + text + "')");
}

const char* to_string(RankBy r) { return r == RankBy::goodput ? "goodput-adjusted MFU" : "MFU"; }

}  // namespace ibt::topo
