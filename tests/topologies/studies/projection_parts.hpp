#pragma once
// A feasible projection made by hand for the studies' tests: `compute` seconds of compute
// and `exposed` seconds of one exposed part `e`, at `pp` stages (the deciding-term tests of
// the atlas and of crossover's verdict sentence build their two bests from it).
#include "topologies/projection/projection.hpp"

namespace ibt::topo::testing {

inline Projection projection_of_parts(int pp, double compute, Exposure e, double exposed) {
  Projection p;
  p.feasible = true;
  p.split.pp = pp;
  p.compute_s = compute;
  p.exposed_s[static_cast<int>(e)] = exposed;
  p.step_s = compute + exposed;
  return p;
}

}  // namespace ibt::topo::testing
