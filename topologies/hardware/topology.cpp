#include "topologies/hardware/topology.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/catalog_file.hpp"
#include "core/data_dirs.hpp"
#include "core/did_you_mean.hpp"
#include "core/errors.hpp"
#include "core/input_file.hpp"
#include "core/json_reader.hpp"

namespace ibt::topo {

using nlohmann::json;

const char* to_string(Algorithm a) {
  switch (a) {
    case Algorithm::ring: return "ring";
    case Algorithm::tree: return "tree";
    case Algorithm::nvls: return "nvls";
    case Algorithm::sharp: return "sharp";
  }
  return "?";
}

bool Fabric::offers(Algorithm a) const {
  return std::find(algorithms.begin(), algorithms.end(), a) != algorithms.end();
}

const Figure& Device::peak(const std::string& dtype) const {
  if (dtype == "fp32") return fp32;
  if (dtype == "tf32") return tf32;
  if (dtype == "bf16") return bf16;
  if (dtype == "fp8") return fp8;
  throw UsageError("unknown compute dtype '" + dtype + "' (fp32, tf32, bf16, fp8)");
}

int Topology::placement_domain(long long world) const {
  const int D = domain_size();
  if (world <= D || world % D == 0) return D;
  // Segments under half a domain would strand more than half of every domain: a
  // scheduler fills the domains then (as consecutive ranks do).
  for (int d = D; 2 * d >= D; --d)
    if (world % d == 0) return d;
  return D;
}

const Source* Topology::find_source(const std::string& id) const {
  for (const auto& s : sources)
    if (s.id == id) return &s;
  return nullptr;
}

std::vector<std::pair<std::string, const Figure*>> Topology::figures() const {
  std::vector<std::pair<std::string, const Figure*>> f = {
      {"device.peak_tflops.fp32", &device.fp32},
      {"device.peak_tflops.tf32", &device.tf32},
      {"device.peak_tflops.bf16", &device.bf16},
      {"device.peak_tflops.fp8", &device.fp8},
      {"device.memory_GB", &device.memory_GB},
      {"device.memory_bandwidth_GBps", &device.memory_bandwidth_GBps},
      {"scale_up.devices_per_domain", &scale_up.devices_per_domain},
      {"scale_up.bandwidth_GBps", &scale_up.bandwidth_GBps},
      {"scale_up.latency_us", &scale_up.latency_us},
      {"model.collective_launch_us", &model.collective_launch_us},
      {"model.gemm_efficiency", &model.gemm_efficiency},
      {"model.memory_efficiency", &model.memory_efficiency},
      {"model.op_overhead_us", &model.op_overhead_us},
      {"model.scale_up_efficiency", &model.scale_up_efficiency},
      {"model.scale_out_efficiency", &model.scale_out_efficiency},
  };
  if (!device.power_W.source.empty()) f.push_back({"device.power_W", &device.power_W});  // optional
  if (device.gemm_tiles) {
    f.push_back({"device.gemm_tiles.compute_units", &device.gemm_tiles->compute_units});
    f.push_back({"device.gemm_tiles.tile_rows", &device.gemm_tiles->tile_rows});
    f.push_back({"device.gemm_tiles.tile_cols", &device.gemm_tiles->tile_cols});
    if (device.gemm_tiles->wave_quantization.known())  // optional: absent means 1
      f.push_back({"device.gemm_tiles.wave_quantization", &device.gemm_tiles->wave_quantization});
  }
  if (scale_up.torus) {
    f.push_back({"scale_up.torus.links_per_chip", &scale_up.torus->links_per_chip});
    f.push_back({"scale_up.torus.link_bandwidth_GBps", &scale_up.torus->link_bandwidth_GBps});
    f.push_back({"scale_up.torus.axis_chips", &scale_up.torus->axis_chips});
  }
  if (scale_out.present) {
    f.push_back({"scale_out.bandwidth_GBps", &scale_out.bandwidth_GBps});
    f.push_back({"scale_out.latency_us", &scale_out.latency_us});
  }
  if (reliability) {
    f.push_back({"reliability.node_mtbf_hours", &reliability->node_mtbf_hours});
    f.push_back({"reliability.devices_per_node", &reliability->devices_per_node});
    f.push_back({"reliability.checkpoint_write_GBps", &reliability->checkpoint_write_GBps});
    f.push_back({"reliability.restart_minutes", &reliability->restart_minutes});
  }
  return f;
}

namespace {

// The topology file's reader (core/json_reader.hpp) and the two field kinds only topology
// files have: a figure with its unit and source, and a list of collective algorithms.
using Reader = JsonReader;

Figure figure(const Reader& parent, const std::string& key, bool nullable = false, double min = 0.0,
              double max = 1e18) {
  Reader r = parent.child(key);
  r.allow({"value", "unit", "source", "note"});
  Figure f;
  f.unit = r.str("unit");
  f.source = r.str("source");
  f.note = r.str("note", false);
  const json& v = r.at("value");
  if (v.is_null()) {
    if (!nullable) r.fail("value", "is required (this figure cannot be unknown)");
    if (f.note.empty()) r.fail("note", "a null value needs a note saying why it is unknown");
  } else if (!v.is_number()) {
    r.fail("value", "must be a number or null");
  } else {
    const double x = v.get<double>();
    if (!(x >= min && x <= max))
      r.fail("value", "out of range (" + std::to_string(x) + " not in [" + std::to_string(min) + ", " +
                          std::to_string(max) + "])");
    f.value = x;
  }
  return f;
}

std::vector<Algorithm> algorithms(const Reader& r, const std::string& key) {
  const json& v = r.at(key);
  if (!v.is_array() || v.empty()) r.fail(key, "must be a non-empty list of ring, tree, nvls, sharp");
  std::vector<Algorithm> out;
  for (const auto& e : v) {
    const std::string s = e.is_string() ? e.get<std::string>() : "";
    if (s == "ring")
      out.push_back(Algorithm::ring);
    else if (s == "tree")
      out.push_back(Algorithm::tree);
    else if (s == "nvls")
      out.push_back(Algorithm::nvls);
    else if (s == "sharp")
      out.push_back(Algorithm::sharp);
    else
      r.fail(key, "unknown algorithm " + e.dump() + " (ring, tree, nvls, sharp)");
  }
  return out;
}

Fabric read_fabric(const Reader& r, Fabric f) {
  f.present = true;
  f.name = r.str("name");
  f.bandwidth_GBps = figure(r, "bandwidth_GBps", false, 1e-6);
  f.latency_us = figure(r, "latency_us", false, 0.0);
  f.algorithms = algorithms(r, "algorithms");
  return f;
}

void check_sources(const Topology& t) {
  for (const auto& [path, fig] : t.figures()) {
    if (fig->source.empty()) throw UsageError(t.origin + ": field '" + path + ".source': missing");
    if (!t.find_source(fig->source))
      throw UsageError(t.origin + ": field '" + path + ".source': '" + fig->source + "' is not listed in 'sources'");
  }
  for (const auto& f : t.fits)
    if (!t.find_source(f.source))
      throw UsageError(t.origin + ": field 'fits.source': '" + f.source + "' is not listed in 'sources'");
}

const char* kind_name(SourceKind k) {
  switch (k) {
    case SourceKind::public_ref: return "public";
    case SourceKind::measured: return "measured";
    case SourceKind::assumption: return "assumption";
  }
  return "?";
}

json parse_json(const std::string& json_text, const std::string& origin) {
  try {
    return json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw UsageError(origin + ": not valid JSON: " + e.what());
  }
}

// "sources": every figure's source id, each public, measured or an assumption.
std::vector<Source> read_sources(const Reader& top) {
  const json& sources = top.at("sources");
  if (!sources.is_object() || sources.empty()) top.fail("sources", "must be a non-empty object");
  std::vector<Source> out;
  for (auto it = sources.begin(); it != sources.end(); ++it) {
    Reader s(it.value(), top.origin(), "sources." + it.key());
    s.allow({"kind", "ref"});
    Source src;
    src.id = it.key();
    const std::string kind = s.str("kind");
    if (kind == "public")
      src.kind = SourceKind::public_ref;
    else if (kind == "measured")
      src.kind = SourceKind::measured;
    else if (kind == "assumption")
      src.kind = SourceKind::assumption;
    else
      s.fail("kind", "must be public, measured or assumption");
    src.ref = s.str("ref");
    if (src.ref.empty()) s.fail("ref", "must not be empty");
    if (src.kind == SourceKind::public_ref && src.ref.rfind("http://", 0) != 0 && src.ref.rfind("https://", 0) != 0)
      s.fail("ref", "a public source must start with its http(s) address");
    out.push_back(src);
  }
  return out;
}

// "device.gemm_tiles": whole numbers of units and tile sizes, wave quantization 0 or 1.
GemmTiles read_gemm_tiles(const Reader& tiles) {
  tiles.allow({"compute_units", "tile_rows", "tile_cols", "wave_quantization"});
  GemmTiles g;
  g.compute_units = figure(tiles, "compute_units", false, 1, 1e5);
  g.tile_rows = figure(tiles, "tile_rows", false, 1, 1e5);
  g.tile_cols = figure(tiles, "tile_cols", false, 1, 1e5);
  for (auto [key, fig] :
       {std::pair{"compute_units", &g.compute_units}, {"tile_rows", &g.tile_rows}, {"tile_cols", &g.tile_cols}})
    if (fig->get() != static_cast<long long>(fig->get()))
      tiles.fail(std::string(key) + ".value", "must be a whole number");
  if (tiles.has("wave_quantization")) {
    g.wave_quantization = figure(tiles, "wave_quantization", false, 0, 1);
    if (g.wave_quantization.get() != 0 && g.wave_quantization.get() != 1)
      tiles.fail("wave_quantization.value", "must be 1 (a partial last wave idles units) or 0 (spread over all units)");
  }
  return g;
}

// "device": name, peak TFLOP/s per dtype (fp32 or bf16 at least), memory and, optionally,
// its GEMM tiles.
Device read_device(const Reader& dev) {
  dev.allow({"name", "peak_tflops", "memory_GB", "memory_bandwidth_GBps", "power_W", "gemm_tiles"});
  Device d;
  d.name = dev.str("name");
  Reader peak = dev.child("peak_tflops");
  peak.allow({"fp32", "tf32", "bf16", "fp8"});
  d.fp32 = figure(peak, "fp32", true, 1e-9);
  d.tf32 = figure(peak, "tf32", true, 1e-9);
  d.bf16 = figure(peak, "bf16", true, 1e-9);
  d.fp8 = figure(peak, "fp8", true, 1e-9);
  if (!d.fp32.known() && !d.bf16.known()) peak.fail("", "needs at least fp32 or bf16");
  d.memory_GB = figure(dev, "memory_GB", false, 1e-6);
  d.memory_bandwidth_GBps = figure(dev, "memory_bandwidth_GBps", false, 1e-6);
  if (dev.has("power_W")) d.power_W = figure(dev, "power_W", true, 1, 1e5);
  if (dev.has("gemm_tiles")) d.gemm_tiles = read_gemm_tiles(dev.child("gemm_tiles"));
  return d;
}

// "scale_up.torus".
Torus read_torus(const Reader& tr) {
  tr.allow({"links_per_chip", "link_bandwidth_GBps", "axis_chips"});
  Torus torus;
  torus.links_per_chip = figure(tr, "links_per_chip", false, 1, 64);
  torus.link_bandwidth_GBps = figure(tr, "link_bandwidth_GBps", false, 1e-6);
  torus.axis_chips = figure(tr, "axis_chips", false, 2, 1e6);
  return torus;
}

// "scale_up": the fabric, its whole number of devices per domain and, optionally, a torus.
ScaleUp read_scale_up(const Reader& up) {
  up.allow({"name", "devices_per_domain", "bandwidth_GBps", "latency_us", "algorithms", "torus"});
  ScaleUp s;
  static_cast<Fabric&>(s) = read_fabric(up, Fabric{});
  s.devices_per_domain = figure(up, "devices_per_domain", false, 1, 1e7);
  if (s.devices_per_domain.get() != static_cast<int>(s.devices_per_domain.get()))
    up.fail("devices_per_domain.value", "must be a whole number");
  if (up.has("torus")) s.torus = read_torus(up.child("torus"));
  return s;
}

// "scale_out": the network between domains.
Fabric read_scale_out(const Reader& out) {
  out.allow({"name", "bandwidth_GBps", "latency_us", "algorithms"});
  return read_fabric(out, Fabric{});
}

// "model": the efficiencies and overheads the sim prices with.
ModelParams read_model_params(const Reader& model) {
  model.allow({"collective_launch_us", "gemm_efficiency", "memory_efficiency", "op_overhead_us", "scale_up_efficiency",
               "scale_out_efficiency"});
  ModelParams m;
  m.collective_launch_us = figure(model, "collective_launch_us", false, 0.0, 1e6);
  m.gemm_efficiency = figure(model, "gemm_efficiency", false, 1e-3, 1.0);
  m.memory_efficiency = figure(model, "memory_efficiency", false, 1e-3, 1.0);
  m.op_overhead_us = figure(model, "op_overhead_us", false, 0.0, 1e6);
  m.scale_up_efficiency = figure(model, "scale_up_efficiency", false, 1e-3, 1.0);
  m.scale_out_efficiency = figure(model, "scale_out_efficiency", false, 1e-3, 1.0);
  return m;
}

// One of "fits": a calibrated collective (ibt calibrate).
CollectiveFit read_fit(const Reader& f) {
  f.allow({"op", "scope", "group_size", "alpha_us", "algbw_GBps", "busbw_GBps", "points", "rms_rel_residual",
           "max_rel_residual", "min_bytes", "max_bytes", "source"});
  CollectiveFit c;
  c.op = f.str("op");
  c.scope = f.str("scope");
  if (c.scope != "intra" && c.scope != "inter" && c.scope != "world") f.fail("scope", "must be intra, inter or world");
  c.group_size = static_cast<int>(f.number("group_size"));
  if (c.group_size < 2) f.fail("group_size", "must be >= 2");
  c.alpha_us = f.number("alpha_us");
  c.algbw_GBps = f.number("algbw_GBps");
  if (c.alpha_us < 0) f.fail("alpha_us", "must be >= 0");
  if (!(c.algbw_GBps > 0)) f.fail("algbw_GBps", "must be > 0");
  c.busbw_GBps = f.number("busbw_GBps");
  c.points = static_cast<int>(f.number("points"));
  c.rms_rel_residual = f.number("rms_rel_residual");
  c.max_rel_residual = f.number("max_rel_residual");
  c.min_bytes = f.number("min_bytes");
  c.max_bytes = f.number("max_bytes");
  c.source = f.str("source");
  return c;
}

std::vector<CollectiveFit> read_fits(const Reader& top) {
  const json& fits = top.at("fits");
  if (!fits.is_array()) top.fail("fits", "must be a list");
  std::vector<CollectiveFit> out;
  for (size_t i = 0; i < fits.size(); ++i)
    out.push_back(read_fit(Reader(fits[i], top.origin(), "fits[" + std::to_string(i) + "]")));
  return out;
}

// "reliability": the failure figures goodput is computed from.
Reliability read_reliability(const Reader& rel) {
  rel.allow({"node_mtbf_hours", "devices_per_node", "checkpoint_write_GBps", "restart_minutes"});
  Reliability r;
  r.node_mtbf_hours = figure(rel, "node_mtbf_hours", false, 1e-6);
  r.devices_per_node = figure(rel, "devices_per_node", false, 1, 1e7);
  if (r.devices_per_node.get() != static_cast<int>(r.devices_per_node.get()))
    rel.fail("devices_per_node.value", "must be a whole number");
  r.checkpoint_write_GBps = figure(rel, "checkpoint_write_GBps", false, 1e-9);
  r.restart_minutes = figure(rel, "restart_minutes", false, 0.0, 1e6);
  return r;
}

}  // namespace

Topology parse_topology(const std::string& json_text, const std::string& origin) {
  const json j = parse_json(json_text, origin);
  Reader top(j, origin, "");
  top.allow({"name", "description", "sources", "device", "scale_up", "scale_out", "model", "fits", "reliability"});
  Topology t;
  t.origin = origin;
  t.name = top.str("name");
  if (t.name.empty()) top.fail("name", "must not be empty");
  t.description = top.str("description");
  t.sources = read_sources(top);
  t.device = read_device(top.child("device"));
  t.scale_up = read_scale_up(top.child("scale_up"));
  if (top.has("scale_out")) t.scale_out = read_scale_out(top.child("scale_out"));
  t.model = read_model_params(top.child("model"));
  if (top.has("fits")) t.fits = read_fits(top);
  if (top.has("reliability")) t.reliability = read_reliability(top.child("reliability"));
  check_sources(t);
  return t;
}

namespace {

json figure_json(const Figure& f) {
  json j;
  j["value"] = f.value ? json(*f.value) : json(nullptr);
  j["unit"] = f.unit;
  j["source"] = f.source;
  if (!f.note.empty()) j["note"] = f.note;
  return j;
}

json fabric_json(const Fabric& f) {
  json j;
  j["name"] = f.name;
  j["bandwidth_GBps"] = figure_json(f.bandwidth_GBps);
  j["latency_us"] = figure_json(f.latency_us);
  json algs = json::array();
  for (Algorithm a : f.algorithms) algs.push_back(to_string(a));
  j["algorithms"] = algs;
  return j;
}

}  // namespace

std::string to_json(const Topology& t) {
  json j;
  j["name"] = t.name;
  j["description"] = t.description;
  json sources = json::object();
  for (const auto& s : t.sources) sources[s.id] = {{"kind", kind_name(s.kind)}, {"ref", s.ref}};
  j["sources"] = sources;
  j["device"] = {{"name", t.device.name},
                 {"peak_tflops",
                  {{"fp32", figure_json(t.device.fp32)},
                   {"tf32", figure_json(t.device.tf32)},
                   {"bf16", figure_json(t.device.bf16)},
                   {"fp8", figure_json(t.device.fp8)}}},
                 {"memory_GB", figure_json(t.device.memory_GB)},
                 {"memory_bandwidth_GBps", figure_json(t.device.memory_bandwidth_GBps)}};
  if (!t.device.power_W.source.empty()) j["device"]["power_W"] = figure_json(t.device.power_W);
  if (t.device.gemm_tiles)
    j["device"]["gemm_tiles"] = {{"compute_units", figure_json(t.device.gemm_tiles->compute_units)},
                                 {"tile_rows", figure_json(t.device.gemm_tiles->tile_rows)},
                                 {"tile_cols", figure_json(t.device.gemm_tiles->tile_cols)}};
  if (t.device.gemm_tiles && t.device.gemm_tiles->wave_quantization.known())
    j["device"]["gemm_tiles"]["wave_quantization"] = figure_json(t.device.gemm_tiles->wave_quantization);
  json up = fabric_json(t.scale_up);
  up["devices_per_domain"] = figure_json(t.scale_up.devices_per_domain);
  if (t.scale_up.torus)
    up["torus"] = {{"links_per_chip", figure_json(t.scale_up.torus->links_per_chip)},
                   {"link_bandwidth_GBps", figure_json(t.scale_up.torus->link_bandwidth_GBps)},
                   {"axis_chips", figure_json(t.scale_up.torus->axis_chips)}};
  j["scale_up"] = up;
  if (t.scale_out.present) j["scale_out"] = fabric_json(t.scale_out);
  j["model"] = {{"collective_launch_us", figure_json(t.model.collective_launch_us)},
                {"gemm_efficiency", figure_json(t.model.gemm_efficiency)},
                {"memory_efficiency", figure_json(t.model.memory_efficiency)},
                {"op_overhead_us", figure_json(t.model.op_overhead_us)},
                {"scale_up_efficiency", figure_json(t.model.scale_up_efficiency)},
                {"scale_out_efficiency", figure_json(t.model.scale_out_efficiency)}};
  if (!t.fits.empty()) {
    json fits = json::array();
    for (const auto& f : t.fits)
      fits.push_back({{"op", f.op},
                      {"scope", f.scope},
                      {"group_size", f.group_size},
                      {"alpha_us", f.alpha_us},
                      {"algbw_GBps", f.algbw_GBps},
                      {"busbw_GBps", f.busbw_GBps},
                      {"points", f.points},
                      {"rms_rel_residual", f.rms_rel_residual},
                      {"max_rel_residual", f.max_rel_residual},
                      {"min_bytes", f.min_bytes},
                      {"max_bytes", f.max_bytes},
                      {"source", f.source}});
    j["fits"] = fits;
  }
  if (t.reliability)
    j["reliability"] = {{"node_mtbf_hours", figure_json(t.reliability->node_mtbf_hours)},
                        {"devices_per_node", figure_json(t.reliability->devices_per_node)},
                        {"checkpoint_write_GBps", figure_json(t.reliability->checkpoint_write_GBps)},
                        {"restart_minutes", figure_json(t.reliability->restart_minutes)}};
  return j.dump(2) + "\n";
}

std::string catalog_dir() { return data_dir("IBT_TOPOLOGIES_DIR", "topologies/catalog", IBT_TOPOLOGIES_DIR); }

std::vector<std::string> catalog_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(catalog_dir(), ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

Topology load_topology(const std::string& name_or_path) {
  const bool is_path = names_a_path(name_or_path);
  const std::string path = catalog_file(name_or_path, catalog_dir());
  require_input_file(path, "topology file");
  std::ifstream in(path);
  if (!in) {
    if (is_path) throw UsageError("topology file '" + path + "' cannot be read");
    const std::vector<std::string> names = catalog_names();
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    const std::string close = closest_name(name_or_path, names);
    throw UsageError("unknown topology '" + name_or_path + "' (" +
                     (close.empty() ? "" : "did you mean '" + close + "'? ") + "catalog: " + known +
                     "; or give a path to a .json file)");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_topology(ss.str(), path);
}

Topology with_fabric(const Topology& base, int devices_per_domain, double scale_out_gbps) {
  if (devices_per_domain < 1) throw UsageError("domain size must be >= 1");
  if (!(scale_out_gbps > 0)) throw UsageError("scale-out bandwidth must be > 0 Gb/s");
  Topology t = base;
  const std::string id = "crossover-grid";
  if (!t.find_source(id))
    t.sources.push_back({id, SourceKind::assumption,
                         "a cell of the `ibt crossover` grid: the domain size and scale-out "
                         "bandwidth are swept, every other figure is the base topology's"});
  t.name = base.name + "@d" + std::to_string(devices_per_domain) + "-" +
           std::to_string(static_cast<long long>(scale_out_gbps)) + "G";
  t.scale_up.devices_per_domain = {static_cast<double>(devices_per_domain), "devices", id, ""};
  if (!t.scale_out.present) {
    // The base has one domain only: borrow the network figures a DGX uses.
    t.scale_out.present = true;
    t.scale_out.name = "swept scale-out network";
    t.scale_out.latency_us = {2.7, "us", id, "per ring step (NCCL's network figure)"};
    t.scale_out.algorithms = {Algorithm::ring, Algorithm::tree};
  }
  t.scale_out.bandwidth_GBps = {scale_out_gbps / 8.0, "GB/s", id, "unidirectional per device"};
  t.fits.clear();  // fits describe the measured fabric, not a swept one
  return t;
}

}  // namespace ibt::topo
