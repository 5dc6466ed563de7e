#pragma once
// Deterministic parameter initialisation. Every weight is defined as a FULL tensor by
// (seed, name): element i is a pure function of (seed, name, i), so a shard that
// slices the full tensor holds exactly the values the unsharded model has, whatever
// the split.
#include <cstdint>
#include <string>
#include <vector>

#include "models/engine/tensor.hpp"
#include "models/plan/model_config.hpp"

namespace ibt::models {

// Counter-based generator (SplitMix64 finaliser): value(key, i) is stateless.
uint64_t mix64(uint64_t x);
uint64_t hash_name(const std::string& name);             // FNV-1a, stable across platforms
double uniform01(uint64_t key, uint64_t counter);        // in (0, 1)
double standard_normal(uint64_t key, uint64_t counter);  // Box-Muller on two uniforms

// N(0, std^2) entries, element i from (seed, name, i).
Tensor init_normal(uint64_t seed, const std::string& name, std::vector<int64_t> shape, double std);
Tensor init_constant(std::vector<int64_t> shape, float value);

// GPT-2's scheme: 0.02 for every weight, 0.02 / sqrt(2 * layers) for the projections
// that write into the residual stream (attention output, MLP down), so the residual's
// variance does not grow with depth.
double init_std(const ModelConfig& m);
double residual_init_std(const ModelConfig& m);

}  // namespace ibt::models
