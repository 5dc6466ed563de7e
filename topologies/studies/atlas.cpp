#include "topologies/studies/atlas.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/data_dirs.hpp"
#include "core/errors.hpp"
#include "core/input_file.hpp"
#include "core/json_reader.hpp"
#include "models/plan/model_file.hpp"
#include "topologies/projection/framework.hpp"
#include "topologies/sim/sim_pricer.hpp"
#include "topologies/studies/verdict_reason.hpp"

namespace ibt::topo {

using nlohmann::json;

const std::string* AtlasSpec::source(const std::string& id) const {
  for (const auto& [k, v] : sources)
    if (k == id) return &v;
  return nullptr;
}

std::string default_atlas_path() {
  return data_dir("IBT_VALIDATION_DIR", "topologies/validation", IBT_VALIDATION_DIR) + "/atlas.json";
}

AtlasSpec parse_atlas(const std::string& json_text, const std::string& origin) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw UsageError(origin + ": not valid JSON: " + e.what());
  }
  const JsonReader top(j, origin);
  top.allow({"what", "sources", "cells"});
  AtlasSpec s;
  s.origin = origin;
  if (!j.contains("sources") || !j.at("sources").is_object() || j.at("sources").empty())
    throw UsageError(origin + ": field 'sources': must be a non-empty object of id: reference");
  for (auto it = j.at("sources").begin(); it != j.at("sources").end(); ++it) {
    if (!it.value().is_string() || it.value().get<std::string>().empty())
      throw UsageError(origin + ": field 'sources." + it.key() + "': must be a non-empty string");
    s.sources.emplace_back(it.key(), it.value().get<std::string>());
  }
  if (!j.contains("cells") || !j.at("cells").is_array() || j.at("cells").empty())
    throw UsageError(origin + ": field 'cells': must be a non-empty list");
  static const std::vector<std::string> keys = {"model", "topology",     "devices",  "global_batch",    "framework",
                                                "scale", "scale_source", "practice", "practice_source", "note"};
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < j.at("cells").size(); ++i) {
    const json& c = j.at("cells")[i];
    const std::string where = origin + ": cells[" + std::to_string(i) + "]";
    if (!c.is_object()) throw UsageError(where + ": must be an object");
    const JsonReader cell(c, where);  // errors "x.json: cells[3]: field 'devices': ..."
    cell.allow(keys);
    AtlasEntry e;
    e.model = cell.str("model");
    e.topology = cell.str("topology");
    e.framework = cell.str("framework");
    e.devices = static_cast<int>(cell.integer("devices", 1));
    e.global_batch = cell.integer("global_batch", 1);
    e.scale = cell.str("scale");
    if (e.scale != "published" && e.scale != "chosen")
      throw UsageError(where + ": field 'scale': must be published or chosen, not '" + e.scale + "'");
    e.practice = cell.str("practice");
    if (e.practice != "pp" && e.practice != "no-pp" && e.practice != "none")
      throw UsageError(where + ": field 'practice': must be pp, no-pp or none, not '" + e.practice + "'");
    e.scale_source = cell.str("scale_source");
    e.practice_source = cell.str("practice_source");
    for (const std::string* id : {&e.scale_source, &e.practice_source})
      if (!s.source(*id)) throw UsageError(where + ": source '" + *id + "' is not listed in 'sources'");
    e.note = cell.str("note", false);
    if (!seen.insert({e.model, e.topology}).second)
      throw UsageError(where + ": " + e.model + " on " + e.topology + " is listed twice");
    s.cells.push_back(e);
  }
  return s;
}

AtlasSpec load_atlas(const std::string& path) {
  require_input_file(path, "atlas file");
  std::ifstream in(path);
  if (!in) throw UsageError("atlas file '" + path + "' cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_atlas(ss.str(), path);
}

std::vector<AtlasEntry> select_cells(const AtlasSpec& spec, const std::vector<std::string>& models,
                                     const std::vector<std::string>& topologies) {
  auto check = [&](const std::vector<std::string>& names, bool model) {
    for (const auto& n : names) {
      const bool found = std::any_of(spec.cells.begin(), spec.cells.end(),
                                     [&](const AtlasEntry& e) { return (model ? e.model : e.topology) == n; });
      if (!found)
        throw UsageError(std::string(model ? "--atlas-models" : "--atlas-topologies") + ": no cell of " + spec.origin +
                         " has " + (model ? "model" : "topology") + " '" + n + "'");
    }
  };
  check(models, true);
  check(topologies, false);
  auto in = [](const std::vector<std::string>& v, const std::string& x) {
    return v.empty() || std::find(v.begin(), v.end(), x) != v.end();
  };
  std::vector<AtlasEntry> out;
  for (const auto& e : spec.cells)
    if (in(models, e.model) && in(topologies, e.topology)) out.push_back(e);
  return out;
}

std::string atlas_agreement(PpVerdict verdict, const std::string& practice) {
  if (verdict == PpVerdict::nothing_fits) return "nothing fits";
  if (practice == "none") return "no practice";
  if (verdict == PpVerdict::within_uncertainty) return "undecided";
  return (verdict == PpVerdict::needed) == (practice == "pp") ? "agrees" : "disagrees";
}

std::string atlas_agreement(const std::string& verdict, const std::string& practice) {
  return atlas_agreement(parse_verdict(verdict), practice);
}

void explain(AtlasCell& c) {
  const Projection& a = c.cell.best_no_pp;
  const Projection& b = c.cell.best_with_pp;
  c.agreement = atlas_agreement(c.cell.verdict, c.entry.practice);
  if (!a.feasible || !b.feasible) {  // forced, or "nothing fits" (verdict.hpp)
    c.deciding_term = "memory";
    c.why = !a.feasible && !b.feasible ? "no split fits in device memory at this scale"
            : !a.feasible              ? "no split without PP fits in device memory"
                                       : "no split with PP fits in device memory";
    // The sweep knows whether memory or divisibility left a side without a split.
    if (c.cell.decided_by == PpDecidedBy::divisibility) c.deciding_term = "divisibility";
    if (!c.cell.decided_why.empty()) c.why = c.cell.decided_why;
    return;
  }
  const DecidingTerm d = deciding_term(c.cell);
  c.deciding_term = d.term;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s wins on %s: %.3f s without PP vs %.3f s with PP (steps %.3f s vs %.3f s)",
                d.pp_wins ? "PP" : "no PP", d.term.c_str(), d.no_pp_s, d.with_pp_s, a.step_s, b.step_s);
  c.why = buf;
}

AtlasCell run_atlas_cell(const AtlasEntry& e, double threshold, const CrossoverRun& run) {
  const models::ModelConfig model = models::load_model(e.model);
  const Topology topology = load_topology(e.topology);
  ProjectionOptions options;
  options.dtype = default_dtype(topology);
  apply(framework_profile(e.framework), options);
  const int domain = topology.domain_size();
  double gbps = 0;
  if (topology.scale_out.present) {
    gbps = topology.scale_out.bandwidth_GBps.get() * 8.0;
  } else {
    // crossover() gives every fabric a scale-out network; a system without one is only
    // modelled for jobs inside one domain, where that network carries nothing.
    if (e.devices > domain)
      throw UsageError("atlas: " + e.model + " on " + e.topology + ": " + std::to_string(e.devices) +
                       " devices exceed its one " + std::to_string(domain) +
                       "-device domain and it has no scale-out network (use a multi-slice topology)");
    gbps = 1.0;
  }
  AtlasCell c;
  c.entry = e;
  const CrossoverResult r = crossover(model, topology, e.devices, {domain}, {gbps}, e.global_batch, threshold, options,
                                      nullptr, RankBy::mfu, 0, run);
  c.cell = r.cells.front();
  detail_bests(model, with_fabric(topology, domain, gbps), options, c.cell);
  if (!topology.scale_out.present) c.cell.scale_out_gbps = 0;  // the system has none (the 1 Gb/s above carried nothing)
  explain(c);
  return c;
}

}  // namespace ibt::topo
