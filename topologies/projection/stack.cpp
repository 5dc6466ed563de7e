#include "topologies/projection/stack.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/catalog_file.hpp"
#include "core/data_dirs.hpp"
#include "core/did_you_mean.hpp"
#include "core/errors.hpp"
#include "core/input_file.hpp"
#include "core/json_reader.hpp"
#include "core/text_wrap.hpp"
#include "topologies/projection/framework.hpp"
#include "topologies/projection/projection.hpp"

namespace ibt::topo {

using nlohmann::json;

namespace {

// Every element of the array at `key` as a reader of its own ("generations[1]").
std::vector<JsonReader> objects(const JsonReader& r, const std::string& key) {
  const json& v = r.at(key);
  if (!v.is_array() || v.empty()) r.fail(key, "must be a non-empty list");
  std::vector<JsonReader> out;
  for (size_t i = 0; i < v.size(); ++i)
    out.emplace_back(v[i], r.origin(), r.path_of(key) + "[" + std::to_string(i) + "]");
  return out;
}

std::vector<double> numbers(const JsonReader& r, const std::string& key, double min, double max) {
  const json& v = r.at(key);
  if (!v.is_array() || v.empty()) r.fail(key, "must be a non-empty list of numbers");
  std::vector<double> out;
  for (const json& x : v) {
    if (!x.is_number()) r.fail(key, "must be a non-empty list of numbers");
    const double d = x.get<double>();
    if (!(d >= min && d <= max))
      r.fail(key,
             "value " + std::to_string(d) + " out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    out.push_back(d);
  }
  return out;
}

std::vector<std::string> strings(const JsonReader& r, const std::string& key) {
  const json& v = r.at(key);
  if (!v.is_array() || v.empty()) r.fail(key, "must be a non-empty list of strings");
  std::vector<std::string> out;
  for (const json& x : v) {
    if (!x.is_string() || x.get<std::string>().empty()) r.fail(key, "must be a non-empty list of strings");
    out.push_back(x.get<std::string>());
  }
  return out;
}

// {"value", "source", "note"}: the source must be one of the file's.
template <typename T>
void sourced(const JsonReader& r, const SoftwareStack& s, T& out) {
  r.allow({"value", "source", "note"});
  out.source = r.str("source");
  out.note = r.str("note", false);
  if (!s.find_source(out.source)) r.fail("source", "'" + out.source + "' is not listed in 'sources'");
}

StackFigure figure(const JsonReader& parent, const std::string& key, const SoftwareStack& s, double min, double max) {
  const JsonReader r = parent.child(key);
  StackFigure f;
  sourced(r, s, f);
  f.value = r.number("value");
  if (!(f.value >= min && f.value <= max))
    r.fail("value", "out of range (" + std::to_string(f.value) + " not in [" + std::to_string(min) + ", " +
                        std::to_string(max) + "])");
  return f;
}

StackSwitch on_off(const JsonReader& parent, const std::string& key, const SoftwareStack& s) {
  const JsonReader r = parent.child(key);
  StackSwitch f;
  sourced(r, s, f);
  if (!r.at("value").is_boolean()) r.fail("value", "must be true or false");
  f.value = r.at("value").get<bool>();
  return f;
}

// "elementwise": {"value": "eager" | "fused", "source": id}.
StackSwitch elementwise(const JsonReader& parent, const SoftwareStack& s) {
  const JsonReader r = parent.child("elementwise");
  StackSwitch f;
  sourced(r, s, f);
  const json& v = r.at("value");
  const std::string value = v.is_string() ? v.get<std::string>() : "";
  if (value != "eager" && value != "fused") r.fail("value", "must be \"eager\" (one kernel per operator) or \"fused\"");
  f.value = value == "eager";
  return f;
}

AttentionCurve curve(const JsonReader& r) {
  r.allow({"head_dim", "seq_lens", "forward_TFLOPs", "backward_TFLOPs"});
  AttentionCurve c;
  c.head_dim = static_cast<int>(r.integer("head_dim", 1, 4096));
  c.seq_lens = numbers(r, "seq_lens", 1, 1e9);
  c.forward_TFLOPs = numbers(r, "forward_TFLOPs", 1e-3, 1e6);
  c.backward_TFLOPs = numbers(r, "backward_TFLOPs", 1e-3, 1e6);
  for (size_t i = 1; i < c.seq_lens.size(); ++i)
    if (!(c.seq_lens[i] > c.seq_lens[i - 1])) r.fail("seq_lens", "must increase");
  if (c.forward_TFLOPs.size() != c.seq_lens.size()) r.fail("forward_TFLOPs", "needs one value per seq_lens entry");
  if (c.backward_TFLOPs.size() != c.seq_lens.size()) r.fail("backward_TFLOPs", "needs one value per seq_lens entry");
  return c;
}

AttentionKernel attention(const JsonReader& r, const SoftwareStack& s) {
  r.allow({"kernel", "source", "note", "causal_work_fraction", "backward_work_ratio", "curves"});
  AttentionKernel a;
  a.kernel = r.str("kernel");
  a.source = r.str("source");
  a.note = r.str("note", false);
  if (!s.find_source(a.source)) r.fail("source", "'" + a.source + "' is not listed in 'sources'");
  a.causal_work_fraction = figure(r, "causal_work_fraction", s, 1e-3, 1);
  a.backward_work_ratio = figure(r, "backward_work_ratio", s, 1, 10);
  for (const JsonReader& c : objects(r, "curves")) a.curves.push_back(curve(c));
  for (size_t i = 1; i < a.curves.size(); ++i)
    if (a.curves[i].head_dim <= a.curves[i - 1].head_dim) r.fail("curves", "head dims must increase");
  return a;
}

StackGeneration generation(const JsonReader& r, const SoftwareStack& s) {
  r.allow({"name", "devices", "gemm_efficiency", "memory_efficiency", "op_overhead_us", "attention"});
  StackGeneration g;
  g.name = r.str("name");
  g.devices = strings(r, "devices");
  if (r.has("gemm_efficiency")) g.gemm_efficiency = figure(r, "gemm_efficiency", s, 1e-3, 1);
  if (r.has("memory_efficiency")) g.memory_efficiency = figure(r, "memory_efficiency", s, 1e-3, 1);
  if (r.has("op_overhead_us")) g.op_overhead_us = figure(r, "op_overhead_us", s, 0, 1e4);
  if (r.has("attention")) g.attention = attention(r.child("attention"), s);
  return g;
}

StackHeldOut held_out(const JsonReader& r, const SoftwareStack& s) {
  r.allow({"rows", "min_error", "median_error", "max_error", "source", "note"});
  StackHeldOut h;
  h.rows = static_cast<int>(r.integer("rows", 1, 100000));
  h.source = r.str("source");
  h.note = r.str("note", false);
  if (!s.find_source(h.source)) r.fail("source", "'" + h.source + "' is not listed in 'sources'");
  const auto error = [&](const char* key) {
    const double e = r.number(key);
    if (!(e > -1 && e < 100))
      r.fail(key, "must be an error projected / published - 1, above -1 (got " + std::to_string(e) + ")");
    return e;
  };
  h.min_error = error("min_error");
  h.median_error = error("median_error");
  h.max_error = error("max_error");
  if (!(h.min_error <= h.median_error && h.median_error <= h.max_error))
    r.fail("median_error", "must lie between min_error and max_error");
  return h;
}

void read_sources(const JsonReader& r, SoftwareStack& s) {
  const json& v = r.at("sources");
  if (!v.is_object() || v.empty()) r.fail("sources", "must be an object of id: reference");
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!it->is_string() || it->get<std::string>().empty())
      r.fail("sources." + it.key(), "must be a non-empty reference string");
    s.sources.emplace_back(it.key(), it->get<std::string>());
  }
}

// The rate at `seq_len` on one curve: linear in log2(seq_len), held at the ends.
double along(const AttentionCurve& c, const std::vector<double>& rate, double seq_len) {
  if (seq_len <= c.seq_lens.front()) return rate.front();
  if (seq_len >= c.seq_lens.back()) return rate.back();
  size_t i = 1;
  while (c.seq_lens[i] < seq_len) ++i;
  const double t = std::log2(seq_len / c.seq_lens[i - 1]) / std::log2(c.seq_lens[i] / c.seq_lens[i - 1]);
  return rate[i - 1] + t * (rate[i] - rate[i - 1]);
}

// The curve whose head dim is nearest (by ratio) to `head_dim`.
const AttentionCurve& nearest(const std::vector<AttentionCurve>& curves, double head_dim) {
  const AttentionCurve* best = &curves.front();
  for (const AttentionCurve& c : curves)
    if (std::abs(std::log(c.head_dim / head_dim)) < std::abs(std::log(best->head_dim / head_dim))) best = &c;
  return *best;
}

}  // namespace

double AttentionKernel::forward_TFLOPs(double seq_len, double head_dim) const {
  const AttentionCurve& c = nearest(curves, head_dim);
  return along(c, c.forward_TFLOPs, seq_len);
}

double AttentionKernel::backward_TFLOPs(double seq_len, double head_dim) const {
  const AttentionCurve& c = nearest(curves, head_dim);
  return along(c, c.backward_TFLOPs, seq_len);
}

const std::string* SoftwareStack::find_source(const std::string& id) const {
  for (const auto& [key, ref] : sources)
    if (key == id) return &ref;
  return nullptr;
}

const StackGeneration& SoftwareStack::generation_for(const std::string& device_name) const {
  std::string known;
  for (const StackGeneration& g : generations) {
    for (const std::string& d : g.devices)
      if (device_name.find(d) != std::string::npos) return g;
    known += (known.empty() ? "" : "; ") + g.name + " (";
    for (size_t i = 0; i < g.devices.size(); ++i) known += (i ? ", " : "") + g.devices[i];
    known += ")";
  }
  throw UsageError("stack '" + name + "' has no figures for " + device_name + " (its generations: " + known +
                   "); project that device without --stack, or add a generation to " + origin);
}

SoftwareStack parse_stack(const std::string& json_text, const std::string& origin) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw UsageError(origin + ": not valid JSON (" + e.what() + ")");
  }
  const JsonReader r(j, origin);
  r.allow(
      {"name", "description", "framework", "sources", "overlap", "elementwise", "notes", "held_out", "generations"});
  SoftwareStack s;
  s.origin = origin;
  s.name = r.str("name");
  s.description = r.str("description");
  s.framework = r.str("framework");
  try {
    framework_profile(s.framework);
  } catch (const UsageError& e) {
    r.fail("framework", e.what());
  }
  read_sources(r, s);
  const JsonReader o = r.child("overlap");
  o.allow({"grad_reduce", "tp_comm", "dispatch_overlaps_compute", "fsdp_prefetch_units"});
  s.overlap_grad_reduce = on_off(o, "grad_reduce", s);
  s.tp_comm_overlap = on_off(o, "tp_comm", s);
  s.dispatch_overlaps_compute = on_off(o, "dispatch_overlaps_compute", s);
  s.fsdp_prefetch_units = figure(o, "fsdp_prefetch_units", s, 0, 64);
  // The step program gathers one unit ahead (models/plan/step_program.hpp): a stack that
  // documents another depth would be priced as if it were 1, so it is refused instead.
  if (s.fsdp_prefetch_units.value != 1)
    o.fail("fsdp_prefetch_units.value", "only 1 (one unit gathered ahead) is modelled by the step program");
  if (r.has("elementwise")) s.eager_elementwise = elementwise(r, s);
  if (r.has("notes")) s.notes = strings(r, "notes");
  if (r.has("held_out")) s.held_out = held_out(r.child("held_out"), s);
  for (const JsonReader& g : objects(r, "generations")) s.generations.push_back(generation(g, s));
  return s;
}

std::string stacks_dir() { return data_dir("IBT_STACKS_DIR", "topologies/stacks", IBT_STACKS_DIR); }

std::vector<std::string> stack_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(stacks_dir(), ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

SoftwareStack load_stack(const std::string& name_or_path) {
  const std::string path = catalog_file(name_or_path, stacks_dir());
  if (!names_a_path(name_or_path) && !std::filesystem::exists(path)) {
    const std::vector<std::string> names = stack_names();
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    const std::string close = closest_name(name_or_path, names);
    throw UsageError("--stack: unknown stack '" + name_or_path + "' (" +
                     (close.empty() ? "" : "did you mean '" + close + "'? ") + "known: " + known +
                     "; or give a path to a .json file)");
  }
  require_input_file(path, "stack file");
  std::ifstream in(path);
  if (!in) throw UsageError("stack file '" + path + "' cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_stack(ss.str(), path);
}

namespace {
Figure stack_figure(const SoftwareStack& stack, const StackFigure& f, const std::string& unit) {
  return {f.value, unit, "stack:" + stack.name, f.source + (f.note.empty() ? "" : ": " + f.note)};
}
}  // namespace

void apply_stack(const SoftwareStack& stack, const models::ModelConfig& model, Topology& topology,
                 ProjectionOptions& options) {
  const StackGeneration& g = stack.generation_for(topology.device.name);
  if (options.dtype != "bf16")
    throw UsageError("--stack " + stack.name + ": its kernels were measured in bf16; --dtype " + options.dtype +
                     " has no stack figures (project it without --stack)");
  apply(framework_profile(stack.framework), options);
  options.overlap_grad_reduce = stack.overlap_grad_reduce.value;
  options.tp_comm_overlap = stack.tp_comm_overlap.value;
  options.dispatch_overlaps_compute = stack.dispatch_overlaps_compute.value;
  options.eager_elementwise = stack.eager_elementwise.value;
  const std::string id = "stack:" + stack.name;
  if (!topology.find_source(id))
    topology.sources.push_back({id, SourceKind::public_ref, stack.origin + " (" + stack.description + ")"});
  if (g.gemm_efficiency) topology.model.gemm_efficiency = stack_figure(stack, *g.gemm_efficiency, "fraction");
  if (g.memory_efficiency) topology.model.memory_efficiency = stack_figure(stack, *g.memory_efficiency, "fraction");
  if (g.op_overhead_us) topology.model.op_overhead_us = stack_figure(stack, *g.op_overhead_us, "us");
  if (!g.attention) return;
  // The kernel's TFLOP/s count causal_work_fraction of the full-sequence FLOPs forward and
  // backward_work_ratio times that backward; ibt's ops count the full sequence and twice
  // the forward backward: the rate per ibt FLOP is the kernel's over its share.
  const AttentionKernel& a = *g.attention;
  const double seq = model.seq_len, head_dim = model.qk_head_dim();
  const double forward_share = a.causal_work_fraction.value;
  const double backward_share = a.causal_work_fraction.value * a.backward_work_ratio.value / 2.0;
  options.attention_forward_flops_per_us = a.forward_TFLOPs(seq, head_dim) * 1e6 / forward_share;
  options.attention_backward_flops_per_us = a.backward_TFLOPs(seq, head_dim) * 1e6 / backward_share;
}

std::string describe_stack(const SoftwareStack& stack, const models::ModelConfig& model, const Topology& topology) {
  const StackGeneration& g = stack.generation_for(topology.device.name);
  std::string rates;
  if (g.attention) {
    char numbers[128];
    std::snprintf(numbers, sizeof numbers, " %.0f/%.0f TFLOP/s fwd/bwd at seq %d, head dim %d",
                  g.attention->forward_TFLOPs(model.seq_len, model.qk_head_dim()),
                  g.attention->backward_TFLOPs(model.seq_len, model.qk_head_dim()), model.seq_len, model.qk_head_dim());
    rates = ", attention " + g.attention->kernel + numbers;
  }
  if (stack.eager_elementwise.value) rates += ", element-wise ops eager (one kernel each)";
  std::string out = "stack: " + stack.name + " (" + stack.origin + "), generation " + g.name + rates + "\n";
  if (stack.held_out) {
    // Said beside every projection with the stack: the MFU band printed below pools other
    // stacks' published runs, and this is what the stack's own runs say.
    const StackHeldOut& h = *stack.held_out;
    const std::string& ref = *stack.find_source(h.source);
    const std::string where = ref.substr(0, ref.find(": "));  // the file, not its description
    // Only the figures go through snprintf: the source's path has no bound.
    char errors[96];
    std::snprintf(errors, sizeof errors, "%+.0f%% to %+.0f%% against published (median %+.0f%%", 100 * h.min_error,
                  100 * h.max_error, 100 * h.median_error);
    const std::string line =
        "held out: on " + std::to_string(h.rows) + " published run" + (h.rows == 1 ? "" : "s") +
        " of this stack that fitted nothing, projected tokens/s ran " + errors + "; " + where +
        "); calibrate on your own runs (ibt calibrate --from-log) before trusting this projection\n";
    out += wrap_lines(line, kReportColumns, 10);
  }
  return out;
}

}  // namespace ibt::topo
