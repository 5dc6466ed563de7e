#include "suites/cli.hpp"

#include <cstdio>
#include <ostream>

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

void note_old_spelling(const char* old_name, const char* name) {
  std::fprintf(stderr, "# note: --%s is now --%s; the old spelling goes in a later release\n", old_name, name);
}

boost::program_options::typed_value<double>* double_value(double* target) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", *target);
  return boost::program_options::value(target)->default_value(*target, text);
}

void print_help(std::ostream& out, const std::string& usage,
                const boost::program_options::options_description& options,
                const std::vector<std::string>& examples) {
  // Some commands' intros already open with their usage line (and explain more after it).
  out << (usage.rfind("usage:", 0) == 0 ? "" : "usage: ") << usage << "\n\n" << options << "\n";
  if (examples.empty()) return;
  out << "examples:\n";
  for (const auto& e : examples) out << "  " << e << "\n";
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
                        const std::string& hint,
                        const boost::program_options::options_description* hidden) {
  namespace po = boost::program_options;
  try {
    po::command_line_parser parser(argc, argv);
    po::options_description all;
    all.add(options);
    if (hidden) all.add(*hidden);
    parser.options(all);
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
