#include "reports/ingest/training_log.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <sstream>

#include "core/errors.hpp"

namespace ibt::suites {
namespace {

// The "| key: value |" fields of one iteration line.
std::map<std::string, std::string> line_fields(const std::string& line) {
  std::map<std::string, std::string> fields;
  std::istringstream in(line);
  std::string part;
  while (std::getline(in, part, '|')) {
    const size_t colon = part.rfind(':');
    if (colon == std::string::npos) continue;
    auto trim = [](std::string s) {
      const size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
      return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
    };
    fields[trim(part.substr(0, colon))] = trim(part.substr(colon + 1));
  }
  return fields;
}

LoggedIteration read_iteration(const std::string& line, const std::smatch& head, const std::string& where) {
  LoggedIteration it;
  it.iteration = std::stoll(head[1].str());
  const auto fields = line_fields(line.substr(static_cast<size_t>(head.position(0) + head.length(0))));
  double x = 0;
  const auto elapsed = fields.find("elapsed time per iteration (ms)");
  if (elapsed == fields.end() || !read_log_number(elapsed->second, x) || !(x > 0))
    throw UsageError(where + ": iteration " + std::to_string(it.iteration) +
                     " has no positive 'elapsed time per iteration (ms)' (the log is cut or not Megatron-LM's)");
  it.step_s = x / 1e3;
  const auto tflops = fields.find("throughput per GPU (TFLOP/s/GPU)");
  if (tflops != fields.end() && read_log_number(tflops->second, x)) it.tflops_per_gpu = x;
  const auto batch = fields.find("global batch size");
  if (batch != fields.end() && read_log_number(batch->second, x)) it.global_batch = static_cast<long long>(x);
  return it;
}

}  // namespace

bool read_log_number(const std::string& text, double& out) {
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return end != text.c_str() && *end == '\0' && std::isfinite(out);
}

std::vector<std::string> split_log_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  for (const char c : text) {
    if (c == '\n' || c == '\r') {
      lines.push_back(line);
      line.clear();
    } else {
      line += c;
    }
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

bool find_log_number(const std::string& line, const std::regex& pattern, double& out) {
  std::smatch m;
  if (!std::regex_search(line, m, pattern)) return false;
  std::string digits = m[1].str();
  digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
  return read_log_number(digits, out);
}

void add_logged_iteration(TrainingLog& log, const LoggedIteration& it) {
  if (!log.iterations.empty() && log.iterations.back().iteration == it.iteration)
    log.iterations.back() = it;
  else
    log.iterations.push_back(it);
}

void require_logged_iterations(const TrainingLog& log, const std::string& expected) {
  if (log.iterations.empty())
    throw UsageError(log.file + ": no " + expected + " line (the log is cut before the first logged step, or is " +
                     "not this format)");
}

long long TrainingLog::integer(const std::string& name, long long fallback) const {
  const auto it = arguments.find(name);
  if (it == arguments.end() || it->second == "None") {
    if (fallback >= 0) return fallback;
    throw UsageError(file + ": no '" + name +
                     "' in the log's arguments or config (needed for the run's layout or "
                     "model)");
  }
  double x = 0;
  if (!read_log_number(it->second, x) || x != static_cast<double>(static_cast<long long>(x)))
    throw UsageError(file + ": argument '" + name + "' is '" + it->second + "', not a whole number");
  return static_cast<long long>(x);
}

TrainingLog parse_megatron_log(const LogSource& source) {
  const std::string& file = source.file;
  TrainingLog log;
  log.file = file;
  log.parser_version = kMegatronParserVersion;
  static const std::regex block_start(R"(^-+ arguments -+\s*$)");
  static const std::regex block_end(R"(^-+ end of arguments -+\s*$)");
  static const std::regex argument(R"(^\s+(\w+) \.+ (.*?)\s*$)");
  static const std::regex iteration(R"(iteration\s+(\d+)\s*/\s*(\d+)\s*\|)");
  enum { before, inside, after } state = before;
  std::istringstream in(source.text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string where = file + ":" + std::to_string(number);
    std::smatch m;
    if (state == before && std::regex_search(line, block_start)) {
      state = inside;
    } else if (state == inside && std::regex_search(line, block_end)) {
      state = after;
    } else if (state == inside) {
      if (!std::regex_match(line, m, argument))
        throw UsageError(where + ": not an argument line ('  name ..... value') inside Megatron's arguments block");
      log.arguments[m[1].str()] = m[2].str();
    } else if (std::regex_search(line, m, iteration)) {
      log.iterations.push_back(read_iteration(line, m, where));
    }
  }
  if (state == before)
    throw UsageError(file +
                     ": no Megatron-LM arguments block ('---- arguments ----'): the layout and model are "
                     "read from it");
  if (state == inside) throw UsageError(file + ": the arguments block never ends (the log is cut)");
  if (log.iterations.empty())
    throw UsageError(file +
                     ": no 'iteration N/ M | ... elapsed time per iteration (ms): X' line (the log is cut "
                     "before the first log interval)");
  return log;
}

}  // namespace ibt::suites
