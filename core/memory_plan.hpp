#pragma once
// Planning memory before allocating it: a request larger than the machine can give is
// refused with the field that asked for it and the bytes needed against the bytes
// available, instead of ending in std::bad_alloc or the OOM killer mid-run.
#include <cstdint>
#include <string>

namespace ibt {

// Bytes this process could still allocate: MemAvailable from /proc/meminfo, lowered to
// the cgroup's remaining limit when one is set. 0 when unknown (nothing is refused).
std::uint64_t available_memory_bytes();

// Throws UsageError "FIELD needs N bytes (...) but only M are available" when
// `bytes` exceeds what is available; `ranks_sharing` ranks on this host each ask for
// it (the total is compared). `field` names the flag or model field.
void require_memory(double bytes, const std::string& field, int ranks_sharing = 1);

// "1.5 GiB" for messages.
std::string human_bytes(double bytes);

}  // namespace ibt
