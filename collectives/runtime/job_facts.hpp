#pragma once
// Where a multi-rank job ran, recorded the same way by every command that launches ranks
// (collectives, p2p-matrix, accept, train, sweep, checkpoint-bench): hosts, ranks and
// cores per host, and whether ranks outnumbered cores (oversubscription), detected once
// here, warned about once on stderr and stored so reports and `ibt calibrate` see it.
#include <string>

#include "collectives/provenance.hpp"
#include "collectives/runtime/run_recorder.hpp"

namespace ibt::suites {

// Rank 0: writes the attributes hosts, ranks_per_host, cores_per_host, rank_hosts, rank_pids,
// oversubscribed (0/1) and, when 1, oversubscription ("4 ranks on 2 cores of host-a");
// prints the warning (prefixed "# warning: COMMAND: ", e.g. "ibt train") when oversubscribed, once
// per process.
// `recorder` may be null or inactive: then only the warning.
void record_job_facts(RunRecorder* recorder, const JobFacts& facts, const std::string& command);

}  // namespace ibt::suites
