#include "collectives/provenance.hpp"

#include "collectives/rank_identity.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <ctime>

#include <unistd.h>

namespace ibt {

bool environment_allowed(const std::string& name) {
  return std::any_of(kEnvironmentAllowList.begin(), kEnvironmentAllowList.end(),
                     [&](const std::string& prefix) { return name.rfind(prefix, 0) == 0; });
}

bool environment_secret(const std::string& name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  for (const char* word : {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"})
    if (upper.find(word) != std::string::npos) return true;
  std::size_t start = 0;
  while (start <= upper.size()) {
    const std::size_t end = std::min(upper.find('_', start), upper.size());
    const std::string part = upper.substr(start, end - start);
    if (part == "KEY" || part == "APIKEY") return true;
    start = end + 1;
  }
  return false;
}

std::vector<std::pair<std::string, std::string>> allowed_environment(char** env) {
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = env; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (!eq) continue;
    std::string name(*e, eq - *e);
    if (!environment_allowed(name)) continue;
    std::string value = environment_secret(name) ? kRedacted : std::string(eq + 1);
    out.emplace_back(std::move(name), std::move(value));
  }
  std::sort(out.begin(), out.end());
  return out;
}

JobFacts gather_job_facts(MPI_Comm world) {
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::vector<char> all(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, world);
  const int cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::vector<int> all_cores(static_cast<std::size_t>(size));
  MPI_Gather(&cores, 1, MPI_INT, all_cores.data(), 1, MPI_INT, 0, world);
  gather_rank_identities(world);
  JobFacts facts;
  if (rank != 0) return facts;
  for (int r = 0; r < size; ++r) {
    std::string host(&all[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
    auto it = std::find(facts.hosts.begin(), facts.hosts.end(), host);
    if (it == facts.hosts.end()) {
      facts.hosts.push_back(host);
      facts.ranks_per_host.push_back(1);
      facts.cores_per_host.push_back(all_cores[static_cast<std::size_t>(r)]);
    } else {
      ++facts.ranks_per_host[it - facts.hosts.begin()];
    }
    facts.host_of_rank_list += (r ? "," : "") + std::string("r") + std::to_string(r) + "=" + host;
    facts.pid_of_rank_list += (r ? "," : "") + std::string("r") + std::to_string(r) + "=" + std::to_string(rank_pid(r));
  }
  return facts;
}

std::string JobFacts::oversubscription() const {
  std::string out;
  for (std::size_t h = 0; h < hosts.size() && h < cores_per_host.size(); ++h)
    if (cores_per_host[h] > 0 && ranks_per_host[h] > cores_per_host[h])
      out += (out.empty() ? "" : "; ") + std::to_string(ranks_per_host[h]) + " ranks on " +
             std::to_string(cores_per_host[h]) + " cores of " + hosts[h];
  return out;
}

}  // namespace ibt
