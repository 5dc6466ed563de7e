#include "topologies/calibration/gain_error.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "core/data_dirs.hpp"
#include "core/errors.hpp"

namespace ibt::topo {

namespace {

const char* kFile = "pp-gain-error.json";
const char* kSource =
    "vTrain ground truth (data/ of github.com/VIA-Research/vTrain, MIT; MICRO 2024): measured Megatron-DeepSpeed "
    "iteration times on DGX A100; the groups of one model, GPU count and global batch measured both with and "
    "without PP (topologies/calibration/pp_pairs.hpp), each measured split projected as vtrain.hpp states";

std::string validation_dir() { return data_dir("IBT_VALIDATION_DIR", "topologies/validation", IBT_VALIDATION_DIR); }

std::map<std::string, GainError> load() {
  std::map<std::string, GainError> out;
  const std::string path = validation_dir() + "/" + kFile;
  std::ifstream in(path);
  if (!in) return out;
  try {
    const auto j = nlohmann::json::parse(in);
    const double coverage = j.at("coverage").get<double>();
    const std::string source = j.at("source").get<std::string>();
    for (const auto& [kind, k] : j.at("kinds").items()) {
      if (kind != "catalog" && kind != "calibrated") throw std::runtime_error("unknown kind '" + kind + "'");
      GainError e;
      e.known = true;
      e.kind = kind;
      e.points = k.at("abs_err_p80_points").get<double>() / 100;
      if (!(e.points >= 0) || !std::isfinite(e.points)) throw std::runtime_error(kind + ": abs_err_p80_points < 0");
      e.coverage = coverage;
      e.groups = k.at("groups").get<int>();
      e.topology = k.at("topology").get<std::string>();
      e.command = k.at("command").get<std::string>();
      e.source = source;
      out[kind] = e;
    }
  } catch (const std::exception& e) {
    throw RuntimeError("PP gain error " + path + " is malformed: " + e.what() +
                       " (rewrite it: scripts/validate_vtrain.sh BUILD --pp-pairs --write-gain-error)");
  }
  return out;
}

}  // namespace

std::string gain_error_kind(const Topology& t) { return t.fits.empty() ? "catalog" : "calibrated"; }

GainError gain_error_of(const Topology& t) {
  static std::once_flag once;
  static std::map<std::string, GainError> table;
  std::call_once(once, [] { table = load(); });
  const std::string kind = gain_error_kind(t);
  auto it = table.find(kind);
  if (it != table.end()) return it->second;
  GainError none;
  none.kind = kind;
  return none;
}

std::string format_gain(double gain, const GainError& e) {
  char buf[128];
  if (std::isinf(gain)) return "gain inf";
  if (e.known)
    std::snprintf(buf, sizeof buf, "gain %+.1f%% +/- %.1f points (%.0f%% of measured pairs)", 100 * gain,
                  100 * e.points, 100 * e.coverage);
  else
    std::snprintf(buf, sizeof buf, "gain %+.1f%%", 100 * gain);
  return buf;
}

void write_gain_error(const std::string& path, const std::string& kind, const std::string& topology,
                      const PpPairSummary& s, double threshold, const std::string& command, const std::string& note) {
  if (kind != "catalog" && kind != "calibrated")
    throw UsageError("--gain-error-kind '" + kind + "': expected catalog or calibrated");
  nlohmann::json j = nlohmann::json::object();
  if (std::ifstream in(path); in) {
    try {
      j = nlohmann::json::parse(in);
    } catch (const std::exception& e) {
      throw UsageError(path + " is not JSON (" + e.what() + "): remove it and write both kinds again");
    }
  }
  j["description"] =
      "The uncertainty of ibt crossover's PP verdict: per kind of topology, the p80 of |projected PP gain - "
      "measured PP gain| (points) over the measured groups; a gain within threshold +- that is 'within "
      "uncertainty' (topologies/calibration/gain_error.hpp)";
  j["coverage"] = 0.8;
  j["source"] = kSource;
  nlohmann::json k;
  k["topology"] = topology;
  k["groups"] = s.groups;
  k["verdict_threshold"] = threshold;
  k["verdict_agreement"] = s.agree;
  k["abs_err_p80_points"] = std::round(10 * s.abs_err_p80) / 10;
  k["err_median_points"] = std::round(10 * s.err_median) / 10;
  k["err_p10_points"] = std::round(10 * s.err_p10) / 10;
  k["err_p90_points"] = std::round(10 * s.err_p90) / 10;
  k["command"] = command;
  if (!note.empty()) k["note"] = note;
  j["kinds"][kind] = k;
  std::ofstream out(path);
  if (!out) throw UsageError("cannot write " + path);
  out << j.dump(2) << "\n";
  if (!out) throw UsageError("cannot write " + path);
}

}  // namespace ibt::topo
