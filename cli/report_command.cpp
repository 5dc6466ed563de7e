// ibt report: an HTML page with figures from one or more results files, or --compare two.
// The figures are drawn by matplotlib (reports/html/render_report.py) so the page uses a
// well-kept plotting library; this command checks the inputs, finds a Python that has
// h5py and matplotlib, and runs the renderer.
#include <sys/wait.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <vector>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "core/data_dirs.hpp"
#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "core/output_path.hpp"
#include "reports/store/store.hpp"

namespace ibt::suites {
namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;

// Runs argv without a shell; returns the exit status (or 128 + signal). Silent when asked.
int spawn(const std::vector<std::string>& args, bool quiet) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw RuntimeError("fork failed");
  if (pid == 0) {
    if (quiet) {
      std::freopen("/dev/null", "w", stdout);
      std::freopen("/dev/null", "w", stderr);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// Debian's /usr/bin/python3 has python3-h5py and python3-matplotlib; a python3 earlier on
// PATH (pyenv, conda) often has neither, so it is tried last.
std::string find_python(const std::string& requested) {
  std::vector<std::string> candidates;
  if (!requested.empty())
    candidates.push_back(requested);
  else {
    if (const char* env = std::getenv("IBT_PYTHON")) candidates.push_back(env);
    candidates.push_back("/usr/bin/python3");
    if (const char* path = std::getenv("PATH")) {
      std::string p = path;
      for (std::size_t start = 0; start <= p.size();) {
        const std::size_t end = std::min(p.find(':', start), p.size());
        if (end > start) candidates.push_back(p.substr(start, end - start) + "/python3");
        start = end + 1;
      }
    }
  }
  std::string tried;
  for (const auto& c : candidates) {
    if (access(c.c_str(), X_OK) != 0) continue;
    tried += (tried.empty() ? "" : ", ") + c;
    if (spawn({c, "-c", "import h5py, matplotlib, numpy"}, true) == 0) return c;
  }
  throw RuntimeError("no Python with h5py, matplotlib and numpy found (tried " + (tried.empty() ? "none" : tried) +
                     "); install python3-h5py python3-matplotlib (scripts/setup.sh does) or pass --python");
}

std::string find_renderer() {
#ifndef IBT_REPORT_SCRIPT_DIR
#define IBT_REPORT_SCRIPT_DIR "reports/html"
#endif
  const fs::path dir = data_dir("IBT_REPORT_SCRIPT_DIR", "reports/html", IBT_REPORT_SCRIPT_DIR);
  if (fs::exists(dir / "render_report.py")) return (dir / "render_report.py").string();
  throw RuntimeError((dir / "render_report.py").string() +
                     " not found (set IBT_REPORT_SCRIPT_DIR to the folder holding render_report.py, or IBT_DATA_DIR "
                     "to an installed share/ibt)");
}

const char* kUsage = "ibt report FILE.h5 [FILE2.h5 ...] --out DIR\nibt report --compare A.h5 B.h5 --out DIR";
const char* kAbout =
    "Writes DIR/index.html, a self-contained page (figures inlined, no network needed to view\n"
    "it), and every figure as PNG and SVG beside it: bus bandwidth against message size per op\n"
    "and scope (a line per run), small-message latency, the point-to-point matrix, acceptance\n"
    "verdicts, and, when the files hold them, projected/measured training (MFU against devices,\n"
    "step-time breakdown) and the PP crossover grid. Every run's status is shown; provenance\n"
    "(hosts, versions, command lines) closes the page. --compare puts two files side by side:\n"
    "B/A per op, scope and size, and a verdict per metric. Needs Python 3 with h5py and\n"
    "matplotlib (Debian: python3-h5py python3-matplotlib).\n"
    "--crossover-experiment DIR adds the measured-vs-projected PP crossover of a folder that\n"
    "scripts/cluster/crossover_experiment.sh wrote (its summary.tsv and projection.tsv).\n";

}  // namespace

int report_main(int argc, char** argv) {
  std::vector<std::string> files, experiments;
  std::string out, title, python;
  bool compare = false, force = false;
  double tolerance = 0.1;
  po::options_description opts("options");
  opts.add_options()("help,h", "show this help")(
      "out", po::value(&out),
      "folder to write index.html and the figures to (created if missing; a folder holding files is refused "
      "without --force)")("force", po::bool_switch(&force),
                          "write into an --out folder that already holds files (they may be replaced)")(
      "compare", po::bool_switch(&compare), "compare two files (A = baseline, B = candidate)")(
      "tolerance", double_value(&tolerance), "--compare: ratios within 1 +/- this are 'same'")(
      "title", po::value(&title), "page title")(
      "crossover-experiment", po::value(&experiments)->composing(),
      "folder from scripts/cluster/crossover_experiment.sh: draw its measured vs projected crossover (repeatable)")(
      "python", po::value(&python), "Python interpreter to draw with (default: one with h5py and matplotlib)");
  po::options_description hidden;
  hidden.add_options()("files", po::value(&files));
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description positional;
  positional.add("files", -1);
  po::variables_map vm;
  if (!parse_command_line(argc, argv, all, vm, &positional, " (see --help)")) {
    print_help(
        std::cout, kUsage, kAbout, opts,
        {"ibt report results/quickstart.h5 sweep.h5 --out report/",
         "ibt report scaling.h5 generations.h5 --out report/", "ibt report --compare h100.h5 b200.h5 --out compare/"});
    return kExitOk;
  }
  if (files.empty()) throw UsageError("no results files given (ibt report FILE.h5 ... --out DIR)");
  if (out.empty()) throw UsageError("--out DIR is required");
  if (compare && files.size() != 2)
    throw UsageError("--compare takes exactly two files (got " + std::to_string(files.size()) + ")");
  if (!(tolerance > 0 && tolerance < 1)) throw UsageError("--tolerance must be between 0 and 1");
  if (compare && !experiments.empty()) throw UsageError("--crossover-experiment does not go with --compare");
  for (const auto& d : experiments)
    for (const char* f : {"summary.tsv", "projection.tsv"})
      if (!fs::is_regular_file(fs::path(d) / f))
        throw UsageError("--crossover-experiment " + d + ": no " + f +
                         " there (run scripts/cluster/crossover_experiment.sh)");
  // The store's reader refuses a missing, foreign, corrupted or newer-schema file, or a
  // table that no longer matches its digest, with a message naming it, before anything is
  // drawn (the renderer's reader, ibt_h5.py, checks the digests again for direct use).
  for (const auto& f : files) store::check_tables(f);
  std::error_code ec;
  // The renderer replaces index.html and figure files by name: a folder that holds files
  // (an earlier report, or anything else) is written into only when asked.
  if (fs::exists(out, ec) && !fs::is_directory(out, ec))
    throw UsageError("--out " + out + ": is a file, not a folder; the report is a folder (index.html and figures)");
  std::vector<InputFile> inputs;
  for (const auto& f : files) inputs.push_back({"the results file", f});
  refuse_output_over_inputs(out, "--out", inputs, true);
  if (!force && fs::is_directory(out, ec) && !fs::is_empty(out, ec))
    throw UsageError("--out " + out +
                     ": the folder already holds files (an earlier report?) and is left as it is; "
                     "choose a new or empty folder, or add --force to write into it");
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out))
    throw UsageError("--out " + out + ": cannot create the folder (" + ec.message() + "): choose another --out");
  // A folder that exists may still take no files (closed to this user, read-only): found
  // now, not by the renderer after the figures are drawn.
  if (const std::string why = why_not_creatable(out + "/index.html", "--out"); !why.empty())
    throw UsageError("--out " + out + ": " + why);

  std::vector<std::string> args = {find_python(python), find_renderer(), "--out", out};
  if (compare) args.insert(args.end(), {"--compare", "--tolerance", std::to_string(tolerance)});
  if (!title.empty()) args.insert(args.end(), {"--title", title});
  for (const auto& d : experiments) args.insert(args.end(), {"--crossover-experiment", d});
  std::string command = "ibt report";
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  args.insert(args.end(), {"--command-line", command, "--"});
  args.insert(args.end(), files.begin(), files.end());
  const int status = spawn(args, false);
  if (status == 0) return kExitOk;
  if (status == kExitUsage) return kExitUsage;
  std::fprintf(stderr, "ibt report: error: the renderer (%s) failed with status %d\n", args[1].c_str(), status);
  return kExitFailure;
}

}  // namespace ibt::suites
