#pragma once
// Acceptance references (ibt accept --reference FILE): what a system must measure, in the
// style of ReFrame's performance references. A metric names what to measure and a target
// with relative tolerances:
//
//   {"system": "local-cpu", "description": "...", "derivation": "how the targets were chosen",
//    "job": {"ranks": 2, "domain_size": 0, "iters": 20, "warmup_iters": 5},
//    "metrics": [
//      {"name": "allreduce-world-8B-time", "op": "all_reduce", "scope": "world", "dtype": "float32",
//       "bytes": 8, "quantity": "time_us", "target": 5, "lower": null, "upper": 9, "unit": "us"},
//      {"op": "all_reduce", "scope": "intra", "dtype": "float32", "bytes": [262144, 4194304],
//       "over_sizes": "min", "quantity": "busbw_GBps", "target": 4, "lower": -0.75, "upper": null,
//       "unit": "GB/s", "note": "why this target"},
//      {"op": "p2p", "bytes": 1048576, "quantity": "bandwidth_min_GBps", ...}]}
//
// As in ReFrame, `lower` and `upper` are fractions of the target: the bounds are
// target x (1 + lower) and target x (1 + upper); null leaves that side open; lower is in
// [-1, 0] and upper >= 0. A size range ("bytes": [lo, hi]) covers the powers of two from
// lo to hi; the judged value combines them by "over_sizes" (min, max or mean; default:
// min for bandwidth, max for time, the conservative choice).
//
// Collective quantities: time_us, p50_us, busbw_GBps, algbw_GBps (the collectives table's
// columns, out-of-place). p2p quantities: bandwidth_min_GBps, bandwidth_median_GBps,
// latency_max_us, latency_median_us over all pairs of the p2p matrix; a pair's bandwidth is
// bytes / its mean half round trip, its latency the median (p50) half round trip, so one
// preempted iteration on a shared machine does not decide a latency verdict.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/input_file.hpp"
#include "core/json_reader.hpp"

namespace ibt::suites {

struct AcceptMetric {
  std::string name;
  std::string op;                            // a collective, or "p2p"
  std::string scope;                         // intra, inter, world ("" for p2p)
  std::string dtype;                         // "" for p2p
  std::size_t min_bytes = 0, max_bytes = 0;  // equal for one size
  std::string quantity, unit, over_sizes;
  double target = 0;
  std::optional<double> lower, upper;  // fractions of target

  bool is_p2p() const { return op == "p2p"; }
  double lower_bound() const { return lower ? target * (1 + *lower) : -std::numeric_limits<double>::infinity(); }
  double upper_bound() const { return upper ? target * (1 + *upper) : std::numeric_limits<double>::infinity(); }
};

struct AcceptJob {
  int ranks = 0;  // 0: any
  int domain_size = 0;
  int iters = 20;
  int warmup_iters = 5;
};

struct AcceptReference {
  std::string path, text, system, description, derivation;
  AcceptJob job;
  std::vector<AcceptMetric> metrics;
};

struct Judgement {
  double measured = std::nan("");
  bool measured_ok = false;  // false: nothing was measured for this metric
  double margin = 0;         // (measured - target) / target in the good direction: + = better than target
  bool pass = false;
};

inline std::string unit_of_quantity(const std::string& q) {
  if (q == "time_us" || q == "p50_us" || q == "latency_max_us" || q == "latency_median_us") return "us";
  if (q == "busbw_GBps" || q == "algbw_GBps" || q == "bandwidth_min_GBps" || q == "bandwidth_median_GBps")
    return "GB/s";
  return "";
}

inline bool higher_is_better(const std::string& quantity) { return unit_of_quantity(quantity) == "GB/s"; }

namespace detail {

inline std::optional<double> optional_number(const nlohmann::json& m, const char* key, const std::string& where) {
  if (!m.contains(key) || m[key].is_null()) return std::nullopt;
  if (!m[key].is_number()) throw UsageError(where + ": '" + key + "' must be a number or null");
  return m[key].get<double>();
}

inline std::string string_field(const nlohmann::json& m, const char* key, const std::string& where,
                                bool required = true) {
  if (!m.contains(key)) {
    if (required) throw UsageError(where + ": missing '" + key + "'");
    return "";
  }
  if (!m[key].is_string()) throw UsageError(where + ": '" + key + "' must be a string");
  return m[key].get<std::string>();
}

inline std::size_t size_value(const nlohmann::json& v, const std::string& where) {
  if (!v.is_number_integer() || v.get<long long>() <= 0)
    throw UsageError(where + ": 'bytes' must be positive integers");
  return v.get<std::size_t>();
}

}  // namespace detail

inline AcceptMetric parse_metric(const nlohmann::json& m, const std::string& where) {
  using namespace detail;
  if (!m.is_object()) throw UsageError(where + ": a metric must be an object");
  // A misspelt key ("uper") would silently leave a bound open: refuse unknown keys.
  static const std::vector<std::string> known = {"name", "op",         "scope",  "dtype", "bytes", "quantity",
                                                 "unit", "over_sizes", "target", "lower", "upper", "note"};
  for (const auto& item : m.items())
    if (std::find(known.begin(), known.end(), item.key()) == known.end())
      throw UsageError(where + ": unknown key '" + item.key() + "'" + unknown_name_hint(item.key(), known));
  AcceptMetric a;
  a.op = string_field(m, "op", where);
  a.quantity = string_field(m, "quantity", where);
  a.unit = string_field(m, "unit", where);
  const std::string expected_unit = unit_of_quantity(a.quantity);
  const bool p2p_quantity = a.quantity.find("_min_") != std::string::npos ||
                            a.quantity.find("_max_") != std::string::npos ||
                            a.quantity.find("_median_") != std::string::npos;
  if (expected_unit.empty() || p2p_quantity != a.is_p2p())
    throw UsageError(where + ": quantity '" + a.quantity + "' is not one of " +
                     (a.is_p2p() ? "bandwidth_min_GBps, bandwidth_median_GBps, latency_max_us, latency_median_us"
                                 : "time_us, p50_us, busbw_GBps, algbw_GBps"));
  if (a.unit != expected_unit)
    throw UsageError(where + ": unit '" + a.unit + "' does not match quantity " + a.quantity + " (" + expected_unit +
                     ")");
  if (!a.is_p2p()) {
    a.scope = string_field(m, "scope", where);
    if (a.scope != "intra" && a.scope != "inter" && a.scope != "world")
      throw UsageError(where + ": scope must be intra, inter or world (got '" + a.scope + "')");
    a.dtype = m.contains("dtype") ? string_field(m, "dtype", where) : "float32";
  }
  if (!m.contains("bytes")) throw UsageError(where + ": missing 'bytes'");
  if (m["bytes"].is_array()) {
    if (m["bytes"].size() != 2) throw UsageError(where + ": 'bytes' range must be [min, max]");
    a.min_bytes = size_value(m["bytes"][0], where);
    a.max_bytes = size_value(m["bytes"][1], where);
    if (a.min_bytes > a.max_bytes) throw UsageError(where + ": 'bytes' range is empty (min > max)");
    if (a.is_p2p()) throw UsageError(where + ": a p2p metric takes one size, not a range");
  } else {
    a.min_bytes = a.max_bytes = size_value(m["bytes"], where);
  }
  a.over_sizes =
      m.contains("over_sizes") ? string_field(m, "over_sizes", where) : (higher_is_better(a.quantity) ? "min" : "max");
  if (a.over_sizes != "min" && a.over_sizes != "max" && a.over_sizes != "mean")
    throw UsageError(where + ": over_sizes must be min, max or mean");
  if (!m.contains("target") || !m["target"].is_number() || !(m["target"].get<double>() > 0))
    throw UsageError(where + ": 'target' must be a positive number");
  a.target = m["target"].get<double>();
  a.lower = optional_number(m, "lower", where);
  a.upper = optional_number(m, "upper", where);
  if (a.lower && (*a.lower < -1 || *a.lower > 0)) throw UsageError(where + ": 'lower' must be in [-1, 0] or null");
  if (a.upper && *a.upper < 0) throw UsageError(where + ": 'upper' must be >= 0 or null");
  a.name = m.contains("name") ? string_field(m, "name", where) : "";
  if (a.name.empty()) {
    std::ostringstream n;
    n << a.op << (a.scope.empty() ? "" : "/" + a.scope) << (a.dtype.empty() ? "" : "/" + a.dtype) << "/" << a.min_bytes
      << (a.max_bytes != a.min_bytes ? "-" + std::to_string(a.max_bytes) : "") << "B/" << a.quantity;
    a.name = n.str();
  }
  return a;
}

inline AcceptReference parse_reference_text(const std::string& text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(path + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  if (!j.is_object()) throw UsageError(path + ": the reference must be a JSON object");
  // Unknown keys are refused at every level, as in a metric: a misspelt "jobs" section
  // would otherwise leave the job unchecked and PASS.
  const JsonReader root(j, path);
  root.allow({"system", "description", "derivation", "job", "metrics"});
  AcceptReference r;
  r.path = path;
  r.text = text;
  r.system = detail::string_field(j, "system", path);
  r.description = detail::string_field(j, "description", path, false);
  r.derivation = detail::string_field(j, "derivation", path, false);
  if (j.contains("job")) {
    const JsonReader job = root.child("job");
    job.allow({"ranks", "domain_size", "iters", "warmup_iters"});
    // Each is held as int (MPI counts ranks in int, `collectives -n` its iterations): a
    // value beyond int is refused, so 2^32+2 ranks never read as 2.
    auto integer = [&](const char* key, int& out, int min) {
      if (!job.has(key)) return;
      out = static_cast<int>(job.integer(key, min, std::numeric_limits<int>::max()));
    };
    integer("ranks", r.job.ranks, 0);
    integer("domain_size", r.job.domain_size, 0);
    integer("iters", r.job.iters, 1);
    integer("warmup_iters", r.job.warmup_iters, 0);
  }
  if (!j.contains("metrics") || !j["metrics"].is_array() || j["metrics"].empty())
    throw UsageError(path + ": 'metrics' must be a non-empty list");
  for (std::size_t i = 0; i < j["metrics"].size(); ++i)
    r.metrics.push_back(parse_metric(j["metrics"][i], path + ": metrics[" + std::to_string(i) + "]"));
  for (std::size_t i = 0; i < r.metrics.size(); ++i)
    for (std::size_t k = 0; k < i; ++k)
      if (r.metrics[i].name == r.metrics[k].name)
        throw UsageError(path + ": two metrics are named '" + r.metrics[i].name + "'");
  return r;
}

inline AcceptReference load_reference(const std::string& path) {
  require_input_file(path, "--reference");
  std::ifstream in(path);
  if (!in) throw UsageError("--reference " + path + ": cannot read the file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_reference_text(ss.str(), path);
}

// Combines the values measured over a metric's sizes and judges them against its bounds.
inline Judgement judge(const AcceptMetric& m, const std::vector<double>& values) {
  Judgement j;
  if (values.empty()) return j;
  j.measured_ok = true;
  if (m.over_sizes == "min")
    j.measured = *std::min_element(values.begin(), values.end());
  else if (m.over_sizes == "max")
    j.measured = *std::max_element(values.begin(), values.end());
  else {
    double sum = 0;
    for (double v : values) sum += v;
    j.measured = sum / values.size();
  }
  const double lo = m.lower_bound(), hi = m.upper_bound();
  // Signed, in the metric's good direction: + better than the target, - worse (a latency
  // 160x below its target reads +0.99, a bandwidth at half its target -0.5).
  j.margin = (higher_is_better(m.quantity) ? j.measured - m.target : m.target - j.measured) / m.target;
  j.pass = std::isfinite(j.measured) && j.measured >= lo && j.measured <= hi;
  return j;
}

}  // namespace ibt::suites
