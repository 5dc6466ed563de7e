#include "topologies/goodput/failure_sim.hpp"

#include <cmath>
#include <random>

#include "core/errors.hpp"

namespace ibt::topo {

namespace {

// One run; returns its wall time and counts its failures.
double one_run(const FailureSimConfig& c, long segments, std::mt19937_64& rng, long& failures) {
  std::exponential_distribution<double> gap(1.0 / c.mtbf);
  double now = 0;
  double next_failure = gap(rng);
  long done = 0;  // segments completed and checkpointed
  while (done < segments) {
    const double segment_end = now + c.interval + c.checkpoint;
    if (segment_end <= next_failure) {
      now = segment_end;
      ++done;
      continue;
    }
    // Failed in the segment: its work is lost. Restart until one restart completes
    // before the next failure.
    now = next_failure;
    ++failures;
    next_failure = now + gap(rng);
    while (now + c.restart > next_failure) {
      now = next_failure;
      ++failures;
      next_failure = now + gap(rng);
    }
    now += c.restart;
  }
  return now;
}

}  // namespace

FailureSimResult simulate_failures(const FailureSimConfig& c) {
  if (!(c.interval > 0) || !(c.mtbf > 0) || c.checkpoint < 0 || c.restart < 0 || c.solve <= 0 || c.trials < 2)
    throw UsageError(
        "failure simulation: needs interval > 0, MTBF > 0, checkpoint and restart >= 0, "
        "compute time > 0 and at least 2 trials");
  const double ratio = c.solve / c.interval;
  const long segments = std::lround(ratio);
  if (segments < 1 || std::fabs(ratio - segments) > 1e-9 * ratio)
    throw UsageError("failure simulation: compute time must be a whole number of intervals");
  std::mt19937_64 rng(c.seed);
  const double useful = c.solve + segments * c.checkpoint;
  // Welford's running mean and variance (no cancellation for long runs).
  double mean = 0, m2 = 0;
  long failures = 0;
  for (int t = 0; t < c.trials; ++t) {
    const double w = one_run(c, segments, rng, failures);
    const double d = w - mean;
    mean += d / (t + 1);
    m2 += d * (w - mean);
  }
  FailureSimResult r;
  r.trials = c.trials;
  const double n = c.trials;
  r.mean_wall = mean;
  r.stderr_wall = std::sqrt(m2 / (n - 1) / n);
  // Lost time differs from wall time by a constant: same standard error.
  r.mean_lost = r.mean_wall - useful;
  r.stderr_lost = r.stderr_wall;
  r.mean_failures = failures / n;
  r.goodput = c.solve / r.mean_wall;
  return r;
}

}  // namespace ibt::topo
