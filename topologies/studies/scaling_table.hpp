#pragma once
// The "scaling" table of an `ibt scaling` run, one row per (source, system, device count)
// point (core/row_schema.hpp); the report and `ibt report --compare` read it. Fractions
// are stored as fractions, times in seconds; every breakdown column is of the stage
// named by breakdown_stage. A point where no split fits has NaN figures, never 0.
#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "core/row_schema.hpp"

namespace ibt::topo {

struct ScalingRow {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  std::string source, topology, system, model, scaling;
  std::int64_t devices = 0, global_batch = 0;
  std::string split;
  std::int64_t dp = 0, tp = 0, pp = 0, ep = 0, feasible = 0;
  std::string reason;
  std::int64_t candidates = 0;
  double step_s = kNone, mfu = kNone, hfu = kNone, tokens_per_s = kNone, tokens_per_s_per_device = kNone;
  std::int64_t breakdown_stage = -1;
  double compute_s = kNone, exposed_tp_s = kNone, exposed_dp_s = kNone, exposed_expert_dp_s = kNone,
         exposed_pp_s = kNone, exposed_ep_s = kNone, bubble_s = kNone, other_s = kNone, exposed_cp_s = kNone,
         memory_bytes = kNone;
  std::string baseline;
  double speedup_vs_baseline = kNone, token_budget = kNone, time_to_budget_s = kNone, device_power_W = kNone,
         energy_J_per_token = kNone;
  double speedup_uncertainty = kNone;
  std::string own_split_topology;
  double own_split_mfu = kNone, own_split_diff = kNone;

  static constexpr std::string_view kTable = "scaling";
  static constexpr std::array<store::Field<ScalingRow>, 41> kFields{{
      {"source", &ScalingRow::source, "", "projected, or measured FILE:RUN (an ibt train or sweep run)"},
      {"topology", &ScalingRow::topology, "", "the topology's name (catalog name or calibrated file's)"},
      {"system", &ScalingRow::system, "", "its device, e.g. H100 SXM5 80GB"},
      {"model", &ScalingRow::model, "", "the model"},
      {"scaling", &ScalingRow::scaling, "", "how the global batch follows the device count"},
      {"devices", &ScalingRow::devices, "devices", "devices of the job"},
      {"global_batch", &ScalingRow::global_batch, "sequences", "sequences per step"},
      {"split", &ScalingRow::split, "", "the best split, or (none fits)"},
      {"dp", &ScalingRow::dp, "ranks", "its data-parallel degree (0 when none fits)"},
      {"tp", &ScalingRow::tp, "ranks", "its tensor-parallel degree"},
      {"pp", &ScalingRow::pp, "stages", "its pipeline stages"},
      {"ep", &ScalingRow::ep, "ranks", "its expert-parallel degree"},
      {"feasible", &ScalingRow::feasible, "", "1 when a split fits"},
      {"reason", &ScalingRow::reason, "", "why none fits (255 characters at most)"},
      {"candidates", &ScalingRow::candidates, "splits", "splits projected"},
      {"step_s", &ScalingRow::step_s, "s", "the step time"},
      {"mfu", &ScalingRow::mfu, "fraction", "model FLOPs utilisation"},
      {"hfu", &ScalingRow::hfu, "fraction", "hardware FLOPs utilisation"},
      {"tokens_per_s", &ScalingRow::tokens_per_s, "tokens/s", "tokens of the global batch over the step time"},
      {"tokens_per_s_per_device", &ScalingRow::tokens_per_s_per_device, "tokens/s/device", "the same per device"},
      {"breakdown_stage", &ScalingRow::breakdown_stage, "stage",
       "the pipeline stage the breakdown is of (-1: means over ranks)"},
      {"compute_s", &ScalingRow::compute_s, "s", "compute"},
      {"exposed_tp_s", &ScalingRow::exposed_tp_s, "s", "tensor-parallel communication not hidden"},
      {"exposed_dp_s", &ScalingRow::exposed_dp_s, "s", "data-parallel communication not hidden"},
      {"exposed_expert_dp_s", &ScalingRow::exposed_expert_dp_s, "s", "expert data-parallel communication not hidden"},
      {"exposed_pp_s", &ScalingRow::exposed_pp_s, "s", "pipeline sends and receives not hidden"},
      {"exposed_ep_s", &ScalingRow::exposed_ep_s, "s", "expert-parallel all-to-alls not hidden"},
      {"bubble_s", &ScalingRow::bubble_s, "s", "the pipeline bubble"},
      {"other_s", &ScalingRow::other_s, "s", "measured runs: the time no component claimed (projections: NaN)"},
      {"exposed_cp_s", &ScalingRow::exposed_cp_s, "s", "context-parallel communication not hidden"},
      {"memory_bytes", &ScalingRow::memory_bytes, "B", "peak memory per device"},
      {"baseline", &ScalingRow::baseline, "", "the topology the speed-ups are against"},
      {"speedup_vs_baseline", &ScalingRow::speedup_vs_baseline, "x",
       "tokens/s per device over the baseline's at the same device count"},
      {"token_budget", &ScalingRow::token_budget, "tokens", "the training budget the time is of"},
      {"time_to_budget_s", &ScalingRow::time_to_budget_s, "s", "token budget / the whole job's tokens/s"},
      {"device_power_W", &ScalingRow::device_power_W, "W", "board power per device (NaN: unknown)"},
      {"energy_J_per_token", &ScalingRow::energy_J_per_token, "J/token",
       "board power / tokens/s per device: devices only (no hosts, network, cooling)"},
      {"speedup_uncertainty", &ScalingRow::speedup_uncertainty, "x",
       "half-width of the speed-up's band: speed-up x hypot of both projections' relative MFU uncertainty"},
      {"own_split_topology", &ScalingRow::own_split_topology, "",
       "measured rows: the topology their own split was projected on (projected rows: empty)"},
      {"own_split_mfu", &ScalingRow::own_split_mfu, "fraction",
       "measured rows: MFU of the projection of the run's own split (not the best split), against the run's peak"},
      {"own_split_diff", &ScalingRow::own_split_diff, "fraction",
       "measured rows: measured MFU / own_split_mfu - 1 (= projected step / measured step - 1)"},
  }};
};

}  // namespace ibt::topo
