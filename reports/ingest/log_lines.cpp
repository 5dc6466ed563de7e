// What every log parser shares: the log's lines, numbers read from them, and the ranges
// a layout or batch argument must fall in.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/errors.hpp"
#include "reports/ingest/training_log.hpp"

namespace ibt::suites {
namespace {

constexpr long long kIntMax = std::numeric_limits<int>::max();
constexpr long long kInt64Max = std::numeric_limits<long long>::max();

std::string range_text(ArgumentRange r) {
  return r.max == kInt64Max ? std::to_string(r.min) + " or more"
                            : std::to_string(r.min) + " .. " + std::to_string(r.max);
}

// `text` as a message quotes it: a 300,000-digit number is shown by its first digits and
// its length, so the message stays one readable line.
std::string shown(const std::string& text) {
  constexpr size_t kShown = 40;
  if (text.size() <= kShown) return text;
  return text.substr(0, kShown) + "... (" + std::to_string(text.size()) + " characters)";
}

}  // namespace

ArgumentRange log_argument_range(const std::string& name) {
  // Parallel degrees and batches become int fields of the split (models/plan), so
  // anything beyond int would wrap (2^32+2 read as 2); zero or negative means nothing.
  static const std::map<std::string, ArgumentRange> ranges = {
      {"tensor_model_parallel_size", {1, kIntMax}},
      {"pipeline_model_parallel_size", {1, kIntMax}},
      {"context_parallel_size", {1, kIntMax}},
      {"expert_model_parallel_size", {1, kIntMax}},
      {"virtual_pipeline_model_parallel_size", {1, kIntMax}},
      {"data_parallel_size", {1, kIntMax}},
      {"world_size", {1, kIntMax}},
      {"micro_batch_size", {1, kIntMax}},
      {"global_batch_size", {1, kIntMax}},
      {"zero_stage", {0, 3}},
      {"zero_shard_group", {0, kIntMax}},
      // The bounds model files have (models/plan/model_file.cpp: kMaxLayers, kMaxSequence).
      {"num_layers", {1, 10000}},
      {"seq_length", {1, 100000000}},
      {"hidden_size", {1, kIntMax}},
  };
  const auto it = ranges.find(name);
  return it == ranges.end() ? ArgumentRange{std::numeric_limits<long long>::min(), kInt64Max} : it->second;
}

long long read_log_integer(const std::string& text, const std::string& what, const std::string& where,
                           ArgumentRange range) {
  long long value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (first != last && *first == '+') ++first;
  const auto [end, ec] = std::from_chars(first, last, value);
  bool whole = ec == std::errc() && end == last;
  if (ec == std::errc::result_out_of_range && end == last)
    throw UsageError(where + ": " + what + " is '" + shown(text) + "', beyond a 64-bit integer (it must be " +
                     range_text(range) + ")");
  if (!whole) {
    // "64.0" or "9e18": whole numbers spelt as floating point (YAML and Python print them so).
    double x = 0;
    if (!read_log_number(text, x) || x != std::floor(x))
      throw UsageError(where + ": " + what + " is '" + shown(text) + "', not a whole number");
    // 0x1p63 is 2^63, the first double beyond a 64-bit integer (range.max as a double rounds up to it).
    if (!(x >= static_cast<double>(range.min) && x <= static_cast<double>(range.max) && x < 0x1p63))
      throw UsageError(where + ": " + what + " is '" + shown(text) + "', out of range (it must be " +
                       range_text(range) + ")");
    value = static_cast<long long>(x);
  }
  if (value < range.min || value > range.max)
    throw UsageError(where + ": " + what + " is " + shown(text) + ", out of range (it must be " + range_text(range) +
                     ")");
  return value;
}

bool read_log_number(const std::string& text, double& out) {
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return end != text.c_str() && *end == '\0' && std::isfinite(out);
}

std::vector<std::string> split_log_lines(const std::string& text, const std::string& file, bool at_cr) {
  std::vector<std::string> lines;
  size_t start = 0;
  auto cut = [&](size_t end) {
    if (end - start > kMaxLogLineBytes)
      throw UsageError(file + ":" + std::to_string(lines.size() + 1) + ": a line of " + std::to_string(end - start) +
                       " bytes, more than the " + std::to_string(kMaxLogLineBytes) +
                       " a log line may have (not a training log?)");
    lines.emplace_back(text, start, end - start);
    start = end + 1;
  };
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n' || (at_cr && text[i] == '\r')) cut(i);
  if (start < text.size()) cut(text.size());
  return lines;
}

bool find_log_number(const std::string& line, const re2::RE2& pattern, double& out) {
  std::string digits;
  if (!re2::RE2::PartialMatch(line, pattern, &digits)) return false;
  digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
  return read_log_number(digits, out);
}

bool find_log_step(const std::string& line, const re2::RE2& pattern, const std::string& where, long long& out) {
  std::string digits;
  if (!re2::RE2::PartialMatch(line, pattern, &digits)) return false;
  out = read_log_integer(digits, "the step number", where, {0, kInt64Max});
  return true;
}

}  // namespace ibt::suites
