#include "core/json_reader.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace ibt {

using nlohmann::json;

JsonReader::JsonReader(const json& j, std::string origin, std::string path)
    : j_(j), origin_(std::move(origin)), path_(std::move(path)) {
  if (j_.is_object()) return;
  if (path_.empty()) throw UsageError(origin_ + ": must be a JSON object");
  fail("", "must be a JSON object");
}

void JsonReader::fail(const std::string& key, const std::string& what) const {
  throw UsageError(origin_ + ": field '" + path_of(key) + "': " + what);
}

std::string JsonReader::path_of(const std::string& key) const {
  if (path_.empty()) return key;
  return key.empty() ? path_ : path_ + "." + key;
}

void JsonReader::allow(std::initializer_list<const char*> known) const {
  allow(std::vector<std::string>(known.begin(), known.end()));
}

void JsonReader::allow(const std::vector<std::string>& known) const {
  for (auto it = j_.begin(); it != j_.end(); ++it)
    if (std::find(known.begin(), known.end(), it.key()) == known.end())
      fail(it.key(), "unknown field" + unknown_name_hint(it.key(), known));
}

bool JsonReader::has(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }

const json& JsonReader::at(const std::string& key) const {
  if (!j_.contains(key)) fail(key, "missing");
  return j_.at(key);
}

std::string JsonReader::str(const std::string& key, bool required) const {
  if (!j_.contains(key)) {
    if (required) fail(key, "missing");
    return "";
  }
  if (!j_.at(key).is_string()) fail(key, "must be a string");
  return j_.at(key).get<std::string>();
}

double JsonReader::number(const std::string& key) const {
  const json& v = at(key);
  if (!v.is_number()) fail(key, "must be a number");
  return v.get<double>();
}

long long JsonReader::integer(const std::string& key, long long min, long long max) const {
  const json& v = at(key);
  if (!v.is_number_integer() || v.get<long long>() < min) fail(key, "must be a whole number >= " + std::to_string(min));
  const long long x = v.get<long long>();
  if (x > max) fail(key, "out of range (" + std::to_string(x) + " > " + std::to_string(max) + ")");
  return x;
}

JsonReader JsonReader::child(const std::string& key) const { return JsonReader(at(key), origin_, path_of(key)); }

}  // namespace ibt
