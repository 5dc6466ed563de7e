#include "reports/store/writer_liveness.hpp"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <sstream>

namespace ibt::store {

namespace {

std::string host_name() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

std::string boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

// Field 22 of /proc/PID/stat: start time in clock ticks after boot; -1 when there is no
// such process. The command name (field 2) may hold spaces and parentheses: skip past
// its last ')'.
long long start_ticks(long long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22) return std::stoll(field);
  return -1;
}

// Seconds since an ISO 8601 UTC time "YYYY-MM-DDTHH:MM:SSZ"; nullopt when unparsable.
std::optional<double> age_seconds(const std::string& iso) {
  std::tm tm{};
  std::istringstream in(iso);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
  if (in.fail()) return std::nullopt;
  const std::time_t then = timegm(&tm);
  return std::difftime(std::time(nullptr), then);
}

}  // namespace

std::string utc_now_iso() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::vector<std::pair<std::string, AttrValue>> writer_identity() {
  const long long pid = getpid();
  return {{"writer_host", host_name()},
          {"writer_pid", static_cast<std::int64_t>(pid)},
          {"writer_boot_id", boot_id()},
          {"writer_start_ticks", static_cast<std::int64_t>(start_ticks(pid))},
          {"heartbeat", utc_now_iso()}};
}

std::string dead_writer_reason(const RunInfo& run) {
  if (run.attr_string("status") != "running") return "";
  const std::string host = run.attr_string("writer_host");
  const std::string pid_text = run.attr_string("writer_pid");
  if (host.empty() || pid_text.empty()) return "";  // written before ibt recorded its writers
  const std::string who = "its writer (pid " + pid_text + " on host " + host + ")";
  if (host == host_name() && run.attr_string("writer_boot_id") == boot_id()) {
    const auto recorded = run.attr("writer_start_ticks");
    const long long ticks =
        recorded && std::holds_alternative<std::int64_t>(*recorded) ? std::get<std::int64_t>(*recorded) : -2;
    if (start_ticks(std::stoll(pid_text)) != ticks)
      return "interrupted: " + who +
             " is gone without recording an end (killed, e.g. by SIGKILL or the OOM "
             "killer); last heartbeat " +
             run.attr_string("heartbeat");
    return "";
  }
  if (host == host_name()) return "interrupted: the machine rebooted since " + who + " started";
  const auto age = age_seconds(run.attr_string("heartbeat"));
  if (age && *age > kStaleHeartbeatSeconds)
    return "interrupted: no heartbeat from " + who + " since " + run.attr_string("heartbeat") +
           " (it refreshes every " + std::to_string(kHeartbeatSeconds) + " s)";
  return "";
}

void mark_if_interrupted(RunInfo& run) {
  const std::string reason = dead_writer_reason(run);
  if (reason.empty()) return;
  bool has_error = false;
  for (auto& [key, value] : run.attrs) {
    if (key == "status") value = std::string("interrupted");
    if (key == "error") has_error = true;
  }
  if (!has_error) run.attrs.emplace_back("error", reason);
}

}  // namespace ibt::store
