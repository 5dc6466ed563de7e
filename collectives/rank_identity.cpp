#include "collectives/rank_identity.hpp"

#include <unistd.h>

#include <atomic>
#include <cstring>

namespace ibt {
namespace {

constexpr int kHostChars = 256;

// Written once by the gather (on the main thread, before any watchdog deadline can pass)
// and never changed after: readers on other threads see it through the release/acquire
// pair on `published`.
std::vector<RankIdentity> table;
std::atomic<bool> published{false};

const std::vector<RankIdentity>* known() { return published.load(std::memory_order_acquire) ? &table : nullptr; }

}  // namespace

void gather_rank_identities(MPI_Comm world) {
  if (published.load(std::memory_order_acquire)) return;  // one per process: the job's ranks do not change
  int size = 1;
  MPI_Comm_size(world, &size);
  char host[kHostChars] = {};
  gethostname(host, sizeof host - 1);
  const long pid = getpid();
  std::vector<long> pids(size);
  std::vector<char> hosts(static_cast<std::size_t>(size) * kHostChars);
  MPI_Allgather(&pid, 1, MPI_LONG, pids.data(), 1, MPI_LONG, world);
  MPI_Allgather(host, kHostChars, MPI_CHAR, hosts.data(), kHostChars, MPI_CHAR, world);
  table.resize(size);
  for (int r = 0; r < size; ++r) {
    const char* h = &hosts[static_cast<std::size_t>(r) * kHostChars];
    table[r] = {pids[r], std::string(h, strnlen(h, kHostChars))};
  }
  published.store(true, std::memory_order_release);
}

long rank_pid(int world_rank) {
  const auto* ranks = known();
  return ranks && world_rank >= 0 && world_rank < static_cast<int>(ranks->size()) ? (*ranks)[world_rank].pid : 0;
}

std::string rank_host(int world_rank) {
  const auto* ranks = known();
  return ranks && world_rank >= 0 && world_rank < static_cast<int>(ranks->size()) ? (*ranks)[world_rank].host : "";
}

std::string describe_rank_process(int world_rank) {
  const auto* ranks = known();
  if (!ranks || world_rank < 0 || world_rank >= static_cast<int>(ranks->size())) return "";
  const RankIdentity& id = (*ranks)[world_rank];
  return "pid " + std::to_string(id.pid) + " on host " + id.host;
}

std::string rank_processes_suffix(const std::vector<int>& ranks) {
  std::string text;
  for (const int r : ranks) {
    const std::string process = describe_rank_process(r);
    if (process.empty()) return "";
    if (!text.empty()) text += "; ";
    text += ranks.size() == 1 ? process : "rank " + std::to_string(r) + ": " + process;
  }
  return text.empty() ? "" : " (" + text + ")";
}

std::vector<int> other_ranks(int self) {
  std::vector<int> others;
  const auto* ranks = known();
  if (!ranks) return others;
  for (int r = 0; r < static_cast<int>(ranks->size()); ++r)
    if (r != self) others.push_back(r);
  return others;
}

}  // namespace ibt
