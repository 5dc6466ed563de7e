#pragma once
// Telling a live run from a dead one. The writer records who it is on the run group
// (writer_host, writer_pid, writer_boot_id, writer_start_ticks: the process's start time
// in clock ticks since boot, so a recycled pid is not mistaken for the writer) and
// refreshes `heartbeat` (ISO 8601 UTC) every kHeartbeatSeconds while it runs. A reader
// that finds status "running" reports the run as "interrupted" when the writer is
// provably gone (same host and boot, and that pid is not the same process any more) or,
// from another host, when the heartbeat is older than kStaleHeartbeatSeconds.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "reports/store/store.hpp"

namespace ibt::store {

inline constexpr int kHeartbeatSeconds = 10;
inline constexpr int kStaleHeartbeatSeconds = 120;

// The attributes that identify this process as a run's writer.
std::vector<std::pair<std::string, AttrValue>> writer_identity();
// Why the run's writer is known to be dead ("" when it may be alive or the run is not
// running).
std::string dead_writer_reason(const RunInfo& run);
// A run whose writer is dead is shown as status "interrupted" with that reason in
// "error" (the file itself is not changed: readers never write).
void mark_if_interrupted(RunInfo& run);

std::string utc_now_iso();

}  // namespace ibt::store
