#pragma once
// ibt accept's verdicts: what a job (or a results file) measured, each reference metric
// judged on it, the PASS/FAIL table printed and stored as table "accept" (accept_table.hpp).
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/acceptance/accept_reference.hpp"
#include "collectives/harness.hpp"
#include "collectives/p2p_matrix.hpp"
#include "collectives/runtime/p2p_rows.hpp"
#include "collectives/runtime/run_recorder.hpp"
#include "reports/store/store.hpp"

namespace ibt::suites {

// What the job measured (rank 0's copy is the one judged), or what --from read.
struct AcceptMeasurements {
  // (op, scope, dtype, bytes) -> the out-of-place measurement (rank 0)
  std::map<std::tuple<std::string, std::string, std::string, std::size_t>, Measurement> collectives;
  std::uint64_t wrong = 0;
  std::vector<std::string> wrong_where;  // where they were seen, by rank and host (accept_where.hpp)
  std::unique_ptr<P2pCollector> p2p;     // rank 0, when the reference has p2p metrics
  std::vector<P2pResult> p2p_from_file;  // --from: the p2p matrix rows of the file
  bool p2p_read = false;                 // --from found a p2p matrix
  bool intra_is_world = false;           // --from: a one-domain run, its intra rows are its world rows
  std::string source;                    // --from: "FILE run N" (p2p: "run M")
  long long ranks = 0;                   // --from: the run's world size
  std::string config_json;               // --from: the run's options ("config" attribute)
};

struct Verdict {
  const AcceptMetric* metric;
  Judgement judgement;
  std::string note;  // why it was not measured, or the sizes it covered
};

struct Failures {
  int count = 0;
  std::string names;  // "a, b"
};

// A judged value as the table and the JUnit file print it: 4 significant digits, "inf",
// "n/a" for a metric nothing was measured for.
std::string format_judged_value(double v);

// Every metric of the reference judged on the measurements.
std::vector<Verdict> judge_metrics(const AcceptReference& ref, const AcceptMeasurements& measured);

// The PASS/FAIL table, each verdict stored as a row of table "accept". Within `width`
// columns (the verdict's note wrapping under it); 0 (--wide): one line per metric at the
// widths it always had.
Failures print_and_record_verdicts(const std::vector<Verdict>& verdicts, RunRecorder& recorder, std::size_t width = 0);

}  // namespace ibt::suites
