#include "topologies/projection/uncertainty.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"

namespace ibt::topo {

namespace {

struct TopologyError {
  std::string families;  // "h100-nemo-fp8+h100-mbridge-fp8": whose rows the figures pool
  int rows = 0;
  double q10 = 0, q90 = 0, median_abs = 0;
};

std::string validation_dir() {
  if (const char* env = std::getenv("IBT_VALIDATION_DIR"); env && *env) return env;
  return IBT_VALIDATION_DIR;
}

// Topology name -> the errors of every published run projected on it.
std::map<std::string, TopologyError> load_bands() {
  std::map<std::string, TopologyError> out;
  const std::string path = validation_dir() + "/bands.json";
  std::ifstream in(path);
  if (!in) return out;
  try {
    const auto j = nlohmann::json::parse(in);
    for (const auto& [topology, t] : j.at("topologies").items()) {
      TopologyError e;
      for (const auto& f : t.at("families")) e.families += (e.families.empty() ? "" : "+") + f.get<std::string>();
      e.rows = t.at("rows").get<int>();
      e.q10 = t.at("q10").get<double>();
      e.q90 = t.at("q90").get<double>();
      e.median_abs = t.at("median_abs").get<double>();
      out[topology] = e;
    }
  } catch (const std::exception& e) {
    throw RuntimeError("validation bands " + path + " are malformed: " + e.what());
  }
  return out;
}

const std::map<std::string, TopologyError>& bands() {
  static std::once_flag once;
  static std::map<std::string, TopologyError> table;
  std::call_once(once, [] { table = load_bands(); });
  return table;
}

}  // namespace

MfuBand mfu_band(const std::string& topology_name, double mfu) {
  MfuBand b;
  const std::string base = topology_name.substr(0, topology_name.find('@'));
  const auto& t = bands();
  const auto it = t.find(base);
  if (it == t.end()) return b;
  const TopologyError& e = it->second;
  const double lo = std::min(e.q10, -e.median_abs), hi = std::max(e.q90, e.median_abs);
  b.known = true;
  b.family = e.families;
  b.rows = e.rows;
  b.low = mfu / (1.0 + hi);
  b.high = mfu / (1.0 + lo);
  b.relative = e.median_abs;
  return b;
}

std::string format_mfu_with_band(double mfu, const MfuBand& band, const std::string& topology_name) {
  char buf[200];
  if (band.known)
    std::snprintf(buf, sizeof buf, "%.1f%% (%.1f-%.1f; %d published runs on %s)", 100 * mfu, 100 * band.low,
                  100 * band.high, band.rows, topology_name.substr(0, topology_name.find('@')).c_str());
  else
    std::snprintf(buf, sizeof buf, "%.1f%% (no validation band for %s)", 100 * mfu,
                  topology_name.substr(0, topology_name.find('@')).c_str());
  return buf;
}

}  // namespace ibt::topo
