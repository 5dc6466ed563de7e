#pragma once
// Every `ibt` subcommand is a function taking the arguments after the subcommand name
// (argv[0] is "ibt <name>") and returning the process exit status. Each parses its own
// options with Boost.Program_options and documents them in its --help.
namespace ibt::suites {

int collectives_main(int argc, char** argv);
int show_main(int argc, char** argv);
int export_main(int argc, char** argv);
int gemm_main(int argc, char** argv);  // --help in any build; measuring needs CUDA (IBT_HAVE_CUDA)
int p2p_matrix_main(int argc, char** argv);
int accept_main(int argc, char** argv);
int report_main(int argc, char** argv);
int train_main(int argc, char** argv);
int sweep_main(int argc, char** argv);
int project_main(int argc, char** argv);
int crossover_main(int argc, char** argv);
int scaling_main(int argc, char** argv);
int calibrate_main(int argc, char** argv);
int checkpoint_bench_main(int argc, char** argv);
int project_compare_main(int argc, char** argv);
int import_log_main(int argc, char** argv);

}  // namespace ibt::suites
