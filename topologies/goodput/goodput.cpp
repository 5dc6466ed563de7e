#include "topologies/goodput/goodput.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/errors.hpp"

namespace ibt::topo {

namespace {

void require(bool ok, const char* what) {
  if (!ok) throw UsageError(std::string("goodput: ") + what);
}

void check_times(double delta, double mtbf) {
  require(delta >= 0 && std::isfinite(delta), "checkpoint time must be >= 0");
  require(mtbf > 0 && std::isfinite(mtbf), "MTBF must be > 0");
}

}  // namespace

double young_interval(double delta, double mtbf) {
  check_times(delta, mtbf);
  return std::sqrt(2 * delta * mtbf);
}

double daly_interval(double delta, double mtbf) {
  check_times(delta, mtbf);
  if (delta >= 2 * mtbf) return mtbf;
  const double r = delta / (2 * mtbf);
  return std::sqrt(2 * delta * mtbf) * (1 + std::sqrt(r) / 3 + r / 9) - delta;
}

double lambert_w0(double x) {
  const double branch = -std::exp(-1.0);
  require(x >= branch * (1 + 1e-12) && x <= 0, "lambert_w0 defined here on [-1/e, 0] only");
  if (x <= branch) return -1;  // the branch point, up to rounding
  if (x == 0) return 0;
  // Start: the branch-point series near -1/e, the identity w ~ x near 0.
  const double p = std::sqrt(std::max(0.0, 2 * (std::exp(1.0) * x + 1)));
  double w = x < -0.25 ? -1 + p - p * p / 3 : x;
  for (int i = 0; i < 64; ++i) {
    const double e = std::exp(w);
    const double f = w * e - x;
    if (w == -1) break;  // at the branch point exactly: f'(w) = 0, w is the answer
    const double step = f / (e * (w + 1) - (w + 2) * f / (2 * w + 2));
    w -= step;
    if (std::fabs(step) <= 1e-15 * (1 + std::fabs(w))) break;
  }
  return w;
}

double optimal_interval_exact(double delta, double mtbf) {
  check_times(delta, mtbf);
  return mtbf * (1 + lambert_w0(-std::exp(-(1 + delta / mtbf))));
}

double expected_wall_time(double solve, double interval, double delta, double restart, double mtbf) {
  check_times(delta, mtbf);
  require(solve >= 0, "compute time must be >= 0");
  require(interval > 0, "checkpoint interval must be > 0");
  require(restart >= 0, "restart time must be >= 0");
  // expm1 keeps precision when (tau + delta) << M, the usual case.
  return mtbf * std::exp(restart / mtbf) * std::expm1((interval + delta) / mtbf) * solve / interval;
}

double goodput_exact(double interval, double delta, double restart, double mtbf) {
  return 1.0 / expected_wall_time(1.0, interval, delta, restart, mtbf);
}

double goodput_first_order(double interval, double delta, double restart, double mtbf) {
  check_times(delta, mtbf);
  require(interval > 0, "checkpoint interval must be > 0");
  require(restart >= 0, "restart time must be >= 0");
  const double available = 1 - (interval + delta) / (2 * mtbf) - restart / mtbf;
  return available <= 0 ? 0.0 : available / (1 + delta / interval);
}

double expected_lost_time(double solve, double interval, double delta, double restart, double mtbf) {
  return expected_wall_time(solve, interval, delta, restart, mtbf) - solve - solve / interval * delta;
}

}  // namespace ibt::topo
