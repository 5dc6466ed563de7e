// Model files: the catalog parses, and every malformed file is rejected with a message
// naming the file and the field.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/errors.hpp"
#include "models/plan/model_file.hpp"

namespace ibt::models {
namespace {

const char* kGood = R"({"name": "m", "source": "test", "layers": 2, "hidden": 32,
  "heads": 4, "ffn_hidden": 64, "vocab": 100, "seq_len": 8})";

std::string error_of(const std::string& text) {
  try {
    parse_model(text, "bad.json");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// kGood's JSON with `extra` fields appended.
std::string with(const std::string& extra) {
  std::string s = kGood;
  s.insert(s.size() - 1, ", " + extra);
  return s;
}

TEST(PlanModelFile, CatalogHasEveryModelAndEachParses) {
  const auto names = catalog_names();
  for (const char* want : {"tiny-dense", "tiny-moe", "small-dense", "gpt3-175b", "llama3-8b", "llama3-70b",
                           "llama3-405b", "mixtral-8x7b", "deepseek-v3", "kimi-k2"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  for (const auto& n : names) {
    const ModelConfig m = load_model(n);
    EXPECT_EQ(m.name, n) << "file name and \"name\" differ";
    EXPECT_GT(m.source.size(), 10u) << n << " must cite its source";
  }
}

TEST(PlanModelFile, LoadsTinyMoeFields) {
  const ModelConfig m = load_model("tiny-moe");
  EXPECT_EQ(m.layers, 4);
  EXPECT_EQ(m.hidden, 64);
  EXPECT_EQ(m.heads, 4);
  EXPECT_EQ(m.kv_heads, 2);
  EXPECT_EQ(m.num_experts, 8);
  EXPECT_EQ(m.top_k, 2);
  EXPECT_EQ(m.shared_experts, 1);
  EXPECT_EQ(m.expert_ffn_hidden, 64);
  EXPECT_EQ(m.first_dense_layers, 1);
  EXPECT_EQ(m.balance, RoutingBalance::aux_loss_free);
  EXPECT_FALSE(m.layer_is_moe(0));
  EXPECT_TRUE(m.layer_is_moe(1));
  const ModelConfig d = load_model("deepseek-v3");
  EXPECT_EQ(d.attention, Attention::mla);
  EXPECT_EQ(d.qk_head_dim(), 192);
  EXPECT_EQ(d.value_head_dim(), 128);
}

TEST(PlanModelFile, DefaultsKvHeadsToHeads) { EXPECT_EQ(parse_model(kGood, "x").kv_heads, 4); }

TEST(PlanModelFile, ErrorsNameFileAndField) {
  struct Case {
    std::string text, field, why;
  };
  const std::vector<Case> cases = {
      {R"({"name": "m", "source": "s", "hidden": 32, "heads": 4, "ffn_hidden": 64, "vocab": 100, "seq_len": 8})",
       "layers", "is missing"},
      {with(R"("layer": 3)"), "layer", "not a model field"},
      {R"({"name": "m", "source": "s", "layers": "2", "hidden": 32, "heads": 4, "ffn_hidden": 64, "vocab": 100, "seq_len": 8})",
       "layers", "must be an integer"},
      {R"({"name": "m", "source": "s", "layers": 0, "hidden": 32, "heads": 4, "ffn_hidden": 64, "vocab": 100, "seq_len": 8})",
       "layers", "out of range"},
      {R"({"name": "m", "source": "s", "layers": 2.5, "hidden": 32, "heads": 4, "ffn_hidden": 64, "vocab": 100, "seq_len": 8})",
       "layers", "must be an integer"},
      {with(R"("norm": "batchnorm")"), "norm", "unknown value 'batchnorm'"},
      {with(R"("kv_heads": 3)"), "kv_heads", "must divide heads"},
      {with(R"("tied_embeddings": 1)"), "tied_embeddings", "true or false"},
      {with(R"("top_k": 2)"), "num_experts", "MoE fields are set"},
      {with(R"("num_experts": 4, "top_k": 5, "expert_ffn_hidden": 8)"), "top_k", "1..num_experts"},
      {with(R"("num_experts": 4, "top_k": 2)"), "expert_ffn_hidden", ">= 1"},
      {with(R"("num_experts": 4, "top_k": 2, "expert_ffn_hidden": 8, "balance": "aux_loss")"), "aux_loss_coeff", "> 0"},
      {with(R"("kv_lora_rank": 8)"), "attention", "need \"attention\": \"mla\""},
      {with(R"("num_experts": 8, "top_k": 2, "expert_ffn_hidden": 8, "route_groups": 4)"), "route_group_limit",
       "given together"},
      {with(R"("num_experts": 8, "top_k": 2, "expert_ffn_hidden": 8, "route_groups": 3, "route_group_limit": 1)"),
       "route_groups", "must divide num_experts"},
      {with(R"("num_experts": 8, "top_k": 4, "expert_ffn_hidden": 8, "route_groups": 4, "route_group_limit": 1)"),
       "route_group_limit", "fewer experts than top_k"},
      {with(R"("route_groups": 2, "route_group_limit": 1)"), "num_experts", "MoE fields are set"},
      {R"({"name": "m", "source": 3, "layers": 2, "hidden": 32, "heads": 4, "ffn_hidden": 64, "vocab": 100, "seq_len": 8})",
       "source", "must be a string"},
  };
  for (const auto& c : cases) {
    const std::string msg = error_of(c.text);
    EXPECT_NE(msg.find("bad.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'" + c.field + "'"), std::string::npos) << "field " << c.field << ": " << msg;
    EXPECT_NE(msg.find(c.why), std::string::npos) << "field " << c.field << ": " << msg;
  }
  EXPECT_NE(error_of("{ not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of("[1, 2]").find("must be an object"), std::string::npos);
}

TEST(PlanModelFile, UnknownNameListsTheCatalog) {
  try {
    load_model("no-such-model");
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("tiny-dense"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_model("/nonexistent/dir/x.json"), UsageError);
}

TEST(PlanModelFile, EnvironmentOverridesTheCatalogDir) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ibt_models_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "only-one.json") << R"({"name": "only-one", "source": "test", "layers": 2,
      "hidden": 32, "heads": 4, "ffn_hidden": 64, "vocab": 100, "seq_len": 8})";
  ::setenv("IBT_MODELS_DIR", dir.c_str(), 1);
  const auto names = catalog_names();
  const ModelConfig m = load_model("only-one");
  ::unsetenv("IBT_MODELS_DIR");
  fs::remove_all(dir);
  EXPECT_EQ(names, std::vector<std::string>{"only-one"});
  EXPECT_EQ(m.layers, 2);
  // A path works regardless of the catalog.
  EXPECT_EQ(load_model(catalog_dir() + "/tiny-dense.json").name, "tiny-dense");
}

}  // namespace
}  // namespace ibt::models
