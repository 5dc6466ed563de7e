#pragma once
// `ibt scaling`: MFU and tokens/s per device against device count for one model on one
// or several topologies (hardware generations), the best split at each point, as in the
// scaling tables of Narayanan et al. 2021 (PTD-P, Table 1).
//
// Two ways to grow a job:
// - strong scaling: the global batch is fixed; more devices split the same work, so the
//   microbatches per data-parallel replica shrink and the bubble and communication grow;
// - weak scaling: the batch per device is fixed (global batch = devices x sequences per
//   device), so the work per device stays the same and only communication grows.
// Each point is every valid split (default_search: tp <= domain size, 1f1b and
// interleaved, recompute, ZeRO-1, SP) projected by the sim executor; the best by step
// time (equivalently MFU: the model FLOPs per step are the split's invariant) wins.
#include <cmath>
#include <string>
#include <vector>

#include "models/plan/model_config.hpp"
#include "topologies/calibration/train_runs.hpp"
#include "topologies/hardware/topology.hpp"
#include "topologies/projection/projection.hpp"

namespace ibt::topo {

enum class ScalingMode { strong, weak };
const char* to_string(ScalingMode m);
// "strong" or "weak"; UsageError naming the text otherwise.
ScalingMode parse_scaling_mode(const std::string& text);

struct ScalingBatch {
  ScalingMode mode = ScalingMode::strong;
  long long global_batch = 0;       // strong: sequences per step
  double sequences_per_device = 0;  // weak: global batch = devices x this
  // The global batch at `devices` (sequences); UsageError when weak scaling gives no
  // whole number of sequences.
  long long at(int devices) const;
};

struct ScalingPoint {
  std::string source = "projected";  // or "measured FILE:RUN" (an `ibt train`/`sweep` run)
  std::string topology;              // the topology's name (catalog name or calibrated file's)
  std::string system;                // its device, e.g. "H100 SXM5 80GB"
  int devices = 0;
  long long global_batch = 0;  // sequences
  int candidates = 0;          // splits projected
  Projection best;             // best.feasible == false: no split fits (best.reason says why)
  // Measured runs cannot split pipeline communication from the bubble: their
  // exposed_s[pp] holds both, exposed_s[bubble] is NaN, and other_s the time no
  // component claimed. Projections: other_s is NaN.
  double other_s = std::nan("");
  // Measured points only: the run itself, and the projection of its own split (not the
  // best split) on a topology, so that a measured point meets a like-for-like figure
  // (price_own_split). NaN, with own_split_note saying why, until priced or when the
  // split does not project.
  MeasuredTrainRun run;
  std::string own_split_topology, own_split_note;
  double own_split_mfu = std::nan("");
  double tokens_per_s_per_device() const;
};

// Generations compared by speed, not MFU: MFU is a share of each system's own peak, so a
// newer generation can train much faster at a lower MFU. For one point:
//   speed-up      = its tokens/s per device / the baseline system's at the same device
//                   count (NaN when the baseline has no feasible point there);
//   time to budget = token budget / the whole job's tokens/s (seconds);
//   energy        = device board power (W) / tokens/s per device = J per token, devices
//                   only (no hosts, network or cooling); NaN when the power is unknown.
//   speed-up band = speed-up x sqrt(r_point^2 + r_baseline^2), r each projection's
//                   relative MFU uncertainty (its validation band's median out-of-family
//                   |MFU error|, uncertainty.hpp): the two errors taken as independent,
//                   the cautious choice (errors shared by both systems -- the same model
//                   and software -- would cancel in the ratio). NaN without both bands
//                   or for a measured point (its speed is measured, not projected).
struct GenerationSpeed {
  double speedup = std::nan("");
  double speedup_uncertainty = std::nan("");  // x, the band's half-width
  double time_to_budget_s = std::nan("");
  double joules_per_token = std::nan("");
};
GenerationSpeed generation_speed(const ScalingPoint& point, const ScalingPoint* baseline, double power_W,
                                 double token_budget);

// The best split of `model` on `topology` for every device count, in the given order.
std::vector<ScalingPoint> project_scaling(const models::ModelConfig& model, const Topology& topology,
                                          const std::vector<int>& devices, const ScalingBatch& batch,
                                          const ProjectionOptions& options);

// Measured points from the `ibt train` / `ibt sweep` runs of `model` in an HDF5
// store (train_runs.hpp: the fastest timed step of each run): one point per world size,
// the run with the best MFU there. MFU = model_flops_per_step / (step time x ranks x
// the run's peak_gflops_per_rank), the run's own convention. The system is the GPU's
// name for --executor cuda runs, else "CPU (hosts)".
std::vector<ScalingPoint> measured_scaling(const std::string& path, const models::ModelConfig& model);

// Prices a measured point's own split (model, split, microbatches, schedule) on `topology`
// as `ibt project-compare` does (agreement.hpp: the cpu engine's way for `ibt train` runs,
// the framework's for imported logs), and sets own_split_mfu to the MFU that projected step
// gives against the run's own peak: measured MFU / own_split_mfu - 1 is then exactly
// projected step / measured step - 1, the like-for-like difference. A split that does not
// project there (its groups span domains the topology cannot price, it does not fit) leaves
// NaN and the reason in own_split_note.
void price_own_split(ScalingPoint& measured, const models::ModelConfig& model, const Topology& topology);

}  // namespace ibt::topo
