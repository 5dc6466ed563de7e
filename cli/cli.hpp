#pragma once
// Small helpers shared by the suites' command lines.
#include <boost/program_options.hpp>

#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include "core/command_line.hpp"  // joined_command_line, note_old_spelling
#include "core/errors.hpp"

namespace ibt::suites {

// Throws UsageError for an option given more than once or a value out of range, with
// the option's name in the message.
void require_positive(long value, const char* option);
// A rank named by a flag (-1: none) must be one of the job's `ranks` ranks.
void require_rank_in_job(int rank, const char* option, int ranks);

// A required count whose variable starts at -1 ("not given"; an explicit negative value
// is refused by refuse_nonsense_numbers): -1 says "OPTION is required (WHAT)", 0 that
// it must be positive.
void require_given_positive(long value, const char* option, const char* what);

// Refuses numbers no option means: NaN and infinity in any numeric option, and a
// negative value in any numeric option given on the command line (no ibt flag takes
// one; 0 is how flags say "off"). Names the flag and the value. parse_command_line
// calls it; suites that parse by hand call it after po::store.
void refuse_nonsense_numbers(const boost::program_options::variables_map& vm);

// Refuses a timeout that is not a positive number of seconds up to a week (1e308 would
// overflow the deadline): names the flag.
void require_timeout(double seconds, const char* option);

// Refuses a learning rate outside (0, 10] (NaN included): train and sweep.
void require_learning_rate(double lr);

// po::store of argv against `options` that refuses stray words (a positional argument
// the command does not take: `-t all_reduce all_gather`), naming the word, and
// numbers no option means (refuse_nonsense_numbers). For suites that handle --help and
// notify themselves.
void store_command_line(int argc, char** argv, const boost::program_options::options_description& options,
                        boost::program_options::variables_map& vm);
// The same for arguments already split (without the program name).
void store_command_line(const std::vector<std::string>& args,
                        const boost::program_options::options_description& options,
                        boost::program_options::variables_map& vm);

// --jobs: a thread count >= 1 (0 = every core std::thread reports); negative is a
// UsageError naming --jobs.
int resolve_jobs(int jobs);

// Parses argv against `options` (and `positional`, when given) into `vm`. A malformed
// command line becomes a UsageError carrying boost's message plus `hint`. Returns false
// when --help was asked for: the caller then prints its help and exits 0.
bool parse_command_line(int argc, char** argv, const boost::program_options::options_description& options,
                        boost::program_options::variables_map& vm,
                        const boost::program_options::positional_options_description* positional = nullptr,
                        const std::string& hint = "",
                        const boost::program_options::options_description* hidden = nullptr);

// Old spellings of options, kept for one release: parsed (pass them as `hidden` to
// parse_command_line) but never shown in --help. take_alias() moves an old spelling's
// value to the canonical option's variable, with a note on stderr, and refuses both given.
template <typename T>
void take_alias(const boost::program_options::variables_map& vm, const char* old_name, const char* name, T& target) {
  if (!vm.count(old_name)) return;
  if (vm.count(name) && !vm[name].defaulted())
    throw UsageError(std::string("--") + old_name + " and --" + name + " are one option (--" + old_name +
                     " is its old spelling): give it once");
  target = vm[old_name].as<T>();
  note_old_spelling(old_name, name);
}

// A double option whose default prints as typed ("0.003"), not as boost's round trip
// of the binary value ("0.0030000000000000001").
boost::program_options::typed_value<double>* double_value(double* target);

// --wide for commands whose default output fits 120 columns (project, crossover, scaling):
// `detail` (what the command prints wide: "full split labels ...") and unwrapped notes.
void add_wide_option(boost::program_options::options_description& opts, bool* wide, const std::string& detail);
// The width a command's notes are wrapped to: 120 columns, or none with --wide.
std::size_t report_width(bool wide);

// Every command's --help, one layout for all (tests/cli/help_pages_test.sh checks it):
//   usage: <usage>            (continuation lines of `usage` are indented under it)
//   <blank>
//   <the first paragraph of `about`: what the command does>
//   <blank>
//   <the option groups: "options:" first, then any named groups>
//   notes:                    (the other paragraphs of `about`, indented; only when present)
//   examples:                 (one command each, indented; long ones continued with " \\")
// Paragraphs in `about` are separated by a blank line.
void print_help(std::ostream& out, const std::string& usage, const std::string& about,
                const boost::program_options::options_description& options, const std::vector<std::string>& examples);

// The columns an example line of a help page fits (help pages stay within 120, like reports).
inline constexpr std::size_t kHelpExampleColumns = 100;

// One example command as help prints it: indented two spaces; a command wider than `width`
// broken before an option, each line but the last ending in " \" (it still pastes into a
// shell), continuation lines indented six.
std::string example_lines(const std::string& command, std::size_t width);

// "512,1024,2048" -> {512, 1024, 2048}. UsageError naming the option and the item for
// anything that is not a positive number, or an empty list. An item with a leading zero
// ("1,024": 1 and 24?) is refused: a list takes no thousands separators, and reading one
// as two device counts would run a study nobody asked for.
template <typename T>
std::vector<T> parse_positive_list(const std::string& text, const char* option) {
  std::vector<T> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.size() > 1 && item[0] == '0' && item.find_first_not_of("0123456789") == std::string::npos)
      throw UsageError(std::string(option) + " '" + text + "': '" + item +
                       "' has a leading zero; lists are comma-separated and take no thousands separators (write "
                       "1024, not 1,024)");
    std::stringstream is(item);
    T v{};
    if (!(is >> v) || !is.eof() || !(v > 0))
      throw UsageError(std::string(option) + ": '" + item + "' is not a positive number");
    out.push_back(v);
  }
  if (out.empty()) throw UsageError(std::string(option) + " is empty");
  return out;
}

// "dgx-a100,dgx-h100" -> {"dgx-a100", "dgx-h100"}; UsageError for an empty item.
std::vector<std::string> parse_list_of_names(const std::string& text, const char* option);

}  // namespace ibt::suites
