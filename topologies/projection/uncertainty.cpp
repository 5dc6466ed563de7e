#include "topologies/projection/uncertainty.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "core/data_dirs.hpp"
#include "core/errors.hpp"

namespace ibt::topo {

namespace {

struct Scope {
  std::string kind, name;
  std::string families;  // "h100-nemo-fp8+h100-mbridge-fp8": whose rows the figures pool
  int rows = 0;
  double low = 0, high = 0, median_abs = 0;
};

struct Bands {
  bool loaded = false;
  double coverage = 0;
  std::map<std::string, Scope> scopes;                            // "topology:dgx-h100", "generation:Hopper", "all"
  std::map<std::string, std::pair<std::string, int>> topologies;  // name -> (scope key, own rows)
};

// Found as every data folder is (core/data_dirs.hpp), so an installed tree reads its own.
std::string validation_dir() { return data_dir("IBT_VALIDATION_DIR", "topologies/validation", IBT_VALIDATION_DIR); }

Bands load_bands() {
  Bands out;
  const std::string path = validation_dir() + "/bands.json";
  std::ifstream in(path);
  if (!in) return out;
  try {
    const auto j = nlohmann::json::parse(in);
    out.coverage = j.at("coverage").get<double>();
    for (const auto& [key, s] : j.at("scopes").items()) {
      Scope e;
      e.kind = s.at("kind").get<std::string>();
      e.name = s.at("name").get<std::string>();
      for (const auto& f : s.at("families")) e.families += (e.families.empty() ? "" : "+") + f.get<std::string>();
      e.rows = s.at("rows").get<int>();
      // An interval end the residuals cannot bound (null) is unbounded: the band is open.
      e.low = s.at("low").is_null() ? -0.999 : s.at("low").get<double>();
      e.high = s.at("high").is_null() ? 1e9 : s.at("high").get<double>();
      e.median_abs = s.at("median_abs").get<double>();
      out.scopes[key] = e;
    }
    for (const auto& [name, t] : j.at("topologies").items()) {
      const std::string scope = t.at("scope").get<std::string>();
      if (!out.scopes.count(scope)) throw std::runtime_error("topology " + name + " names unknown scope " + scope);
      out.topologies[name] = {scope, t.at("rows").get<int>()};
    }
    if (!out.scopes.count("all")) throw std::runtime_error("no 'all' scope (the default band)");
    out.loaded = true;
  } catch (const std::exception& e) {
    throw RuntimeError("validation bands " + path + " are malformed: " + e.what());
  }
  return out;
}

const Bands& bands() {
  static std::once_flag once;
  static Bands table;
  std::call_once(once, [] { table = load_bands(); });
  return table;
}

std::string base_of(const std::string& topology_name) { return topology_name.substr(0, topology_name.find('@')); }

}  // namespace

MfuBand mfu_band(const std::string& topology_name, double mfu) {
  MfuBand b;
  const Bands& t = bands();
  if (!t.loaded) return b;
  const auto it = t.topologies.find(base_of(topology_name));
  const std::string key = it == t.topologies.end() ? "all" : it->second.first;
  const Scope& s = t.scopes.at(key);
  b.known = true;
  b.own_rows = it == t.topologies.end() ? 0 : it->second.second;
  b.validated = s.kind == "topology";
  b.scope_kind = s.kind;
  b.scope = s.kind == "topology" ? s.name : s.kind == "generation" ? "generation " + s.name : "all published runs";
  b.family = s.families;
  b.rows = s.rows;
  b.coverage = t.coverage;
  b.low = mfu / (1.0 + s.high);
  b.high = std::min(1.0, mfu / (1.0 + s.low));  // MFU cannot pass 100%, however wide the error
  b.relative = s.median_abs;
  return b;
}

std::string format_mfu_with_band(double mfu, const MfuBand& band, const std::string& topology_name) {
  const std::string base = base_of(topology_name);
  char head[96];
  if (!band.known) {
    std::snprintf(head, sizeof head, "%.1f%% (no validation bands)", 100 * mfu);
    return head;
  }
  std::snprintf(head, sizeof head, "%.1f%% (%.0f%% band %.1f-%.1f: ", 100 * mfu, 100 * band.coverage, 100 * band.low,
                100 * band.high);
  std::string out = head;
  const std::string runs = std::to_string(band.rows) + " published runs";
  if (band.scope_kind == "topology") return out + "out-of-family error of " + runs + " on " + base + ")";
  std::string why = band.own_rows == 0
                        ? "no published run on " + base
                        : std::to_string(band.own_rows) + " published run" + (band.own_rows > 1 ? "s" : "") + " on " +
                              base + ", too few for a band of its own";
  if (band.scope_kind == "generation")
    return out + why + "; out-of-family error of " + runs + " of its " + band.scope + ")";
  return out + why + (band.own_rows == 0 ? " or its generation" : "") +
         ": the wide default band, out-of-family error of all " + runs + ")";
}

}  // namespace ibt::topo
