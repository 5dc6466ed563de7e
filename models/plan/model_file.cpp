#include "models/plan/model_file.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/catalog_file.hpp"
#include "core/data_dirs.hpp"
#include "core/did_you_mean.hpp"
#include "core/errors.hpp"
#include "core/input_file.hpp"
#include "core/json_reader.hpp"

#ifndef IBT_MODELS_DIR
#define IBT_MODELS_DIR "models/catalog"
#endif

namespace ibt::models {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string& origin, const std::string& field, const std::string& why) {
  throw UsageError("model file " + origin + ": field '" + field + "' " + why);
}

int get_int(const json& v, const std::string& origin, const std::string& field, int min_value) {
  if (!v.is_number_integer()) fail(origin, field, "must be an integer");
  const auto x = v.get<long long>();
  if (x < min_value || x > 1'000'000'000)
    fail(origin, field, "out of range (" + std::to_string(x) + ", expected >= " + std::to_string(min_value) + ")");
  return static_cast<int>(x);
}

double get_real(const json& v, const std::string& origin, const std::string& field) {
  if (!v.is_number()) fail(origin, field, "must be a number");
  const double x = v.get<double>();
  if (!(x >= 0.0 && x < 1e6)) fail(origin, field, "out of range (" + std::to_string(x) + ", expected >= 0 and < 1e6)");
  return x;
}

std::string get_string(const json& v, const std::string& origin, const std::string& field) {
  if (!v.is_string()) fail(origin, field, "must be a string");
  return v.get<std::string>();
}

template <class E>
E get_enum(const json& v, const std::string& origin, const std::string& field,
           std::initializer_list<std::pair<const char*, E>> values) {
  const std::string s = get_string(v, origin, field);
  std::string expected;
  for (auto& [name, e] : values) {
    if (s == name) return e;
    expected += (expected.empty() ? "" : ", ") + std::string(name);
  }
  fail(origin, field, "has unknown value '" + s + "' (expected one of " + expected + ")");
}

}  // namespace

std::string catalog_dir() { return data_dir("IBT_MODELS_DIR", "models/catalog", IBT_MODELS_DIR); }

std::vector<std::string> catalog_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(catalog_dir(), ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  if (ec) throw UsageError("model catalog " + catalog_dir() + " cannot be read: " + ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

ModelConfig parse_model(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw UsageError("model file " + origin + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw UsageError("model file " + origin + ": top level must be an object");

  ModelConfig m;
  bool kv_given = false;
  const std::map<std::string, std::function<void(const json&, const std::string&)>> fields = {
      {"name", [&](const json& v, const std::string& f) { m.name = get_string(v, origin, f); }},
      {"source", [&](const json& v, const std::string& f) { m.source = get_string(v, origin, f); }},
      {"notes", [&](const json& v, const std::string& f) { get_string(v, origin, f); }},
      {"layers", [&](const json& v, const std::string& f) { m.layers = get_int(v, origin, f, 1); }},
      {"hidden", [&](const json& v, const std::string& f) { m.hidden = get_int(v, origin, f, 1); }},
      {"heads", [&](const json& v, const std::string& f) { m.heads = get_int(v, origin, f, 1); }},
      {"head_dim", [&](const json& v, const std::string& f) { m.explicit_head_dim = get_int(v, origin, f, 1); }},
      {"kv_heads",
       [&](const json& v, const std::string& f) {
         m.kv_heads = get_int(v, origin, f, 1);
         kv_given = true;
       }},
      {"ffn_hidden", [&](const json& v, const std::string& f) { m.ffn_hidden = get_int(v, origin, f, 1); }},
      {"vocab", [&](const json& v, const std::string& f) { m.vocab = get_int(v, origin, f, 2); }},
      {"seq_len", [&](const json& v, const std::string& f) { m.seq_len = get_int(v, origin, f, 1); }},
      {"norm",
       [&](const json& v, const std::string& f) {
         m.norm = get_enum<Norm>(v, origin, f, {{"rmsnorm", Norm::rmsnorm}, {"layernorm", Norm::layernorm}});
       }},
      {"activation",
       [&](const json& v, const std::string& f) {
         m.activation =
             get_enum<Activation>(v, origin, f, {{"gelu", Activation::gelu}, {"swiglu", Activation::swiglu}});
       }},
      {"tied_embeddings",
       [&](const json& v, const std::string& f) {
         if (!v.is_boolean()) fail(origin, f, "must be true or false");
         m.tied_embeddings = v.get<bool>();
       }},
      {"parallel_block",
       [&](const json& v, const std::string& f) {
         if (!v.is_boolean()) fail(origin, f, "must be true or false");
         m.parallel_block = v.get<bool>();
       }},
      {"attention",
       [&](const json& v, const std::string& f) {
         m.attention = get_enum<Attention>(v, origin, f, {{"standard", Attention::standard}, {"mla", Attention::mla}});
       }},
      {"q_lora_rank", [&](const json& v, const std::string& f) { m.q_lora_rank = get_int(v, origin, f, 0); }},
      {"kv_lora_rank", [&](const json& v, const std::string& f) { m.kv_lora_rank = get_int(v, origin, f, 1); }},
      {"qk_nope_head_dim", [&](const json& v, const std::string& f) { m.qk_nope_head_dim = get_int(v, origin, f, 1); }},
      {"qk_rope_head_dim", [&](const json& v, const std::string& f) { m.qk_rope_head_dim = get_int(v, origin, f, 0); }},
      {"v_head_dim", [&](const json& v, const std::string& f) { m.v_head_dim = get_int(v, origin, f, 1); }},
      {"num_experts", [&](const json& v, const std::string& f) { m.num_experts = get_int(v, origin, f, 0); }},
      {"top_k", [&](const json& v, const std::string& f) { m.top_k = get_int(v, origin, f, 0); }},
      {"shared_experts", [&](const json& v, const std::string& f) { m.shared_experts = get_int(v, origin, f, 0); }},
      {"expert_ffn_hidden",
       [&](const json& v, const std::string& f) { m.expert_ffn_hidden = get_int(v, origin, f, 0); }},
      {"first_dense_layers",
       [&](const json& v, const std::string& f) { m.first_dense_layers = get_int(v, origin, f, 0); }},
      {"balance",
       [&](const json& v, const std::string& f) {
         m.balance = get_enum<RoutingBalance>(v, origin, f,
                                              {{"none", RoutingBalance::none},
                                               {"aux_loss", RoutingBalance::aux_loss},
                                               {"aux_loss_free", RoutingBalance::aux_loss_free}});
       }},
      {"aux_loss_coeff", [&](const json& v, const std::string& f) { m.aux_loss_coeff = get_real(v, origin, f); }},
      {"bias_update_rate", [&](const json& v, const std::string& f) { m.bias_update_rate = get_real(v, origin, f); }},
      {"route_groups", [&](const json& v, const std::string& f) { m.route_groups = get_int(v, origin, f, 0); }},
      {"route_group_limit",
       [&](const json& v, const std::string& f) { m.route_group_limit = get_int(v, origin, f, 0); }},
  };
  for (const auto& [key, value] : j.items()) {
    auto it = fields.find(key);
    if (it == fields.end()) {
      std::vector<std::string> known;
      for (const auto& field : fields) known.push_back(field.first);
      fail(origin, key, "is not a model field" + unknown_name_hint(key, known));
    }
    it->second(value, key);
  }
  for (const char* required : {"name", "source", "layers", "hidden", "heads", "ffn_hidden", "vocab", "seq_len"})
    if (!j.contains(required)) fail(origin, required, "is missing");
  if (!kv_given) m.kv_heads = m.heads;
  validate_model(m, origin);
  return m;
}

namespace {

// Sizes no planner should walk: every command loops over the layers and sizes its plans
// from the parameter count, so a file saying 1e9 layers would run for minutes or exhaust
// memory before any memory check could speak. Refused here, with the closed-form count.
void refuse_absurd_sizes(const ModelConfig& m, const std::string& origin) {
  constexpr int kMaxLayers = 10000;              // the deepest published LLMs have under 200
  constexpr double kMaxParameters = 1e14;        // 100x the largest catalog model (kimi-k2, about 1e12)
  constexpr long long kMaxSequence = 100000000;  // 100M tokens: 10x the longest published context
  if (m.layers > kMaxLayers)
    fail(origin, "layers",
         std::to_string(m.layers) + " is beyond " + std::to_string(kMaxLayers) +
             ", the most ibt plans (the deepest published LLMs have under 200 layers)");
  if (m.seq_len > kMaxSequence)
    fail(origin, "seq_len", std::to_string(m.seq_len) + " tokens is beyond " + std::to_string(kMaxSequence));
  // Weights, closed form: attention projections, the MLP (every expert of a MoE layer) and
  // the embeddings; an upper bound good enough to tell a typo from a model.
  const double h = m.hidden, d = m.head_dim();
  const double attention = h * d * (2.0 * m.heads + 2.0 * m.kv_heads);
  const double dense_mlp = 3.0 * h * m.ffn_hidden;
  const double moe_mlp = 3.0 * h * m.expert_ffn_hidden * (m.num_experts + m.shared_experts);
  const double moe_layers = m.num_experts > 0 ? m.layers - m.first_dense_layers : 0;
  const double parameters =
      m.layers * attention + (m.layers - moe_layers) * dense_mlp + moe_layers * moe_mlp + 2.0 * m.vocab * h;
  if (parameters > kMaxParameters) {
    char text[256];
    std::snprintf(text, sizeof text,
                  "gives the model about %.3g parameters (%.3g bytes of bf16 weights), beyond the %.0g ibt "
                  "plans; check layers, hidden, ffn_hidden, vocab and num_experts",
                  parameters, 2 * parameters, kMaxParameters);
    fail(origin, "hidden", text);
  }
}

}  // namespace

void validate_model(const ModelConfig& m, const std::string& origin) {
  auto need = [&](bool ok, const char* field, const std::string& why) {
    if (!ok) fail(origin, field, why);
  };
  need(!m.name.empty(), "name", "must not be empty");
  need(!m.source.empty(), "source", "must cite where the shape comes from");
  need(m.layers >= 1 && m.hidden >= 1 && m.heads >= 1, "layers", "layers, hidden and heads must be >= 1");
  need(m.kv_heads >= 1 && m.heads % m.kv_heads == 0, "kv_heads", "must divide heads (" + std::to_string(m.heads) + ")");
  if (m.attention == Attention::standard) {
    if (m.explicit_head_dim == 0)
      need(m.hidden % m.heads == 0, "heads",
           "must divide hidden (" + std::to_string(m.hidden) + "), or give \"head_dim\"");
    need(m.q_lora_rank == 0 && m.kv_lora_rank == 0 && m.qk_nope_head_dim == 0 && m.qk_rope_head_dim == 0 &&
             m.v_head_dim == 0,
         "attention", "MLA fields (q_lora_rank, kv_lora_rank, qk_*_head_dim, v_head_dim) need \"attention\": \"mla\"");
  } else {
    need(m.kv_lora_rank > 0, "kv_lora_rank", "must be > 0 with mla attention");
    need(m.qk_nope_head_dim > 0, "qk_nope_head_dim", "must be > 0 with mla attention");
    need(m.v_head_dim > 0, "v_head_dim", "must be > 0 with mla attention");
    need(m.kv_heads == m.heads, "kv_heads", "must equal heads with mla attention");
    need(m.explicit_head_dim == 0, "head_dim", "is for standard attention (mla gives qk_*_head_dim, v_head_dim)");
  }
  if (m.num_experts > 0) {
    need(m.top_k >= 1 && m.top_k <= m.num_experts, "top_k",
         "must be in 1..num_experts (" + std::to_string(m.num_experts) + ")");
    need(m.expert_ffn_hidden >= 1, "expert_ffn_hidden", "must be >= 1 for an MoE model");
    need(m.first_dense_layers < m.layers, "first_dense_layers", "must be < layers (" + std::to_string(m.layers) + ")");
    need(m.balance != RoutingBalance::aux_loss || m.aux_loss_coeff > 0, "aux_loss_coeff",
         "must be > 0 with \"balance\": \"aux_loss\"");
    need(m.balance != RoutingBalance::aux_loss_free || m.bias_update_rate > 0, "bias_update_rate",
         "must be > 0 with \"balance\": \"aux_loss_free\"");
    need((m.route_groups == 0) == (m.route_group_limit == 0), "route_group_limit",
         "and route_groups are given together (node-limited routing) or not at all");
    if (m.route_groups > 0) {
      need(m.num_experts % m.route_groups == 0, "route_groups",
           "must divide num_experts (" + std::to_string(m.num_experts) + ")");
      need(m.route_group_limit <= m.route_groups, "route_group_limit",
           "must be in 1..route_groups (" + std::to_string(m.route_groups) + ")");
      need(static_cast<long long>(m.route_group_limit) * (m.num_experts / m.route_groups) >= m.top_k,
           "route_group_limit", "leaves fewer experts than top_k (" + std::to_string(m.top_k) + ")");
    }
  } else {
    need(m.top_k == 0 && m.shared_experts == 0 && m.expert_ffn_hidden == 0 && m.first_dense_layers == 0 &&
             m.balance == RoutingBalance::none && m.route_groups == 0 && m.route_group_limit == 0,
         "num_experts", "is 0 (dense model) but MoE fields are set");
  }
  refuse_absurd_sizes(m, origin);
}

ModelConfig load_model(const std::string& name_or_path) {
  const bool is_path = names_a_path(name_or_path);
  const std::string path = catalog_file(name_or_path, catalog_dir());
  require_input_file(path, "model file");
  std::ifstream in(path);
  if (!in) {
    if (is_path) throw UsageError("model file " + path + " cannot be opened");
    std::vector<std::string> names;
    try {
      names = catalog_names();
    } catch (const UsageError&) {
    }
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    const std::string close = closest_name(name_or_path, names);
    throw UsageError("unknown model '" + name_or_path + "' (" +
                     (close.empty() ? "" : "did you mean '" + close + "'? ") + "catalog " + catalog_dir() +
                     " has: " + known + ")");
  }
  std::stringstream text;
  text << in.rdbuf();
  return parse_model(text.str(), path);
}

}  // namespace ibt::models
