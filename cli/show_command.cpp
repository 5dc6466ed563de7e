// `ibt show FILE.h5 [--run ID] [--table NAME]`: what a results file holds, as text.
#include <boost/program_options.hpp>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "core/errors.hpp"
#include "core/text_wrap.hpp"
#include "reports/store/store.hpp"
#include "reports/text/run_selection.hpp"
#include "reports/text/run_text.hpp"

namespace po = boost::program_options;

namespace ibt::suites {

namespace {

const char* kUsage = "ibt show FILE.h5 [--run ID] [--table NAME] [--wide]";
const char* kAbout =
    "Prints what an ibt results file holds. Without --run: one line per run (id, kind,\n"
    "status, start time, number of ranks, command line). With --run: that run's\n"
    "attributes (provenance), its recorded environment and its tables, aligned, with\n"
    "units under the column names. With --table alone: that table of every run that has it.\n"
    "Runs are named by id (000003), by number (3) or as 'last'.\n";
const std::vector<std::string> kExamples = {"ibt show results.h5", "ibt show results.h5 --run last",
                                            "ibt show results.h5 --run 2 --table collectives"};

}  // namespace

int show_main(int argc, char** argv) {
  po::options_description visible("options");
  visible.add_options()("help,h", "print this help and exit")("run", po::value<std::string>()->value_name("ID"),
                                                              "show this run: its id, its number, or 'last'")(
      "table", po::value<std::string>()->value_name("NAME"), "show only this table (e.g. collectives)")(
      "wide", po::bool_switch(),
      "each table row and attribute on one line however long; by default every line fits 120 columns (a "
      "long value continues under itself, a row with more columns than fit on the lines below it)");
  po::options_description all;
  all.add(visible).add_options()("file", po::value<std::string>());
  po::positional_options_description positional;
  positional.add("file", 1);

  po::variables_map vm;
  if (!parse_command_line(argc, argv, all, vm, &positional, " (see `ibt show --help`)")) {
    print_help(std::cout, kUsage, kAbout, visible, kExamples);
    return kExitOk;
  }
  if (!vm.count("file")) throw UsageError("no results file given (usage: ibt show FILE.h5 [--run ID] [--table NAME])");

  const std::string path = vm["file"].as<std::string>();
  std::optional<std::string> table;
  if (vm.count("table")) table = vm["table"].as<std::string>();
  const auto runs = store::list_runs(path);
  const std::size_t width = vm["wide"].as<bool>() ? 0 : kReportColumns;

  if (vm.count("run")) {
    const store::RunInfo& run = reports::find_run(runs, vm["run"].as<std::string>(), path);
    reports::require_table_somewhere({run}, table, path);
    reports::print_run(std::cout, path, run, table, width);
  } else if (table) {
    reports::require_table_somewhere(runs, table, path);
    for (const auto& run : runs) {
      if (reports::select_tables(run, table).empty()) continue;
      const store::TableData data = store::read_table(path, run.id, *table);
      std::cout << "run " << run.id << " (" << run.attr_string("kind") << ", " << run.attr_string("status")
                << "), table " << *table << ":\n";
      reports::print_table(std::cout, data, "  ", width);
      std::cout << '\n';
    }
  } else {
    reports::print_run_list(std::cout, runs, width);
  }
  return kExitOk;
}

}  // namespace ibt::suites
