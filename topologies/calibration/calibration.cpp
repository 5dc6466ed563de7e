#include "topologies/calibration/calibration.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "core/errors.hpp"
#include "core/stats.hpp"
#include "reports/store/store.hpp"
#include "reports/tables/collectives_table.hpp"
#include "topologies/hardware/collective_model.hpp"

namespace ibt::topo {

using tables::CollectiveRow;

namespace {

// Weighted least squares of t = a + b x with weights w; fix_zero forces a = 0.
void weighted_fit(const std::vector<Sample>& s, const std::vector<double>& w, bool fix_zero, double& a, double& b) {
  double sw = 0, sx = 0, st = 0, sxx = 0, sxt = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    sw += w[i];
    sx += w[i] * s[i].bytes;
    st += w[i] * s[i].time_us;
    sxx += w[i] * s[i].bytes * s[i].bytes;
    sxt += w[i] * s[i].bytes * s[i].time_us;
  }
  if (!fix_zero) {
    const double det = sw * sxx - sx * sx;
    if (det > 0) {
      b = (sw * sxt - sx * st) / det;
      a = (st - b * sx) / sw;
      if (a >= 0) return;
    }
  }
  a = 0;
  b = sxx > 0 ? sxt / sxx : 0;
}

}  // namespace

LinearFit fit_latency_bandwidth(const std::vector<Sample>& samples) {
  std::set<double> sizes;
  for (const auto& s : samples) {
    if (!(s.time_us > 0)) throw UsageError("calibration: a sample has a non-positive time");
    sizes.insert(s.bytes);
  }
  if (sizes.size() < 2) throw UsageError("calibration: needs at least 2 distinct message sizes");
  const size_t n = samples.size();
  std::vector<double> base(n), w(n);
  for (size_t i = 0; i < n; ++i) base[i] = 1.0 / (samples[i].time_us * samples[i].time_us);
  w = base;
  double a = 0, b = 0;
  weighted_fit(samples, w, false, a, b);
  for (int round = 0; round < 5; ++round) {
    std::vector<double> r(n);
    for (size_t i = 0; i < n; ++i)
      r[i] = std::abs((a + b * samples[i].bytes - samples[i].time_us) / samples[i].time_us);
    const double scale = 1.4826 * median(r);
    if (!(scale > 0)) break;
    const double c = 1.345 * scale;
    for (size_t i = 0; i < n; ++i) w[i] = base[i] * (r[i] <= c ? 1.0 : c / r[i]);
    weighted_fit(samples, w, false, a, b);
  }
  if (!(b > 0)) throw UsageError("calibration: the time does not grow with the size (no bandwidth to fit)");
  LinearFit f;
  f.alpha_us = a;
  f.algbw_GBps = 1.0 / (b * 1e3);
  f.points = static_cast<int>(n);
  double ss = 0;
  for (const auto& s : samples) {
    const double r = (a + b * s.bytes - s.time_us) / s.time_us;
    f.rel_residuals.push_back(r);
    ss += r * r;
    f.max_rel_residual = std::max(f.max_rel_residual, std::abs(r));
  }
  f.rms_rel_residual = std::sqrt(ss / n);
  return f;
}

std::vector<MeasuredCollective> read_collective_rows(const std::string& path) {
  std::vector<MeasuredCollective> out;
  bool any_run = false;
  for (const auto& run : store::list_runs(path)) {
    if (std::find(run.tables.begin(), run.tables.end(), CollectiveRow::kTable) == run.tables.end()) continue;
    any_run = true;
    const store::TableData t = store::read_table(path, run.id, std::string(CollectiveRow::kTable));
    const store::RowReader<CollectiveRow> reader(t.columns);
    if (!reader
             .missing(&CollectiveRow::op, &CollectiveRow::scope, &CollectiveRow::group_size, &CollectiveRow::bytes,
                      &CollectiveRow::time_us)
             .empty())
      throw UsageError(path + ": run " + run.id +
                       ": table 'collectives' lacks one of op, scope, group_size, bytes, time_us");
    const bool checked = reader.has(&CollectiveRow::wrong);
    for (const auto& cells : t.rows) {
      const CollectiveRow row = reader.read(cells);
      if (checked && row.wrong > 0) continue;
      MeasuredCollective m;
      m.op = row.op;
      m.scope = row.scope;
      m.group_size = static_cast<int>(row.group_size);
      m.bytes = static_cast<double>(row.bytes);
      m.time_us = row.time_us;
      if (m.bytes <= 0 || !(m.time_us > 0) || m.group_size < 2) continue;
      if (m.op == "ping_pong") continue;  // a round trip, not one transfer: send_recv covers it
      out.push_back(m);
    }
  }
  if (!any_run) throw UsageError(path + ": holds no run with a 'collectives' table");
  return out;
}

CollectiveFit fit_collective(const std::string& op, const std::string& scope, int group_size,
                             const std::vector<Sample>& samples, const std::string& source) {
  const LinearFit f = fit_latency_bandwidth(samples);
  CollectiveFit c;
  c.op = op;
  c.scope = scope;
  c.group_size = group_size;
  c.alpha_us = f.alpha_us;
  c.algbw_GBps = f.algbw_GBps;
  double factor = 1.0;
  if (op == "all_reduce")
    factor = bus_factor(CollOp::all_reduce, group_size);
  else if (op == "all_gather" || op == "reduce_scatter" || op == "all_to_all")
    factor = bus_factor(CollOp::all_gather, group_size);
  c.busbw_GBps = f.algbw_GBps * factor;
  c.points = f.points;
  c.rms_rel_residual = f.rms_rel_residual;
  c.max_rel_residual = f.max_rel_residual;
  c.min_bytes = c.max_bytes = samples.front().bytes;
  for (const auto& s : samples) {
    c.min_bytes = std::min(c.min_bytes, s.bytes);
    c.max_bytes = std::max(c.max_bytes, s.bytes);
  }
  c.source = source;
  return c;
}

CalibrationReport calibrate(const Topology& base, const std::vector<MeasuredCollective>& rows,
                            const std::vector<std::string>& inputs, const std::string& name) {
  CalibrationReport rep;
  rep.topology = base;
  Topology& t = rep.topology;
  t.name = name;
  std::string files;
  for (const auto& f : inputs) files += (files.empty() ? "" : ", ") + f;
  if (rows.empty()) {
    // Training runs only (imported logs): the network is the base's, fits included.
    t.description = "Calibrated from the train runs in " + files + " on top of '" + base.name +
                    "' (its network figures kept): " + base.description;
    return rep;
  }
  const std::string src = "calibration";
  t.sources.erase(std::remove_if(t.sources.begin(), t.sources.end(), [&](const Source& s) { return s.id == src; }),
                  t.sources.end());
  t.sources.push_back({src, SourceKind::measured,
                       "ibt calibrate from the collectives runs in " + files +
                           " (least squares on relative residuals, Huber re-weighted)"});
  t.description =
      "Calibrated from measured collectives (" + files + ") on top of '" + base.name + "': " + base.description;
  t.fits.clear();
  std::map<std::tuple<std::string, std::string, int>, std::vector<Sample>> groups;
  for (const auto& r : rows) groups[{r.op, r.scope, r.group_size}].push_back({r.bytes, r.time_us});
  for (const auto& [key, samples] : groups) {
    const auto& [op, scope, n] = key;
    try {
      t.fits.push_back(fit_collective(op, scope, n, samples, src));
    } catch (const UsageError& e) {
      rep.skipped.push_back(op + " " + scope + " n=" + std::to_string(n) + ": " + e.what());
    }
  }
  // The measured scale-up domain holds at least the largest intra group measured (a
  // 4-rank run on one node calibrates a 4-device domain even on a 2-device base), so
  // groups of that size are priced from the intra fits, not refused as spanning.
  int largest_intra = 0;
  for (const auto& f : t.fits)
    if (f.scope == "intra") largest_intra = std::max(largest_intra, f.group_size);
  if (largest_intra > t.domain_size())
    t.scale_up.devices_per_domain = {static_cast<double>(largest_intra), "devices", src,
                                     "largest group measured with scope intra"};
  return rep;
}

void measure_local_compute(Topology& t, double sgemm_gflops, const std::string& sgemm_rule) {
  using clock = std::chrono::steady_clock;
  const double gemm_tflops = sgemm_gflops * 1e-3;
  const size_t words = 64u << 20;
  std::vector<float> x(words, 1.0f), y(words, 0.0f);
  double copy = 1e30;
  for (int rep = 0; rep < 6; ++rep) {
    const auto t0 = clock::now();
    std::memcpy(y.data(), x.data(), words * sizeof(float));
    const double dt = std::chrono::duration<double>(clock::now() - t0).count();
    if (rep > 0) copy = std::min(copy, dt);
  }
  const double copy_GBps = 2.0 * words * sizeof(float) / copy / 1e9;
  const std::string id = "measured-local-compute";
  t.sources.erase(std::remove_if(t.sources.begin(), t.sources.end(), [&](const Source& s) { return s.id == id; }),
                  t.sources.end());
  t.sources.push_back(
      {id, SourceKind::measured,
       "ibt calibrate --measure-local: OpenBLAS " + sgemm_rule + ", 1 thread = " + std::to_string(sgemm_gflops) +
           " GFLOP/s; memcpy 256 MiB best of 5 = " + std::to_string(copy_GBps) + " GB/s (read + write)"});
  t.device.fp32 = {gemm_tflops, "TFLOP/s", id, "measured sgemm rate of one core"};
  t.device.memory_bandwidth_GBps = {copy_GBps, "GB/s", id, "measured memcpy, read + write"};
}

}  // namespace ibt::topo
