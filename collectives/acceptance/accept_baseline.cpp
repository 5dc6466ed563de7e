// ibt accept --generate-reference RESULTS.h5: targets from a known-good run's measurements.
#include "collectives/acceptance/accept_baseline.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "core/errors.hpp"
#include "core/hdf5.hpp"
#include "collectives/acceptance/accept_from_file.hpp"
#include "collectives/acceptance/accept_generate.hpp"
#include "collectives/acceptance/accept_judge.hpp"

namespace ibt::suites {
namespace {

constexpr std::size_t kLargeBytes = 64u << 20;  // bandwidth metrics: sizes from here up
constexpr std::size_t kSmallBytes = 4096;       // latency metrics: the smallest size, when at most this
constexpr double kBandwidthLower = -0.2;        // fails below 80% of the baseline
constexpr double kLatencyUpper = 2.0;           // fails above 3x the baseline

using OpKey = std::tuple<std::string, std::string, std::string>;  // op, scope, dtype

// The sizes measured per (op, scope, dtype), ascending.
std::map<OpKey, std::vector<std::size_t>> sizes_per_op(const AcceptMeasurements& measured) {
  std::map<OpKey, std::set<std::size_t>> sizes;
  for (const auto& [key, m] : measured.collectives) {
    const auto& [op, scope, dtype, bytes] = key;
    sizes[{op, scope, dtype}].insert(bytes);
  }
  std::map<OpKey, std::vector<std::size_t>> out;
  for (const auto& [key, s] : sizes) out[key] = {s.begin(), s.end()};
  return out;
}

// One metric with a placeholder target; the target is set from what it judges to.
nlohmann::json collective_metric(const OpKey& key, std::size_t lo, std::size_t hi, bool bandwidth) {
  const auto& [op, scope, dtype] = key;
  const std::string what = bandwidth ? "busbw" : std::to_string(lo) + "B-latency";
  nlohmann::json m = {{"name", op + "-" + scope + "-" + dtype + "-" + what},
                      {"op", op},
                      {"scope", scope},
                      {"dtype", dtype},
                      {"bytes", lo == hi ? nlohmann::json(lo) : nlohmann::json::array({lo, hi})},
                      {"quantity", bandwidth ? "busbw_GBps" : "p50_us"},
                      {"target", 1},
                      {"lower", bandwidth ? nlohmann::json(kBandwidthLower) : nlohmann::json(nullptr)},
                      {"upper", bandwidth ? nlohmann::json(nullptr) : nlohmann::json(kLatencyUpper)},
                      {"unit", bandwidth ? "GB/s" : "us"}};
  return m;
}

nlohmann::json p2p_metric(const std::string& name, std::size_t bytes, bool bandwidth) {
  return {{"name", name},
          {"op", "p2p"},
          {"bytes", bytes},
          {"quantity", bandwidth ? "bandwidth_min_GBps" : "latency_max_us"},
          {"target", 1},
          {"lower", bandwidth ? nlohmann::json(kBandwidthLower) : nlohmann::json(nullptr)},
          {"upper", bandwidth ? nlohmann::json(nullptr) : nlohmann::json(kLatencyUpper)},
          {"unit", bandwidth ? "GB/s" : "us"}};
}

// The candidate metrics the run's rows can support (targets still placeholders).
nlohmann::json candidate_metrics(const AcceptMeasurements& measured) {
  nlohmann::json metrics = nlohmann::json::array();
  for (const auto& [key, sizes] : sizes_per_op(measured)) {
    // Broadcast and send/recv are stored in-place or with no bus factor: judge busbw only
    // where the collectives table defines it (every op stored has busbw; zero means none).
    auto large = std::find_if(sizes.begin(), sizes.end(), [](std::size_t b) { return b >= kLargeBytes; });
    if (large == sizes.end()) large = sizes.size() >= 2 ? sizes.end() - 2 : sizes.begin();
    metrics.push_back(collective_metric(key, *large, sizes.back(), true));
    if (sizes.front() <= kSmallBytes) metrics.push_back(collective_metric(key, sizes.front(), sizes.front(), false));
  }
  if (!measured.p2p_from_file.empty()) {
    std::set<std::size_t> sizes;
    for (const auto& r : measured.p2p_from_file) sizes.insert(r.bytes);
    metrics.push_back(p2p_metric("p2p-worst-pair-bandwidth", *sizes.rbegin(), true));
    if (*sizes.begin() <= kSmallBytes) metrics.push_back(p2p_metric("p2p-worst-pair-latency", *sizes.begin(), false));
  }
  return metrics;
}

std::string baseline_note(const Judgement& j, const std::string& unit) {
  return "measured " + compact(j.measured) + " " + unit + " in the baseline run";
}

}  // namespace

bool is_results_file(const std::string& source) {
  h5::silence_errors();  // a missing file or a JSON one is an answer here, not an HDF5 error stack
  if (H5Fis_hdf5(source.c_str()) > 0) return true;
  return source.size() > 3 && source.compare(source.size() - 3, 3, ".h5") == 0;
}

nlohmann::json reference_from_run(const std::string& file, const std::string& run_spec) {
  // The "# judging ..." lines go to stderr: the reference may be written to stdout.
  const AcceptMeasurements measured = read_accept_measurements(file, run_spec, file, AcceptReference{}, stderr);
  if (measured.wrong > 0)
    throw UsageError("--generate-reference " + file + ": " + measured.source + " has " +
                     std::to_string(measured.wrong) + " wrong values; a run that failed its checks is no baseline");
  nlohmann::json candidates = candidate_metrics(measured);
  if (candidates.empty())
    throw UsageError("--generate-reference " + file + ": " + measured.source + " stored no collectives rows");
  nlohmann::json reference = {{"system", "baseline"}, {"metrics", candidates}};
  const AcceptReference parsed = parse_reference_text(reference.dump(), file + " (generated)");
  const std::vector<Verdict> verdicts = judge_metrics(parsed, measured);

  nlohmann::json metrics = nlohmann::json::array();
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    const Judgement& j = verdicts[i].judgement;
    // A quantity the run did not define (no bus factor, nothing measured) makes no target.
    if (!j.measured_ok || !std::isfinite(j.measured) || !(j.measured > 0)) continue;
    nlohmann::json m = candidates[i];
    m["target"] = std::stod(format_judged_value(j.measured));
    m["note"] = baseline_note(j, m["unit"].get<std::string>());
    metrics.push_back(m);
  }
  if (metrics.empty())
    throw UsageError("--generate-reference " + file + ": " + measured.source + " gives no metric a target");

  nlohmann::json config = nlohmann::json::object();
  if (!measured.config_json.empty()) config = nlohmann::json::parse(measured.config_json, nullptr, false);
  auto config_int = [&](const char* key, int fallback) {
    return config.is_object() && config.contains(key) && config[key].is_number_integer() ? config[key].get<int>()
                                                                                         : fallback;
  };
  return {{"system", "baseline"},
          {"description", "Generated from " + measured.source + " (a run taken as known good)."},
          {"derivation", "ibt accept --generate-reference " + file +
                             ": each target is the value ibt accept --from judges on that run (bandwidth: the "
                             "minimum busbw over the sizes >= 64 MiB, or the two largest; latency: the p50 of the "
                             "smallest size), failing below 80% of a bandwidth and above 3x a latency. Rebuild it "
                             "from a quiet run of the same job."},
          {"job",
           {{"ranks", measured.ranks},
            {"domain_size", config_int("domain_size", 0)},
            {"iters", config_int("iters", 20)},
            {"warmup_iters", config_int("warmup_iters", 5)}}},
          {"metrics", metrics}};
}

}  // namespace ibt::suites
