// ibt accept --generate-reference RESULTS.h5: targets from a known-good run's measurements.
#include "collectives/acceptance/accept_baseline.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "collectives/acceptance/accept_from_file.hpp"
#include "collectives/acceptance/accept_generate.hpp"
#include "collectives/acceptance/accept_judge.hpp"
#include "core/errors.hpp"
#include "core/hdf5.hpp"
#include "core/stats.hpp"
#include "reports/store/store.hpp"
#include "reports/tables/collectives_table.hpp"

namespace ibt::suites {
namespace {

constexpr std::size_t kLargeBytes = 64u << 20;  // bandwidth metrics: sizes from here up
// Below this a busbw is mostly a latency in disguise (an 8-byte all-reduce "runs at" 0.01
// GB/s): no bandwidth target comes from it, whatever the run measured. At 256 KiB a 25 GB/s
// link moves the message in ~10 us, against a few us of start-up.
constexpr std::size_t kMinBandwidthBytes = 256u << 10;
constexpr std::size_t kSmallBytes = 4096;  // latency metrics: the smallest size, when at most this
constexpr double kBandwidthLower = -0.2;   // fails below 80% of the baseline
constexpr double kLatencyUpper = 2.0;      // fails above 3x the baseline
// Warned about, not refused: a baseline whose runs differ by more than this, or a latency
// size whose slowest iterations are this many times its median, was not measured quietly.
constexpr double kSpreadWarning = 0.2;
constexpr double kTailWarning = 5.0;

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
    while (large != sizes.end() && *large < kMinBandwidthBytes) ++large;
    if (large != sizes.end()) metrics.push_back(collective_metric(key, *large, sizes.back(), true));
    if (sizes.front() <= kSmallBytes) metrics.push_back(collective_metric(key, sizes.front(), sizes.front(), false));
  }
  if (!measured.p2p_from_file.empty()) {
    std::set<std::size_t> sizes;
    for (const auto& r : measured.p2p_from_file) sizes.insert(r.bytes);
    if (*sizes.rbegin() >= kMinBandwidthBytes)
      metrics.push_back(p2p_metric("p2p-worst-pair-bandwidth", *sizes.rbegin(), true));
    if (*sizes.begin() <= kSmallBytes) metrics.push_back(p2p_metric("p2p-worst-pair-latency", *sizes.begin(), false));
  }
  return metrics;
}

// The runs --run names: "all" (every run with a collectives table), or one or more run
// specs separated by commas ("last", "3", "000003"), each read once.
std::vector<AcceptMeasurements> read_runs(const std::string& file, const std::vector<std::string>& specs) {
  std::vector<std::string> names = specs;
  if (specs.size() == 1 && specs[0] == "all") {
    names.clear();
    for (const auto& r : store::list_runs(file))
      if (std::find(r.tables.begin(), r.tables.end(), std::string(tables::CollectiveRow::kTable)) != r.tables.end())
        names.push_back(r.id);
    if (names.empty()) throw UsageError("--generate-reference " + file + ": no run with a collectives table");
  }
  std::vector<AcceptMeasurements> runs;
  std::set<std::string> seen;
  for (const auto& spec : names) {
    AcceptMeasurements m = read_accept_measurements(file, spec, file, AcceptReference{}, stderr);
    if (!seen.insert(m.source).second)
      throw UsageError("--run: " + m.source + " is named twice; each run counts once in the median");
    if (!runs.empty() && m.ranks != runs.front().ranks)
      throw UsageError("--generate-reference " + file + ": " + m.source + " has " + std::to_string(m.ranks) +
                       " ranks, " + runs.front().source + " " + std::to_string(runs.front().ranks) +
                       "; a reference is for one job size");
    if (m.wrong > 0)
      throw UsageError("--generate-reference " + file + ": " + m.source + " has " + std::to_string(m.wrong) +
                       " wrong values; a run that failed its checks is no baseline");
    runs.push_back(std::move(m));
  }
  return runs;
}

// A latency target's size whose slowest iterations ran kTailWarning times its median in
// some run: outliers the baseline should not have had.
void warn_about_tails(const nlohmann::json& metric, const std::vector<AcceptMeasurements>& runs) {
  if (metric["op"] == "p2p" || metric["quantity"] != "p50_us") return;
  const auto key = std::make_tuple(metric["op"].get<std::string>(), metric["scope"].get<std::string>(),
                                   metric["dtype"].get<std::string>(), metric["bytes"].get<std::size_t>());
  for (const auto& run : runs) {
    const auto it = run.collectives.find(key);
    if (it == run.collectives.end() || !(it->second.p50_us > 0)) continue;
    if (const double tail = it->second.p99_us / it->second.p50_us; tail > kTailWarning)
      std::fprintf(stderr,
                   "# warning: %s in %s: p99 is %.1fx the p50 (outliers: another process, or the scheduler); "
                   "its target is the median, but a quiet rerun is a better baseline\n",
                   metric["name"].get<std::string>().c_str(), run.source.c_str(), tail);
  }
}

}  // namespace

BaselineTarget baseline_target(const std::string& name, std::vector<double> values, const std::string& unit) {
  BaselineTarget out;
  if (values.empty()) return out;
  std::sort(values.begin(), values.end());
  out.target = median(values);
  out.ok = true;
  const double lo = values.front(), hi = values.back();
  if (values.size() == 1) {
    out.note = "measured " + compact(out.target) + " " + unit + " in the baseline run";
    return out;
  }
  out.note = "median of " + std::to_string(values.size()) + " runs: " + compact(out.target) + " " + unit + " (from " +
             compact(lo) + " to " + compact(hi) + ")";
  if (hi > lo * (1 + kSpreadWarning)) {
    char text[96];
    std::snprintf(text, sizeof text, "%.0f%%", 100 * (hi / lo - 1));
    out.warning = name + " spreads " + text + " across the " + std::to_string(values.size()) + " runs (" + compact(lo) +
                  " to " + compact(hi) + " " + unit + "): the system was not quiet, or changed between them";
  }
  return out;
}

bool is_results_file(const std::string& source) {
  h5::silence_errors();  // a missing file or a JSON one is an answer here, not an HDF5 error stack
  if (H5Fis_hdf5(source.c_str()) > 0) return true;
  return source.size() > 3 && source.compare(source.size() - 3, 3, ".h5") == 0;
}

nlohmann::json reference_from_runs(const std::string& file, const std::vector<std::string>& run_specs) {
  // The "# judging ..." lines go to stderr: the reference may be written to stdout.
  const std::vector<AcceptMeasurements> runs = read_runs(file, run_specs);
  const AcceptMeasurements& first = runs.front();
  nlohmann::json candidates = candidate_metrics(first);
  if (candidates.empty())
    throw UsageError("--generate-reference " + file + ": " + first.source + " stored no collectives rows");
  nlohmann::json reference = {{"system", "baseline"}, {"metrics", candidates}};
  const AcceptReference parsed = parse_reference_text(reference.dump(), file + " (generated)");
  std::vector<std::vector<Verdict>> verdicts;
  for (const auto& run : runs) verdicts.push_back(judge_metrics(parsed, run));

  nlohmann::json metrics = nlohmann::json::array();
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    std::vector<double> values;
    for (const auto& per_run : verdicts) {
      const Judgement& j = per_run[i].judgement;
      // A quantity the run did not define (no bus factor, nothing measured) makes no target.
      if (j.measured_ok && std::isfinite(j.measured) && j.measured > 0) values.push_back(j.measured);
    }
    nlohmann::json m = candidates[i];
    const BaselineTarget t = baseline_target(m["name"].get<std::string>(), values, m["unit"].get<std::string>());
    if (!t.ok) continue;
    m["target"] = std::stod(format_judged_value(t.target));
    m["note"] = t.note;
    if (!t.warning.empty()) std::fprintf(stderr, "# warning: %s\n", t.warning.c_str());
    warn_about_tails(m, runs);
    metrics.push_back(m);
  }
  if (metrics.empty())
    throw UsageError("--generate-reference " + file + ": " + first.source + " gives no metric a target");
  std::string sources = first.source;
  for (std::size_t k = 1; k < runs.size(); ++k) sources += "; " + runs[k].source;
  const AcceptMeasurements& measured = runs.back();

  nlohmann::json config = nlohmann::json::object();
  if (!measured.config_json.empty()) config = nlohmann::json::parse(measured.config_json, nullptr, false);
  auto config_int = [&](const char* key, int fallback) {
    return config.is_object() && config.contains(key) && config[key].is_number_integer() ? config[key].get<int>()
                                                                                         : fallback;
  };
  return {{"system", "baseline"},
          {"description", "Generated from " + sources +
                              (runs.size() == 1 ? " (a run taken as known good)." : " (runs taken as known good).")},
          {"derivation", "ibt accept --generate-reference " + file +
                             ": each target is the median over the runs of the value ibt accept --from judges on "
                             "each (bandwidth: the minimum busbw over the sizes >= 64 MiB, or the two largest, never "
                             "below 256 KiB; latency: the p50 of the smallest size), failing below 80% of a bandwidth "
                             "and above 3x a latency. Rebuild it from several quiet runs of the same job "
                             "(--run all)."},
          {"job",
           {{"ranks", measured.ranks},
            {"domain_size", config_int("domain_size", 0)},
            {"iters", config_int("iters", 20)},
            {"warmup_iters", config_int("warmup_iters", 5)}}},
          {"metrics", metrics}};
}

}  // namespace ibt::suites
