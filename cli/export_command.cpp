// `ibt export FILE.h5 --csv|--json [--run ID] [--table NAME] [--out PATH]`.
#include <boost/program_options.hpp>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "reports/text/export.hpp"

namespace po = boost::program_options;

namespace ibt::suites {

namespace {

const char* kUsage = "ibt export FILE.h5 --csv|--json [--run ID] [--table NAME] [--out PATH]";
const char* kAbout =
    "Writes runs of an ibt results file as CSV or JSON (to stdout unless --out).\n"
    "  CSV:  one header line (run_id, kind, then the table's columns) and one line per\n"
    "        table row. Several runs are concatenated when their table has the same\n"
    "        columns; a CSV holds one table, so name it with --table when runs hold several.\n"
    "  JSON: every selected run with its attributes, environment and tables; each table\n"
    "        has its columns (name, type, unit) and its rows as objects.\n"
    "Numbers are exact (they read back to the stored values). Runs are named by id\n"
    "(000003), by number (3) or as 'last'.\n";
const std::vector<std::string> kExamples = {
    "ibt export results.h5 --csv --table collectives > collectives.csv",
    "ibt export results.h5 --json --run last --out last-run.json",
    "python3 -c 'import pandas as pd; print(pd.read_csv(\"collectives.csv\"))'"};

}  // namespace

int export_main(int argc, char** argv) {
  po::options_description visible("options");
  visible.add_options()("help,h", "print this help and exit")("csv", "write CSV (one table)")("json", "write JSON")(
      "run", po::value<std::string>()->value_name("ID"), "export only this run: its id, its number, or 'last'")(
      "table", po::value<std::string>()->value_name("NAME"), "export only this table (e.g. collectives)")(
      "out", po::value<std::string>()->value_name("PATH"),
      "write here instead of stdout (never over an existing file without --force)")(
      "force", "replace the --out file when it exists");
  po::options_description all;
  // --output: the old spelling of --out, kept for one release.
  all.add(visible).add_options()("file", po::value<std::string>())("output", po::value<std::string>());
  po::positional_options_description positional;
  positional.add("file", 1);

  po::variables_map vm;
  if (!parse_command_line(argc, argv, all, vm, &positional, " (see `ibt export --help`)")) {
    print_help(std::cout, kUsage, kAbout, visible, kExamples);
    return kExitOk;
  }
  if (!vm.count("file")) throw UsageError("no results file given (usage: ibt export FILE.h5 --csv|--json)");
  const bool csv = vm.count("csv") > 0, json = vm.count("json") > 0;
  if (csv == json) throw UsageError("choose one format: --csv or --json");

  const std::string path = vm["file"].as<std::string>();
  std::string out_path = vm.count("out") ? vm["out"].as<std::string>() : "";
  take_alias(vm, "output", "out", out_path);
  const bool to_file = vm.count("out") || vm.count("output");
  if (to_file) {  // refused before reading anything
    refuse_output_over_inputs(out_path, "--out", {{"the results file", path}});
    refuse_existing_output(out_path, "--out", vm.count("force") > 0);
  }
  reports::ExportSelection selection;
  if (vm.count("run")) selection.run = vm["run"].as<std::string>();
  if (vm.count("table")) selection.table = vm["table"].as<std::string>();

  // Build the whole export first: a refused or failed export leaves no partial output.
  std::ostringstream text;
  if (csv)
    reports::write_csv(text, path, selection);
  else
    text << reports::export_json(path, selection).dump(2) << '\n';

  if (!to_file) {
    std::cout << text.str();
    return kExitOk;
  }
  write_output_file(out_path, text.str(), "--out");
  return kExitOk;
}

}  // namespace ibt::suites
