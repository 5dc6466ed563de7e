#pragma once
// One reader for the JSON input files (topologies, model files, the atlas, acceptance
// references): typed field getters whose errors name the file and the field's path from
// the file's root, and a check that refuses unknown keys with a "did you mean" from the
// known ones. Every error is a UsageError "ORIGIN: field 'PATH': WHAT".
#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/did_you_mean.hpp"

namespace ibt {

class JsonReader {
 public:
  // `j` must be an object ("ORIGIN: must be a JSON object" at the root); `path` is where
  // it sits in its file ("" at the root, "scale_up", "fits[3]").
  JsonReader(const nlohmann::json& j, std::string origin, std::string path = "");

  [[noreturn]] void fail(const std::string& key, const std::string& what) const;
  // The path of `key` below this object: "scale_up.latency_us"; this object's path for "".
  std::string path_of(const std::string& key) const;

  // Refuses any key not in `known`: "unknown field (did you mean 'x'?)".
  void allow(std::initializer_list<const char*> known) const;
  void allow(const std::vector<std::string>& known) const;

  bool has(const std::string& key) const;                  // present and not null
  const nlohmann::json& at(const std::string& key) const;  // "missing" when absent
  // A string; an absent optional one is "".
  std::string str(const std::string& key, bool required = true) const;
  double number(const std::string& key) const;
  // An integer in [min, max], else "must be a whole number >= MIN" / "out of range".
  long long integer(const std::string& key, long long min, long long max = 1'000'000'000) const;
  JsonReader child(const std::string& key) const;  // the object at `key`

  const nlohmann::json& raw() const { return j_; }
  const std::string& origin() const { return origin_; }
  const std::string& path() const { return path_; }

 private:
  const nlohmann::json& j_;
  std::string origin_, path_;
};

}  // namespace ibt
