#include "core/memory_plan.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/errors.hpp"

namespace ibt {

namespace {

std::uint64_t meminfo_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

// cgroup v2: memory.max minus memory.current, when memory.max is a number.
std::uint64_t cgroup_remaining() {
  std::ifstream max_file("/sys/fs/cgroup/memory.max"), current_file("/sys/fs/cgroup/memory.current");
  std::string max_text;
  std::uint64_t current = 0;
  if (!(max_file >> max_text) || max_text == "max" || !(current_file >> current)) return 0;
  const std::uint64_t max = std::stoull(max_text);
  return max > current ? max - current : 1;
}

}  // namespace

std::uint64_t available_memory_bytes() {
  const std::uint64_t mem = meminfo_available(), cgroup = cgroup_remaining();
  if (mem && cgroup) return std::min(mem, cgroup);
  return mem ? mem : cgroup;
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) bytes /= 1024, ++u;
  char text[64];
  std::snprintf(text, sizeof text, u ? "%.3g %s" : "%.0f %s", bytes, units[u]);
  return text;
}

void require_memory(double bytes, const std::string& field, int ranks_sharing) {
  const double total = bytes * std::max(ranks_sharing, 1);
  const std::uint64_t available = available_memory_bytes();
  if (!std::isfinite(total)) throw UsageError(field + " asks for more memory than can be counted");
  if (available == 0 || total <= static_cast<double>(available)) return;
  std::ostringstream text;
  text << field << " needs " << static_cast<unsigned long long>(total) << " bytes (" << human_bytes(total);
  if (ranks_sharing > 1) text << ": " << human_bytes(bytes) << " on each of " << ranks_sharing << " ranks on this host";
  text << ") but only " << available << " bytes (" << human_bytes(static_cast<double>(available))
       << ") are available on this host; refusing before allocating";
  throw UsageError(text.str());
}

}  // namespace ibt
