#pragma once
// The domain layout a calibration was measured on, and what follows from it.
//
// A collectives run records how many ranks it had (`world_size`) and into how many
// scale-up domains it split them (`domains`, `domain_method`). Its fits only mean
// something on that layout: a 2-host x 1-rank run measures "inter" groups over the
// network between hosts, and a topology that kept the base's 2-device domain would
// price the same group as intra-domain. So the calibrated topology takes its domain
// size from the measurement, and when inter-scope fits exist it gets a scale_out
// fabric whose bandwidth and latency come from those fits (source: the calibration),
// so that groups spanning domains -- which have no fit of their own -- are priced from
// the measured network, never from the base's figures or as free.
#include <optional>
#include <string>
#include <vector>

#include "topologies/hardware/topology.hpp"

namespace ibt::topo {

struct MeasuredLayout {
  std::string file;
  int world_size = 0;
  int domains = 0;
  std::string method;  // how the run found its domains (e.g. shared-memory split)
  int domain_size() const { return domains > 0 ? world_size / domains : 0; }
};

// The layout of the collectives runs in `path`; nullopt when they do not record one
// (files from before the attributes existed). Throws UsageError naming the file when
// its runs disagree or the ranks do not split evenly into the domains.
std::optional<MeasuredLayout> read_collective_layout(const std::string& path);

// The one layout all inputs share; nullopt when none recorded one. Throws UsageError
// naming the files when two inputs were measured on different layouts.
std::optional<MeasuredLayout> agreed_layout(const std::vector<MeasuredLayout>& layouts);

// Sets the scale-up domain size from the layout and, when `t.fits` holds inter-scope
// fits, a scale_out fabric derived from them (send_recv preferred: its bandwidth and
// latency are one link's; else the all-reduce, all-gather or reduce-scatter fit with
// its busbw and per-step latency). model.scale_out_efficiency becomes 1: the fitted
// bandwidth already is an achieved one. `source` is the calibration's source id.
// Returns a one-line description of what it set.
std::string apply_measured_layout(Topology& t, const MeasuredLayout& layout, const std::string& source);

}  // namespace ibt::topo
