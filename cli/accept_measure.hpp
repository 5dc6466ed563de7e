#pragma once
// ibt accept's measuring: the work a reference asks of a job (collectives per scope, op and
// dtype at the sizes its metrics name; the point-to-point matrix at the p2p sizes), checked
// against the job and the backend, then run with each result printed and stored (rank 0).
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/acceptance/accept_judge.hpp"
#include "collectives/arrival_gate.hpp"
#include "collectives/domains.hpp"
#include "collectives/runtime/backends.hpp"
#include "collectives/runtime/job_facts.hpp"
#include "collectives/runtime/job_guard.hpp"
#include "collectives/runtime/mpi_session.hpp"

namespace ibt::suites {

// One harness pass per (scope, op, dtype), over the sizes its metrics need: no op is
// measured at sizes only another op's metrics ask for.
using AcceptWorkKey = std::tuple<Scope, std::string, std::string>;

// What to run: the sizes per (scope, op, dtype) and the p2p sizes the metrics ask for.
struct AcceptWork {
  std::map<AcceptWorkKey, std::set<std::size_t>> collectives;
  std::set<std::size_t> p2p_sizes;
};

// Every scope, op and dtype a metric names must exist in this job and on this backend;
// throws UsageError naming the metric otherwise.
AcceptWork plan_accept_work(const AcceptReference& ref, const DomainLayout& layout, const Backend& backend,
                            const MpiSession& mpi);

// Where the measurements run.
struct MeasureContext {
  Backend& backend;
  const DomainLayout& layout;
  ArrivalGate& gate;
  JobGuard& guard;
  RunRecorder* recorder;           // rank 0's; nullptr elsewhere
  bool wide = false;               // --wide: the "measured" lines at the widths they always had
  std::vector<std::string> hosts;  // host per world rank: who held wrong values
  HarnessOptions faults;           // only its testing hooks (--inject-stall, --inject-wrong) are read
};

// One harness pass per (scope, op, dtype); each size printed and stored (rank 0) as it comes.
void measure_accept_collectives(const AcceptWork& work, const AcceptReference& ref, double timeout,
                                const MeasureContext& job, AcceptMeasurements& measured);

// The point-to-point matrix at the p2p metrics' sizes; rank 0 collects the pairs.
void measure_accept_p2p(const AcceptWork& work, const AcceptReference& ref, double timeout, const MpiSession& mpi,
                        const JobFacts& facts, const MeasureContext& job, AcceptMeasurements& measured);

}  // namespace ibt::suites
