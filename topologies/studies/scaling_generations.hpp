#pragma once
// ibt scaling across hardware generations: each point's speed against a baseline system
// (tokens/s per device, speed-up, time to a token budget, energy per token), and the
// closing "Speed by generation" table, systems slowest first, MFU beside.
#include <map>
#include <string>
#include <vector>

#include "topologies/studies/scaling.hpp"

namespace ibt::suites {

struct GenerationContext {
  std::string baseline;                   // topology name the speed-ups are against
  double token_budget = 1e12;             // tokens, for the time to train
  std::map<std::string, double> power_W;  // topology name -> board power per device (absent: unknown)
};

// The point's speed figures; its baseline is the baseline topology's projected point at the
// same device count among `all` (the point itself when it is one).
topo::GenerationSpeed speed_of(const topo::ScalingPoint& point, const std::vector<topo::ScalingPoint>& all,
                               const GenerationContext& ctx);

// Board power of `point`'s device, NaN when the catalog does not give it.
double power_of(const topo::ScalingPoint& point, const GenerationContext& ctx);

// The closing table: one row per system and device count, systems ordered by their median
// tokens/s per device (slowest first), at most 120 columns wide.
void print_generation_speed(const std::vector<topo::ScalingPoint>& all, const GenerationContext& ctx);

}  // namespace ibt::suites
