#pragma once
// Order statistics of per-iteration times.
#include <vector>

namespace ibt {

// The q-quantile (0..1) by linear interpolation between order statistics (numpy's
// default), so p50 of an even count is the mean of the two middle values.
double quantile(std::vector<double> values, double q);
// The middle value, or the mean of the two middle values of an even count (0 when empty).
double median(std::vector<double> values);
double mean(const std::vector<double>& values);

}  // namespace ibt
