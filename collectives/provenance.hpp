#pragma once
// Facts about the job recorded beside every run: where it ran and with what.
#include <mpi.h>

#include <string>
#include <utility>
#include <vector>

namespace ibt {

// Environment variables worth recording: they change how communication libraries behave.
// Only these prefixes are ever stored, never the whole environment (which holds secrets).
inline const std::vector<std::string> kEnvironmentAllowList = {
    "NCCL_", "CUDA_", "UCX_", "MPIR_CVAR_", "OMPI_", "SLURM_", "HYDRA_", "I_MPI_", "FI_", "OPENBLAS_", "OMP_"};

bool environment_allowed(const std::string& name);
// A name that looks like it holds a secret even under an allowed prefix (SLURM_JOB_TOKEN,
// UCX_..._PASSWORD): it contains TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL, or one of
// its '_'-separated words is KEY or APIKEY (NCCL_IB_PKEY, a partition number, is kept).
// Its value is stored as kRedacted, so a reader sees that it was set but not to what.
bool environment_secret(const std::string& name);
inline constexpr const char* kRedacted = "<redacted>";
// The allowed variables of an environment (as in `environ`), sorted by name.
std::vector<std::pair<std::string, std::string>> allowed_environment(char** environ_entries);

struct JobFacts {
  std::vector<std::string> hosts;   // distinct host names, in rank order of first appearance
  std::vector<int> ranks_per_host;  // parallel to hosts
  std::string host_of_rank_list;    // "r0=host-a,r1=host-a,..." (compact per-rank map)
  // "r0=4711,r1=4712,...": each rank's pid on its host, so the pid MPICH's launcher names
  // when it reports a killed rank ("PID 4712 RUNNING AT host-a") maps to the rank.
  std::string pid_of_rank_list;
  std::vector<int> cores_per_host;  // parallel to hosts: online CPUs its first rank saw
  // Ranks outnumber cores on some host: then MPI ranks busy-poll against each other and
  // timings measure the scheduler, not the interconnect. "" when not, else e.g.
  // "4 ranks on 2 cores of host-a".
  std::string oversubscription() const;
};
// Collective over world; the result is complete on rank 0. Gathers the rank identities
// (rank_identity.hpp) too, for the messages about a rank that stops or dies.
JobFacts gather_job_facts(MPI_Comm world);

}  // namespace ibt
