// ibt: one binary, one subcommand per suite.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/old_short_options.hpp"
#include "core/did_you_mean.hpp"
#include "core/errors.hpp"
#include "core/text_table.hpp"
#include "core/text_wrap.hpp"
#include "ibt/version.hpp"

namespace {

int gemm_entry(int argc, char** argv) { return ibt::suites::gemm_main(argc, argv); }

bool first_rank() {
  for (const char* v : {"PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"})
    if (const char* r = std::getenv(v)) return std::strcmp(r, "0") == 0;
  return true;
}

struct Suite {
  const char* name;
  const char* summary;
  int (*main)(int, char**);
};

const std::vector<Suite>& suites() {
  static const std::vector<Suite> list = {
      {"collectives", "microbenchmarks of collectives per scope (run under mpiexec or srun)",
       ibt::suites::collectives_main},
      {"p2p-matrix", "pairwise point-to-point bandwidth and latency between ranks or domains",
       ibt::suites::p2p_matrix_main},
      {"accept", "cluster acceptance: judge measurements against a reference, JUnit XML", ibt::suites::accept_main},
      {"train",
       "train a model at a DP/TP/PP/EP split on the CPU (fp32, MPI) or GPUs (--executor cuda), --check against the "
       "serial reference",
       ibt::suites::train_main},
      {"sweep", "train every valid split for a few steps and rank them by MFU", ibt::suites::sweep_main},
      {"project", "project step time, MFU and memory of a split on a catalog or calibrated topology",
       ibt::suites::project_main},
      {"crossover", "where pipeline parallelism stops paying, over domain sizes and network bandwidths",
       ibt::suites::crossover_main},
      {"scaling", "MFU and tokens/s per device against device count per hardware generation, best split per point",
       ibt::suites::scaling_main},
      {"calibrate", "fit a topology file from measured collectives and train runs", ibt::suites::calibrate_main},
      {"checkpoint-bench", "checkpoint write and read bandwidth for a state size, without training",
       ibt::suites::checkpoint_bench_main},
      {"project-compare", "projected vs measured step time of `ibt train` runs, per component",
       ibt::suites::project_compare_main},
      {"import-log",
       "a Megatron-LM, NeMo or torchtitan training log as a measured run (format told from the log, layout, "
       "iteration time, MFU, provenance)",
       ibt::suites::import_log_main},
      {"report", "an HTML report with figures from results files, or --compare two files", ibt::suites::report_main},
      {"show", "list the runs in a results file, or print one run", ibt::suites::show_main},
      {"export", "export runs from a results file as CSV or JSON", ibt::suites::export_main},
      {"gemm", "GEMM throughput on this GPU over training-shaped problems (cuBLASLt)", gemm_entry},
  };
  return list;
}

// The commands and what each does: the summary wraps under itself to fit `width` (0: one
// line per command, however long).
std::string command_list(std::size_t width) {
  ibt::TextTable table;
  table.add_column({"", ibt::TextTable::Align::left, "", 16});
  table.add_column(ibt::TextTable::Column("", ibt::TextTable::Align::left).wrapping());
  for (const auto& s : suites()) table.add_row({s.name, s.summary});
  ibt::TextTable::Style style;
  style.indent = "  ";
  style.gap = " ";
  style.header = false;
  style.width = width;
  return table.render(style);
}

void print_usage(std::FILE* out, std::size_t width) {
  std::fprintf(out,
               "ibt %s (%s): a benchmark and conformance suite for interconnect-bound LLM training\n\n"
               "usage: ibt <command> [options]     (ibt <command> --help, or ibt help <command>, for its options)\n\n"
               "commands:\n",
               ibt::kVersion, ibt::kGitCommit);
  std::fputs(command_list(width).c_str(), out);
  std::fprintf(out,
               "\nMulti-rank commands run under an MPI launcher, e.g.\n"
               "  mpiexec -n 4 ibt collectives --scope all --domain-size 2 --out results.h5\n"
               "Results go to HDF5 files (one file, many runs); `ibt show FILE` lists them.\n\n%s",
               ibt::kExitStatusTable);
}

// `ibt`, `ibt --help` (-h, help): the command list within 120 columns; with --wide
// (`ibt --help --wide`) each command's summary on its one line, however long.
int usage_main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stdout, ibt::kReportColumns);
    return ibt::kExitUsage;
  }
  bool wide = false, asked = false;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--wide" && !wide) {
      wide = true;
    } else if ((word == "--help" || word == "-h" || word == "help") && !asked) {
      asked = true;
    } else {
      std::fprintf(stderr, "ibt --help: unexpected '%s' (ibt --help [--wide], or ibt help <command>)\n", argv[i]);
      return ibt::kExitUsage;
    }
  }
  if (!asked) {
    std::fprintf(stderr, "ibt: --wide is an option of --help or of a command (ibt --help --wide)\n");
    return ibt::kExitUsage;
  }
  print_usage(stdout, wide ? 0 : ibt::kReportColumns);
  return ibt::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) makes a write fail with EFBIG, which the store
  // undoes, instead of killing the process mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  // `ibt help CMD` is `ibt CMD --help`.
  std::vector<char*> help_args;
  static char help_flag[] = "--help";
  if (argc == 3 && !std::strcmp(argv[1], "help") && std::strcmp(argv[2], "--wide") != 0) {
    help_args = {argv[0], argv[2], help_flag};
    argc = 3;
    argv = help_args.data();
  }
  const bool help = argc >= 2 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
                                  !std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--wide"));
  if (argc < 2 || help) return usage_main(argc, argv);
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("ibt %s (%s)\n", ibt::kVersion, ibt::kGitCommit);
    return ibt::kExitOk;
  }
  for (const auto& s : suites()) {
    if (std::strcmp(argv[1], s.name) != 0) continue;
    std::string name = std::string("ibt ") + s.name;
    std::vector<std::string> notes;
    std::vector<std::string> words =
        ibt::suites::rewrite_old_short_options(s.name, std::vector<std::string>(argv + 2, argv + argc), notes);
    // Under a launcher every rank would say it: rank 0 does (the launchers' rank variables).
    if (first_rank())
      for (const auto& n : notes) std::fprintf(stderr, "%s\n", n.c_str());
    std::vector<char*> args{name.data()};
    for (auto& w : words) args.push_back(w.data());
    try {
      return s.main(static_cast<int>(args.size()), args.data());
    } catch (const ibt::UsageError& e) {
      std::fprintf(stderr, "ibt %s: error: %s\n", s.name, e.what());
      return ibt::kExitUsage;
    } catch (const ibt::StorageError& e) {
      std::fprintf(stderr, "ibt %s: error: %s\n", s.name, e.what());
      return ibt::kExitStorage;
    } catch (const std::bad_alloc&) {
      // A request no plan caught (the plans cover model shapes, batches, message sizes,
      // pools and schedules): say so plainly rather than "std::bad_alloc".
      std::fprintf(stderr,
                   "ibt %s: error: out of memory (std::bad_alloc): the request needs more memory than this "
                   "host has; reduce the sizes or batch\n",
                   s.name);
      return ibt::kExitFailure;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ibt %s: error: %s\n", s.name, e.what());
      return ibt::kExitFailure;
    }
  }
  std::vector<std::string> commands;
  for (const auto& s : suites()) commands.push_back(s.name);
  const std::string close = ibt::closest_name(argv[1], commands);
  std::fprintf(stderr, "ibt: unknown command '%s' (%srun `ibt --help` for the list)\n", argv[1],
               close.empty() ? "" : ("did you mean '" + close + "'? ").c_str());
  return ibt::kExitUsage;
}
