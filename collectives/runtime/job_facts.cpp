#include "collectives/runtime/job_facts.hpp"

#include <cstdio>
#include <type_traits>

#include "core/text_wrap.hpp"

namespace ibt::suites {

namespace {

template <typename T>
std::string joined(const std::vector<T>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if constexpr (std::is_same_v<T, std::string>)
      out += (i ? "," : "") + items[i];
    else
      out += (i ? "," : "") + std::to_string(items[i]);
  }
  return out;
}

// The 1-minute load average of this host (rank 0's) as the run starts, -1 when unknown:
// with more runnable work than cores, some of it was not ibt's, and timings show it.
double load_average_now() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (!f) return -1;
  double load = -1;
  if (std::fscanf(f, "%lf", &load) != 1) load = -1;
  std::fclose(f);
  return load;
}

}  // namespace

void record_job_facts(RunRecorder* recorder, const JobFacts& facts, const std::string& command) {
  const std::string over = facts.oversubscription();
  static bool warned = false;  // a sweep records one run per split: one warning is enough
  // Prose, so always within the 120 columns of every command's default output.
  if (!over.empty() && !warned && (warned = true))
    std::fputs(comment_lines("# warning: " + command + ": oversubscribed (" + over +
                                 "): ranks busy-poll against each other, so timings measure the scheduler, not the "
                                 "interconnect; never publish or calibrate from them\n",
                             kReportColumns)
                   .c_str(),
               stderr);
  if (!recorder || !recorder->active()) return;
  recorder->set_attr("hosts", joined(facts.hosts));
  recorder->set_attr("ranks_per_host", joined(facts.ranks_per_host));
  recorder->set_attr("cores_per_host", joined(facts.cores_per_host));
  recorder->set_attr("rank_hosts", facts.host_of_rank_list);
  recorder->set_attr("rank_pids", facts.pid_of_rank_list);
  recorder->set_attr("oversubscribed", static_cast<std::int64_t>(!over.empty()));
  if (!over.empty()) recorder->set_attr("oversubscription", over);
  if (const double load = load_average_now(); load >= 0) recorder->set_attr("load_average_1m", load);
}

}  // namespace ibt::suites
