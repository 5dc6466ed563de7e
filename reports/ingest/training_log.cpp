#include "reports/ingest/training_log.hpp"

#include <limits>
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

// One iteration line; `number` is the iteration's digits, `rest` what follows its head.
LoggedIteration read_iteration(const std::string& number, const std::string& rest, const std::string& where) {
  LoggedIteration it;
  it.iteration = read_log_integer(number, "the iteration number", where, {0, std::numeric_limits<long long>::max()});
  const auto fields = line_fields(rest);
  double x = 0;
  const auto elapsed = fields.find("elapsed time per iteration (ms)");
  if (elapsed == fields.end() || !read_log_number(elapsed->second, x) || !(x > 0))
    throw UsageError(where + ": iteration " + std::to_string(it.iteration) +
                     " has no positive 'elapsed time per iteration (ms)' (the log is cut or not Megatron-LM's)");
  it.step_s = x / 1e3;
  const auto tflops = fields.find("throughput per GPU (TFLOP/s/GPU)");
  if (tflops != fields.end() && read_log_number(tflops->second, x)) it.tflops_per_gpu = x;
  const auto batch = fields.find("global batch size");
  if (batch != fields.end())
    it.global_batch =
        read_log_integer(batch->second, "'global batch size'", where, log_argument_range("global_batch_size"));
  return it;
}

}  // namespace

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
  return read_log_integer(it->second, "argument '" + name + "'", file, log_argument_range(name));
}

TrainingLog parse_megatron_log(const LogSource& source) {
  const std::string& file = source.file;
  TrainingLog log;
  log.file = file;
  log.parser_version = kMegatronParserVersion;
  static const re2::RE2 block_start(R"(^-+ arguments -+\s*$)");
  static const re2::RE2 block_end(R"(^-+ end of arguments -+\s*$)");
  static const re2::RE2 argument(R"(^\s+(\w+) \.+ (.*?)\s*$)");
  static const re2::RE2 iteration(R"((iteration\s+(\d+)\s*/\s*\d+\s*\|))");
  enum { before, inside, after } state = before;
  const std::vector<std::string> lines = split_log_lines(source.text, file, false);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    const std::string where = file + ":" + std::to_string(i + 1);
    std::string name, value;
    re2::StringPiece head;
    if (state == before && re2::RE2::PartialMatch(line, block_start)) {
      state = inside;
    } else if (state == inside && re2::RE2::PartialMatch(line, block_end)) {
      state = after;
    } else if (state == inside) {
      if (!re2::RE2::FullMatch(line, argument, &name, &value))
        throw UsageError(where + ": not an argument line ('  name ..... value') inside Megatron's arguments block");
      log.arguments[name] = value;
    } else if (re2::RE2::PartialMatch(line, iteration, &head, &value)) {
      const size_t rest = static_cast<size_t>(head.data() - line.data()) + head.size();
      log.iterations.push_back(read_iteration(value, line.substr(rest), where));
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
