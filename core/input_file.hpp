#pragma once
// Inputs (model, topology, reference, manifest files) are read only from regular files
// of a sane size: a FIFO, a device such as /dev/zero or a multi-gigabyte file would
// otherwise block or grow memory until the OOM killer. A path that does not exist is
// left to the caller, whose message names what was looked for.
#include <cstdint>
#include <string>

namespace ibt {

inline constexpr std::uint64_t kMaxInputFileBytes = 64ull << 20;  // JSON inputs are KB; the vTrain CSVs MB

// Throws UsageError "`what` PATH is not a regular file (...)" or "... is N bytes, more
// than the M an input may have" when PATH exists and is unfit.
void require_input_file(const std::string& path, const std::string& what, std::uint64_t max_bytes = kMaxInputFileBytes);

// The whole content of the regular file PATH, read through one descriptor: opened with
// O_NONBLOCK (a FIFO swapped in after a stat() would otherwise block the open), then
// fstat()ed, so what is judged is what is read. UsageError "`what` 'PATH' ..." when it is
// missing or unreadable, not a regular file, or larger than `max_bytes` (also when it
// grows past that while being read).
std::string read_input_file(const std::string& path, const std::string& what, std::uint64_t max_bytes);

}  // namespace ibt
