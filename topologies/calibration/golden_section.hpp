#pragma once
// Golden-section search for the minimum of a unimodal function on [lo, hi]: at most
// max_steps narrowings, stopping early once the bracket is no wider than tolerance.
// Returns the bracket's midpoint. Used by the fits that have one free parameter at a
// time (compute efficiency from train runs, the vTrain efficiency model).
#include <cmath>
#include <functional>

namespace ibt::topo {

inline double golden_section_min(const std::function<double(double)>& f, double lo, double hi, int max_steps,
                                 double tolerance = 0) {
  const double g = (std::sqrt(5.0) - 1) / 2;
  double a = lo, b = hi, c = b - g * (b - a), d = a + g * (b - a);
  double fc = f(c), fd = f(d);
  for (int i = 0; i < max_steps && b - a > tolerance; ++i) {
    if (fc < fd) {
      b = d;
      d = c;
      fd = fc;
      c = b - g * (b - a);
      fc = f(c);
    } else {
      a = c;
      c = d;
      fc = fd;
      d = a + g * (b - a);
      fd = f(d);
    }
  }
  return (a + b) / 2;
}

}  // namespace ibt::topo
