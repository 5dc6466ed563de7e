#pragma once
// ibt collectives' command line: the flags (nccl-tests' names and spellings), their checks,
// and what they become: the harness options, the scopes this job can measure, and the
// configuration stored with the run.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "collectives/domains.hpp"
#include "collectives/harness.hpp"
#include "collectives/nccl_tests_flags.hpp"
#include "collectives/runtime/backends.hpp"
#include "collectives/runtime/mpi_session.hpp"

namespace ibt::suites {

// The parsed command line, as given (sizes still text: the nccl-tests printer shows them).
struct CollectivesArgs {
  std::string min_bytes = "8", max_bytes = "4M", step_bytes = "0";
  double step_factor = 2.0;
  std::string ops = "all", dtypes = "float32", reduce_op = "sum", scopes = "all", placement = "both";
  std::string aggregation = "avg", backend = "mpi", out, rotate = "64M", inject_stall, nccl_comm = "split";
  std::string output_format = "ibt", timing = "loop", outlier_bandwidth_from = "64K";
  bool wide = false;  // ibt's table on one line per size (174 columns) instead of 120
  int cuda_graph = 0;
  int iters = 20, warmup = 5, check = 1, blocking = 0, root = 0, domain_size = 0, inject_wrong = -1;
  int cycles = 1;
  BackendFlags backend_flags;
  double timeout = 60, outlier_threshold = 0.5;
};

// Parses argv (nccl-tests' spellings taken) into `args`; false when --help was asked for
// (rank 0 has printed it). rotate_given: --rotate-bytes was on the command line.
bool parse_collectives_args(int argc, char** argv, const MpiSession& mpi, CollectivesArgs& args, bool& rotate_given);

// The flags the harness options do not check; imb timing's buffer reuse settled. Returns
// --outlier-bandwidth-from in bytes.
std::size_t check_output_flags(CollectivesArgs& args, bool rotate_given);

// The harness options the flags ask for, every value checked (UsageError naming the flag);
// the scopes are left to feasible_scopes.
HarnessOptions to_harness_options(const CollectivesArgs& a, const Backend& backend);

// The testing hooks into `h`: --inject-stall RANK:K[:inside] (RANK stops before measurement
// K) and --inject-wrong RANK (RANK's checked result perturbed); UsageError naming a
// malformed --inject-stall. Shared by collectives and accept.
void apply_fault_injection(const std::string& inject_stall, int inject_wrong, HarnessOptions& h);

// The requested scopes this job can measure; with --scope all, the ones a one-domain job
// cannot (inter) or would measure twice (intra = world) are skipped with a note.
std::vector<Scope> feasible_scopes(const std::string& requested, const DomainLayout& layout,
                                   std::vector<std::string>& notes);

// The flags as the run's "config" attribute stores them.
nlohmann::json collectives_config(const CollectivesArgs& args);

}  // namespace ibt::suites
