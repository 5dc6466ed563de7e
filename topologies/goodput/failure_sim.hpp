#pragma once
// A seeded Monte-Carlo of a checkpointed run under Poisson failures, to check the closed
// forms of goodput.hpp by an independent route: failures are drawn once as a Poisson
// process on the wall clock (exponential gaps, mean M), and the run walks through them
// -- compute tau, write a checkpoint delta, repeat; a failure anywhere loses the work
// since the last completed checkpoint and starts a restart R (which a later failure can
// interrupt in turn).
#include <cstdint>

namespace ibt::topo {

struct FailureSimConfig {
  double solve = 0;       // useful compute of the run, s (a whole number of intervals)
  double interval = 0;    // tau, s
  double checkpoint = 0;  // delta, s
  double restart = 0;     // R, s
  double mtbf = 0;        // M, s
  int trials = 1000;
  std::uint64_t seed = 1;
};

struct FailureSimResult {
  int trials = 0;
  double mean_wall = 0, stderr_wall = 0;  // s; standard error of the mean
  double mean_lost = 0, stderr_lost = 0;  // wall - solve - checkpoints written, s
  double mean_failures = 0;
  double goodput = 0;  // solve / mean wall
};

FailureSimResult simulate_failures(const FailureSimConfig& c);

}  // namespace ibt::topo
