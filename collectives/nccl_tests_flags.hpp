#pragma once
// nccl-tests' command-line vocabulary for `ibt collectives`: its long option names
// (--minbytes, --datatype, --agg_iters ...) are accepted as hidden spellings of ibt's,
// and its flags that ibt does not offer are refused with the reason, not with a bare
// "unrecognised option".
#include <string>
#include <vector>

namespace ibt::suites {

// argv with nccl-tests' long names rewritten to ibt's (`--minbytes 8` -> `--min-bytes 8`,
// `--stepfactor=2` -> `--step-factor=2`). Throws UsageError for a nccl-tests flag ibt
// does not support, naming it and why; and for `-t NAME`/`--op SUM`-style mix-ups
// between nccl-tests' meaning and ibt's.
std::vector<std::string> nccl_tests_spellings(int argc, char** argv);

// The flags whose meaning depends on the backend (nccl-tests' -t, -g, -m, -C, -R):
// throws UsageError "... not supported by the mpi backend" (or nccl) where the backend
// cannot do what nccl-tests does with the value.
struct BackendFlags {
  int threads = 1, gpus = 1, agg_iters = 1, report_cputime = 0, local_register = 0;
};
void check_backend_flags(const BackendFlags& f, const std::string& backend);

}  // namespace ibt::suites
