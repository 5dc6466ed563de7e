#include "suites/cli.hpp"

#include <algorithm>
#include <thread>

#include "core/errors.hpp"

namespace ibt::suites {

std::string joined_command_line(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    // argv[0] is "ibt <suite>" as main() set it: not a single word to quote.
    const bool quote = i > 0 && (arg.find_first_of(" \t\"'") != std::string::npos || arg.empty());
    out += (i ? " " : "") + (quote ? "'" + arg + "'" : arg);
  }
  return out;
}

void require_positive(long value, const char* option) {
  if (value <= 0) throw UsageError(std::string(option) + " must be positive (got " + std::to_string(value) + ")");
}

int resolve_jobs(int jobs) {
  if (jobs < 0) throw UsageError("--jobs must be >= 0 (0 = all cores; got " + std::to_string(jobs) + ")");
  if (jobs == 0) return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return jobs;
}

bool parse_command_line(int argc, char** argv, const boost::program_options::options_description& options,
                        boost::program_options::variables_map& vm,
                        const boost::program_options::positional_options_description* positional,
                        const std::string& hint) {
  namespace po = boost::program_options;
  try {
    po::command_line_parser parser(argc, argv);
    parser.options(options);
    if (positional) parser.positional(*positional);
    po::store(parser.run(), vm);
    if (vm.count("help")) return false;  // before notify: --help works without required options
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what() + hint);
  }
  return true;
}

}  // namespace ibt::suites
