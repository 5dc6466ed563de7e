#pragma once
// Small helpers shared by the suites' command lines.
#include <boost/program_options.hpp>

#include <string>
#include <vector>

namespace ibt::suites {

// The whole command line as typed, for provenance: "ibt collectives -b 8 -e 1M".
std::string joined_command_line(int argc, char** argv);

// Throws UsageError for an option given more than once or a value out of range, with
// the option's name in the message.
void require_positive(long value, const char* option);

// Refuses numbers no option means: NaN and infinity in any numeric option, and a
// negative value in any numeric option given on the command line (no ibt flag takes
// one; 0 is how flags say "off"). Names the flag and the value. parse_command_line
// calls it; suites that parse by hand call it after po::store.
void refuse_nonsense_numbers(const boost::program_options::variables_map& vm);

// Refuses a timeout that is not a positive number of seconds up to a week (1e308 would
// overflow the deadline): names the flag.
void require_timeout(double seconds, const char* option);

// po::store of argv against `options` that refuses stray words (a positional argument
// the command does not take: `-t all_reduce all_gather`), naming the word, and
// numbers no option means (refuse_nonsense_numbers). For suites that handle --help and
// notify themselves.
void store_command_line(int argc, char** argv, const boost::program_options::options_description& options,
                        boost::program_options::variables_map& vm);
// The same for arguments already split (without the program name).
void store_command_line(const std::vector<std::string>& args, const boost::program_options::options_description& options,
                        boost::program_options::variables_map& vm);

// Parses argv against `options` (and `positional`, when given) into `vm`. A malformed
// command line becomes a UsageError carrying boost's message plus `hint`. Returns false
// when --help was asked for: the caller then prints its help and exits 0.
bool parse_command_line(int argc, char** argv, const boost::program_options::options_description& options,
                        boost::program_options::variables_map& vm,
                        const boost::program_options::positional_options_description* positional = nullptr,
                        const std::string& hint = "");

}  // namespace ibt::suites
