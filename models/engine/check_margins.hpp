#pragma once
// The margins of a --check run: the largest relative difference from the serial
// reference seen over its steps, per quantity. `ibt train --check` prints and records
// them (check_margins) and the conformance driver prints them, so the tolerances of
// check_tolerance.hpp can be set from what correct splits show
// (scripts/check/check_margins.sh).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "models/engine/copy_check.hpp"
#include "models/engine/reference_trainer.hpp"

namespace ibt::models {

struct CheckMargins {
  double weights = 0, gradients = 0;  // element-wise, per copy (copy_check.hpp)
  double loss = 0, grad_norm = 0, param_norm = 0, aux_loss = 0;

  static double relative(double got, double want) {
    const double d = std::abs(got - want);
    return want != 0 ? d / std::abs(want) : d;
  }
  void add(const CopyCheck& c) {
    weights = std::max(weights, c.weights);
    gradients = std::max(gradients, c.gradients);
  }
  void add(const CheckMargins& m) {
    weights = std::max(weights, m.weights);
    gradients = std::max(gradients, m.gradients);
    loss = std::max(loss, m.loss);
    grad_norm = std::max(grad_norm, m.grad_norm);
    param_norm = std::max(param_norm, m.param_norm);
    aux_loss = std::max(aux_loss, m.aux_loss);
  }
  void add(const StepStats& got, const StepStats& ref) {
    loss = std::max(loss, relative(got.loss, ref.loss));
    grad_norm = std::max(grad_norm, relative(got.grad_norm, ref.grad_norm));
    param_norm = std::max(param_norm, relative(got.param_norm, ref.param_norm));
    aux_loss = std::max(aux_loss, relative(got.aux_loss, ref.aux_loss));
  }
  // "weights 3.1e-07, gradients 2.4e-06, loss 1.2e-07, grad_norm 4e-07, param_norm 1e-08, aux_loss 0"
  std::string text() const {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "weights %.2g, gradients %.2g, loss %.2g, grad_norm %.2g, param_norm %.2g, aux_loss %.2g", weights,
                  gradients, loss, grad_norm, param_norm, aux_loss);
    return buf;
  }
};

}  // namespace ibt::models
