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

// --jobs: a thread count >= 1 (0 = every core std::thread reports); negative is a
// UsageError naming --jobs.
int resolve_jobs(int jobs);

// Parses argv against `options` (and `positional`, when given) into `vm`. A malformed
// command line becomes a UsageError carrying boost's message plus `hint`. Returns false
// when --help was asked for: the caller then prints its help and exits 0.
bool parse_command_line(int argc, char** argv, const boost::program_options::options_description& options,
                        boost::program_options::variables_map& vm,
                        const boost::program_options::positional_options_description* positional = nullptr,
                        const std::string& hint = "");

}  // namespace ibt::suites
