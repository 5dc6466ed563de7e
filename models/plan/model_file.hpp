#pragma once
// Model files: JSON in models/catalog/<name>.json whose keys are ModelConfig's field
// names ("layers", "hidden", ...; enums as strings: "norm": "rmsnorm"|"layernorm",
// "activation": "gelu"|"swiglu", "attention": "standard"|"mla",
// "balance": "none"|"aux_loss"|"aux_loss_free"). "name", "source", "layers",
// "hidden", "heads", "vocab", "seq_len" and "ffn_hidden" are required; the rest
// default as in ModelConfig ("kv_heads" defaults to "heads"). A "notes" string is
// allowed (free text: how a shape was modelled). Any other key, a wrong type or an
// out-of-range value is a UsageError naming the file and the field.
#include <string>
#include <vector>

#include "models/plan/model_config.hpp"

namespace ibt::models {

// The catalog folder: $IBT_MODELS_DIR, else an installed share/ibt (core/data_dirs.hpp), else the compiled-in
// IBT_MODELS_DIR (<source>/models/catalog).
std::string catalog_dir();
// Names (file stems) of the catalog's models, sorted.
std::vector<std::string> catalog_names();
// `name_or_path`: a catalog name ("tiny-moe") or a path to a .json file (anything
// containing '/' or ending in ".json").
ModelConfig load_model(const std::string& name_or_path);
// Parses JSON text; `origin` names the file in error messages.
ModelConfig parse_model(const std::string& json_text, const std::string& origin);
// Checks cross-field consistency (heads % kv_heads, hidden % heads, MoE fields
// together, ...); load_model calls it. Throws UsageError naming origin and field.
void validate_model(const ModelConfig& m, const std::string& origin);

}  // namespace ibt::models
