#include "cli/cli.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <thread>
#include <type_traits>

#include "core/did_you_mean.hpp"
#include "core/errors.hpp"
#include "core/text_wrap.hpp"

namespace ibt::suites {

void require_positive(long value, const char* option) {
  if (value <= 0) throw UsageError(std::string(option) + " must be positive (got " + std::to_string(value) + ")");
}

void require_rank_in_job(int rank, const char* option, int ranks) {
  if (rank == -1 || (rank >= 0 && rank < ranks)) return;
  throw UsageError(std::string(option) + " names rank " + std::to_string(rank) + ", but the job has " +
                   std::to_string(ranks) + " rank" + (ranks == 1 ? "" : "s") + " (0.." + std::to_string(ranks - 1) +
                   "): name one of them");
}

void require_given_positive(long value, const char* option, const char* what) {
  if (value == -1) throw UsageError(std::string(option) + " is required (" + what + ")");
  require_positive(value, option);
}

namespace {

template <class T>
bool check_number(const boost::any& value, const std::string& name, bool given) {
  const T* v = boost::any_cast<T>(&value);
  if (!v) return false;
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(*v)) throw UsageError("--" + name + " must be a finite number (got " + std::to_string(*v) + ")");
  }
  if constexpr (std::is_signed_v<T>) {
    if (given && *v < 0 && name != "exit-after-step") {
      std::ostringstream text;
      text << *v;
      throw UsageError("--" + name + " must not be negative (got " + text.str() + ")");
    }
  }
  return true;
}

}  // namespace

void refuse_nonsense_numbers(const boost::program_options::variables_map& vm) {
  for (const auto& [name, entry] : vm) {
    const bool given = !entry.defaulted();
    const boost::any& v = entry.value();
    check_number<double>(v, name, given) || check_number<float>(v, name, given) || check_number<int>(v, name, given) ||
        check_number<long>(v, name, given) || check_number<long long>(v, name, given);
  }
}

namespace {
// Stray words, and an empty value given to an option that takes one (`--out ''`,
// `--out $UNSET_VARIABLE`): a mistake, never a request to record nothing.
void refuse_stray_words(const boost::program_options::parsed_options& parsed, bool positional_allowed) {
  namespace po = boost::program_options;
  for (const auto& option : parsed.options) {
    if (!option.string_key.empty() && option.value.size() == 1 && option.value.front().empty() && parsed.description) {
      const po::option_description* d = parsed.description->find_nothrow(option.string_key, false);
      if (d && d->semantic()->max_tokens() > 0)
        throw UsageError("--" + option.string_key + " was given an empty value");
    }
    if (!positional_allowed && (option.position_key >= 0 || option.string_key.empty())) {
      const std::string word = option.original_tokens.empty() ? "" : option.original_tokens.front();
      throw UsageError("unexpected argument '" + word + "' (options take one value each: give a list as a,b,c)");
    }
  }
}
}  // namespace

namespace {

// Boost's message, with "did you mean '--x'?" when an unknown option is close to a known one.
std::string option_error(const boost::program_options::error& e,
                         const boost::program_options::options_description& options) {
  namespace po = boost::program_options;
  std::string text = e.what();
  if (const auto* unknown = dynamic_cast<const po::unknown_option*>(&e)) {
    std::string word = unknown->get_option_name();
    while (!word.empty() && word.front() == '-') word.erase(word.begin());
    if (const auto eq = word.find('='); eq != std::string::npos) word.resize(eq);
    std::vector<std::string> known;
    for (const auto& option : options.options())
      if (!option->long_name().empty()) known.push_back(option->long_name());
    if (const std::string close = closest_name(word, known); !close.empty())
      text += " (did you mean '--" + close + "'?)";
  }
  return text;
}

}  // namespace

void store_command_line(int argc, char** argv, const boost::program_options::options_description& options,
                        boost::program_options::variables_map& vm) {
  store_command_line(std::vector<std::string>(argv + std::min(argc, 1), argv + argc), options, vm);
}

void store_command_line(const std::vector<std::string>& args,
                        const boost::program_options::options_description& options,
                        boost::program_options::variables_map& vm) {
  namespace po = boost::program_options;
  try {
    const po::parsed_options parsed = po::command_line_parser(args).options(options).run();
    refuse_stray_words(parsed, false);
    po::store(parsed, vm);
  } catch (const po::error& e) {
    throw UsageError(option_error(e, options));
  }
  refuse_nonsense_numbers(vm);
}

void require_timeout(double seconds, const char* option) {
  constexpr double kWeek = 7 * 24 * 3600.0;
  if (!(seconds > 0) || !(seconds <= kWeek)) {
    std::ostringstream text;
    text << option << " must be a positive number of seconds up to " << static_cast<long>(kWeek) << " (a week), got "
         << seconds;
    throw UsageError(text.str());
  }
}

void require_learning_rate(double lr) {
  if (!(lr > 0 && lr <= 10)) throw UsageError("--lr must be in (0, 10], got " + std::to_string(lr));
}

int resolve_jobs(int jobs) {
  if (jobs < 0) throw UsageError("--jobs must be >= 0 (0 = all cores; got " + std::to_string(jobs) + ")");
  if (jobs == 0) return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return jobs;
}

boost::program_options::typed_value<double>* double_value(double* target) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", *target);
  return boost::program_options::value(target)->default_value(*target, text);
}

void print_help(std::ostream& out, const std::string& usage, const std::string& about,
                const boost::program_options::options_description& options, const std::vector<std::string>& examples) {
  auto indent_after_newlines = [](std::string text, const std::string& pad) {
    for (size_t at = text.find('\n'); at != std::string::npos && at + 1 < text.size(); at = text.find('\n', at + 1))
      if (text[at + 1] != '\n') text.insert(at + 1, pad);
    return text;
  };
  auto trimmed = [](std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    return text;
  };
  out << "usage: " << indent_after_newlines(trimmed(usage), "       ") << "\n\n";
  const std::string text = trimmed(about);
  const size_t split = text.find("\n\n");
  out << text.substr(0, split) << "\n\n" << options;
  if (split != std::string::npos) {
    std::string notes = text.substr(split + 2);
    while (!notes.empty() && notes.front() == '\n') notes.erase(0, 1);
    out << "\nnotes:\n  " << indent_after_newlines(notes, "  ") << "\n";
  }
  if (examples.empty()) return;
  out << "\nexamples:\n";
  for (const auto& e : examples) out << example_lines(e, kHelpExampleColumns);
}

std::string example_lines(const std::string& command, std::size_t width) {
  // Broken only before an option ("  --flag value" stays together), each piece but the last
  // ending in " \" so the example still pastes into a shell as one command.
  constexpr std::size_t kIndent = 2, kContinuationIndent = 6;
  std::string out(kIndent, ' ');
  std::size_t column = kIndent;
  for (std::size_t from = 0; from < command.size();) {
    const std::size_t next = std::min(command.find(" --", from + 1), command.size());
    std::string piece = command.substr(from, next - from);
    // + 2 leaves room for the " \"; a line holds at least its first piece.
    if (column + piece.size() + 2 > width && column > kContinuationIndent) {
      out += " \\\n" + std::string(kContinuationIndent, ' ');
      column = kContinuationIndent;
      if (piece.front() == ' ') piece.erase(0, 1);
    }
    out += piece;
    column += piece.size();
    from = next;
  }
  return out + "\n";
}

std::vector<std::string> parse_list_of_names(const std::string& text, const char* option) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    out.push_back(item.empty() ? throw UsageError(std::string(option) + ": empty name in '" + text + "'") : item);
  if (out.empty() || text.back() == ',') throw UsageError(std::string(option) + ": empty name in '" + text + "'");
  return out;
}

bool parse_command_line(int argc, char** argv, const boost::program_options::options_description& options,
                        boost::program_options::variables_map& vm,
                        const boost::program_options::positional_options_description* positional,
                        const std::string& hint, const boost::program_options::options_description* hidden) {
  namespace po = boost::program_options;
  try {
    po::command_line_parser parser(argc, argv);
    po::options_description all;
    all.add(options);
    if (hidden) all.add(*hidden);
    parser.options(all);
    if (positional) parser.positional(*positional);
    const po::parsed_options parsed = parser.run();
    refuse_stray_words(parsed, positional != nullptr);
    po::store(parsed, vm);
    if (vm.count("help")) return false;  // before notify: --help works without required options
    po::notify(vm);
    refuse_nonsense_numbers(vm);
  } catch (const po::error& e) {
    throw UsageError(option_error(e, options) + hint);
  }
  return true;
}

void add_wide_option(boost::program_options::options_description& opts, bool* wide, const std::string& detail) {
  opts.add_options()(
      "wide", boost::program_options::bool_switch(wide),
      (detail + ", each note on one line however long; by default every line fits 120 columns "
                "(compact split labels, notes wrapped); the results file keeps the full labels either way")
          .c_str());
}

std::size_t report_width(bool wide) { return wide ? 0 : kReportColumns; }

}  // namespace ibt::suites
