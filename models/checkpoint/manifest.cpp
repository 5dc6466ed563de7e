#include "models/checkpoint/manifest.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "models/checkpoint/shard_io.hpp"

namespace ibt::checkpoint {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

bool is_step_dir_name(const std::string& name) {
  return name.size() > 5 && name.rfind("step-", 0) == 0 &&
         std::all_of(name.begin() + 5, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }
// The shortest decimal that reads back as v (0.003, not 0.0030000000000000001).
std::string number(double v) {
  char buf[40];
  for (int digits = 6; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

}  // namespace

void write_manifest(const std::string& step_dir, const Manifest& m) {
  json shards = json::array();
  for (const ShardEntry& e : m.shards)
    shards.push_back({{"rank", e.rank}, {"file", e.file}, {"bytes", e.bytes}, {"checksum", e.checksum}});
  const json doc = {{"format", kManifestFormat},
                    {"version", kManifestVersion},
                    {"step", m.step},
                    {"written_at", m.written_at.empty() ? now_utc() : m.written_at},
                    {"identity",
                     {{"model", m.identity.model},
                      {"split", m.identity.split},
                      {"world_size", m.identity.world_size},
                      {"seed", m.identity.seed},
                      {"lr", m.identity.lr},
                      {"data", m.identity.data}}},
                    {"shards", shards}};
  const std::string final_path = (fs::path(step_dir) / kManifestName).string();
  const std::string tmp = final_path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << doc.dump(2) << "\n";
    out.close();
    if (!out) throw RuntimeError("cannot write " + tmp);
  }
  fsync_path(tmp);
  std::error_code ec;
  fs::rename(tmp, final_path, ec);
  if (ec) throw RuntimeError("cannot rename " + tmp + " to " + final_path + ": " + ec.message());
  fsync_path(step_dir);
}

Manifest read_manifest(const std::string& step_dir) {
  const std::string path = (fs::path(step_dir) / kManifestName).string();
  std::ifstream in(path);
  if (!in) throw UsageError("checkpoint manifest " + path + " is missing");
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) {
    throw UsageError("checkpoint manifest " + path + " is not valid JSON: " + e.what());
  }
  Manifest m;
  try {
    if (doc.at("format").get<std::string>() != kManifestFormat)
      throw UsageError("checkpoint manifest " + path + ": format is not " + kManifestFormat);
    if (doc.at("version").get<int>() != kManifestVersion)
      throw UsageError("checkpoint manifest " + path + ": version " + doc.at("version").dump() + ", this ibt reads " +
                       std::to_string(kManifestVersion));
    m.step = doc.at("step").get<std::int64_t>();
    m.written_at = doc.value("written_at", "");
    const json& id = doc.at("identity");
    m.identity.model = id.at("model").get<std::string>();
    m.identity.split = id.at("split").get<std::string>();
    m.identity.world_size = id.at("world_size").get<int>();
    m.identity.seed = id.at("seed").get<std::uint64_t>();
    m.identity.lr = id.at("lr").get<double>();
    m.identity.data = id.at("data").get<std::string>();
    for (const json& s : doc.at("shards"))
      m.shards.push_back({s.at("rank").get<int>(), s.at("file").get<std::string>(), s.at("bytes").get<std::uint64_t>(),
                          s.at("checksum").get<std::string>()});
  } catch (const json::exception& e) {
    throw UsageError("checkpoint manifest " + path + " is incomplete: " + e.what());
  }
  if (static_cast<int>(m.shards.size()) != m.identity.world_size)
    throw UsageError("checkpoint manifest " + path + " lists " + std::to_string(m.shards.size()) +
                     " shards for a world of " + std::to_string(m.identity.world_size) + " ranks");
  for (size_t r = 0; r < m.shards.size(); ++r)
    if (m.shards[r].rank != static_cast<int>(r))
      throw UsageError("checkpoint manifest " + path + ": shard " + std::to_string(r) + " is for rank " +
                       std::to_string(m.shards[r].rank));
  return m;
}

std::string identity_mismatch(const RunIdentity& c, const RunIdentity& now) {
  auto differ = [](const char* what, const std::string& a, const std::string& b) {
    return std::string(what) + ": the checkpoint has " + a + ", this run has " + b;
  };
  if (c.world_size != now.world_size)
    return differ("world size", std::to_string(c.world_size) + " ranks", std::to_string(now.world_size) + " ranks");
  if (c.split != now.split) return differ("split", quoted(c.split), quoted(now.split));
  if (c.model != now.model) return differ("model", quoted(c.model), quoted(now.model));
  if (c.seed != now.seed) return differ("seed", std::to_string(c.seed), std::to_string(now.seed));
  if (c.lr != now.lr) return differ("lr", number(c.lr), number(now.lr));
  if (c.data != now.data) return differ("data", quoted(c.data), quoted(now.data));
  return "";
}

std::vector<std::string> step_dirs(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_directory() && is_step_dir_name(entry.path().filename().string()))
      out.push_back(entry.path().string());
  std::sort(out.begin(), out.end());  // zero-padded: lexical order is step order
  return out;
}

LatestCheckpoint find_latest_complete(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw UsageError("--resume " + dir + ": no such directory");
  const std::vector<std::string> steps = step_dirs(dir);
  if (steps.empty()) throw UsageError("--resume " + dir + ": no checkpoint in it (no step-NNNNNN directory)");
  LatestCheckpoint found;
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    if (!fs::exists(fs::path(*it) / kManifestName)) {
      found.skipped.push_back(*it);
      continue;
    }
    found.step_dir = *it;
    found.manifest = read_manifest(*it);
    return found;
  }
  std::string names;
  for (const std::string& s : steps) names += (names.empty() ? "" : ", ") + fs::path(s).filename().string();
  throw UsageError("--resume " + dir + ": no complete checkpoint: " + names + " lack " + kManifestName +
                   " (partly written)");
}

std::string verify_shard(const std::string& step_dir, const ShardEntry& entry) {
  const std::string path = (fs::path(step_dir) / entry.file).string();
  std::error_code ec;
  if (!fs::exists(path, ec)) return "checkpoint shard " + path + " is missing";
  const std::uint64_t size = fs::file_size(path, ec);
  if (ec) return "checkpoint shard " + path + " cannot be read: " + ec.message();
  if (size != entry.bytes)
    return "checkpoint shard " + path + " has " + std::to_string(size) + " bytes, the manifest says " +
           std::to_string(entry.bytes) + " (truncated or replaced)";
  const std::string sum = file_checksum(path);
  if (sum != entry.checksum)
    return "checkpoint shard " + path + " has checksum " + sum + ", the manifest says " + entry.checksum + " (damaged)";
  return "";
}

}  // namespace ibt::checkpoint
