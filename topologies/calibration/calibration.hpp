#pragma once
// Calibration: fitted latency-bandwidth models of collectives from measured runs, written
// into a topology file the sim executor uses exactly like a catalog one.
//
// Model per (op, scope, group size): time_us = alpha_us + bytes / (algbw_GBps * 1e3).
// Fitted by least squares on RELATIVE residuals (each point weighted by 1/time^2), so a
// 8-byte point and a 64-MiB point count alike, then re-weighted (Huber, 5 rounds, scale
// from the median absolute residual) so a few noisy points -- typically small sizes on
// an oversubscribed machine -- cannot drag the fit. alpha is constrained to >= 0 (a
// negative intercept is refitted through the origin). Residuals (relative) are reported
// per fit: RMS and maximum.
#include <string>
#include <vector>

#include "topologies/hardware/topology.hpp"

namespace ibt::topo {

struct Sample {
  double bytes = 0;
  double time_us = 0;
};

struct LinearFit {
  double alpha_us = 0;
  double algbw_GBps = 0;
  int points = 0;
  double rms_rel_residual = 0;
  double max_rel_residual = 0;
  std::vector<double> rel_residuals;  // per sample, (model - measured) / measured
};

// Throws UsageError with fewer than 2 distinct sizes or when no positive bandwidth fits.
LinearFit fit_latency_bandwidth(const std::vector<Sample>& samples);

// Fits one collective (op, scope, group size) from its samples: the latency-bandwidth
// fit, bus bandwidth by nccl-tests' factor for the op, residuals, the byte range covered
// and `source`. Throws like fit_latency_bandwidth.
CollectiveFit fit_collective(const std::string& op, const std::string& scope, int group_size,
                             const std::vector<Sample>& samples, const std::string& source);

// One measured row of a "collectives" table (reports/tables/collectives_table.hpp).
struct MeasuredCollective {
  std::string op, scope;
  int group_size = 0;
  double bytes = 0;
  double time_us = 0;
};

// Every usable row of every collectives run in an HDF5 file (rows with wrong results,
// zero bytes or non-positive times are skipped). Throws UsageError naming the file when
// it is not an ibt store or holds no collectives run.
std::vector<MeasuredCollective> read_collective_rows(const std::string& path);

struct CalibrationReport {
  Topology topology;                 // base + fits (+ measured compute figures)
  std::vector<std::string> skipped;  // groups that could not be fitted, and why
};

// Fits every (op, scope, group size) with >= 2 distinct sizes; send_recv/ping_pong rows
// are fitted as send_recv. `inputs` names the files for the calibration source. Without
// rows the base is only renamed (its network figures and fits kept), for a calibration
// from training runs alone.
CalibrationReport calibrate(const Topology& base, const std::vector<MeasuredCollective>& rows,
                            const std::vector<std::string>& inputs, const std::string& name);

// Sets device.fp32 to `sgemm_gflops`, this machine's one-thread fp32 GEMM rate measured
// by the caller with the one CPU peak rule (models/engine/sgemm_peak.hpp, which this
// library does not link; `sgemm_rule` says the rule in the source), measures the memory
// copy bandwidth (256 MiB memcpy, best of 5, read + write counted) into
// device.memory_bandwidth_GBps, and records both under a measured source.
void measure_local_compute(Topology& t, double sgemm_gflops, const std::string& sgemm_rule);

}  // namespace ibt::topo
