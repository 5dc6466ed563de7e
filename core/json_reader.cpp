#include "core/json_reader.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace ibt {

using nlohmann::json;

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string closest_name(const std::string& word, const std::vector<std::string>& known) {
  const size_t limit = word.size() <= 4 ? 1 : word.size() / 3;
  std::string best;
  size_t best_distance = limit + 1;
  for (const auto& k : known) {
    const size_t d = edit_distance(word, k);
    if (d < best_distance) best = k, best_distance = d;
  }
  return best;
}

std::string unknown_name_hint(const std::string& word, const std::vector<std::string>& known) {
  if (known.empty()) return "";
  const std::string close = closest_name(word, known);
  if (!close.empty()) return " (did you mean '" + close + "'?)";
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  return " (known: " + list + ")";
}

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
