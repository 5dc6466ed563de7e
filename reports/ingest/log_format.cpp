#include "reports/ingest/log_format.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <optional>
#include <string_view>

#include "core/errors.hpp"

namespace ibt::suites {
namespace {

constexpr std::size_t kFormats = std::size(kLogFormatNames);

// What in `line` marks a format, or nothing. A substring test first: RE2 runs only on the
// few lines that could match, so a 512 MiB log is scanned at memory speed.
std::optional<std::string> megatron_mark(std::string_view line) {
  static const re2::RE2 banner(R"(^-+ arguments -+\s*$)");
  static const re2::RE2 iteration(R"(iteration\s+\d+\s*/\s*\d+\s*\|)");
  if (line.find(" arguments -") != std::string_view::npos && re2::RE2::PartialMatch(line, banner))
    return "the arguments banner";
  if (line.find("elapsed time per iteration (ms)") != std::string_view::npos && re2::RE2::PartialMatch(line, iteration))
    return "an 'iteration N/ M | ... elapsed time per iteration (ms)' line";
  return std::nullopt;
}

std::optional<std::string> nemo_mark(std::string_view line) {
  if (line.find("Experiment configuration") != std::string_view::npos) return "the 'Experiment configuration' dump";
  if (line.find("train_step_timing in s") != std::string_view::npos) return "a 'train_step_timing in s' metric";
  return std::nullopt;
}

std::optional<std::string> torchtitan_mark(std::string_view line) {
  if (line.find("tps:") == std::string_view::npos || line.find("loss:") == std::string_view::npos) return std::nullopt;
  static const re2::RE2 ansi("\x1b\\[[0-9;]*m");
  static const re2::RE2 step(R"((?:^|\s)step:\s*\d+\s.*\bloss:.*\btps:\s*[\d,])");
  std::string plain(line);
  re2::RE2::GlobalReplace(&plain, ansi, "");
  if (plain.find("validate step:") != std::string::npos) return std::nullopt;  // validation, same shape
  if (re2::RE2::PartialMatch(plain, step)) return "a 'step: N  loss: X ... tps: N' metrics line";
  return std::nullopt;
}

std::string where(const LogFormatMark& m) {
  return m.format + " (line " + std::to_string(m.line) + ": " + m.evidence + ")";
}

}  // namespace

std::vector<LogFormatMark> find_log_format_marks(const std::string& text) {
  using Finder = std::optional<std::string> (*)(std::string_view);
  const std::array<Finder, kFormats> finders = {megatron_mark, nemo_mark, torchtitan_mark};
  std::array<std::optional<LogFormatMark>, kFormats> found;
  std::size_t number = 0, missing = kFormats;
  for (std::size_t start = 0; start < text.size() && missing > 0;) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line(text.data() + start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++number;
    for (std::size_t f = 0; f < kFormats; ++f) {
      if (found[f]) continue;
      if (std::optional<std::string> evidence = finders[f](line)) {
        found[f] = LogFormatMark{kLogFormatNames[f], number, *evidence};
        --missing;
      }
    }
    start = end + 1;
  }
  std::vector<LogFormatMark> marks;
  for (const auto& m : found)
    if (m) marks.push_back(*m);
  return marks;
}

LogFormatMark detect_log_format(const std::string& text, const std::string& file) {
  const std::vector<LogFormatMark> marks = find_log_format_marks(text);
  if (marks.size() == 1) return marks.front();
  if (marks.empty()) {
    std::string known;
    for (std::size_t f = 0; f < kFormats; ++f)
      known += std::string(f ? "; " : "") + kLogFormatNames[f] + " by " + kLogFormatMarks[f];
    throw UsageError(file + ": no line shows which framework wrote this log (" + known +
                     "): if it is one of these, say which with --format megatron|nemo|torchtitan");
  }
  std::string found, flags;
  for (std::size_t i = 0; i < marks.size(); ++i) {
    const char* sep = i == 0 ? "" : i + 1 == marks.size() ? " and " : ", ";
    found += sep + where(marks[i]);
    flags += std::string(i == 0 ? "" : i + 1 == marks.size() ? " or " : ", ") + "--format " + marks[i].format;
  }
  throw UsageError(file + ": the log has the marks of " + std::to_string(marks.size()) + " formats, " + found +
                   " (several runs' logs in one file?): say which wrote the run to import with " + flags);
}

}  // namespace ibt::suites
