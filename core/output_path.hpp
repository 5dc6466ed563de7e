#pragma once
// Whether a command will be able to write its output where it was told to, judged before
// any work: the folder exists, is a folder, takes a new file, and has room. A new file is
// what every output starts as (the results store creates PATH or an undo copy beside it;
// whole files are written as a temporary beside PATH and renamed), so the check is to
// create and remove one: access(2) answers yes to root for any folder, while the kernel
// still refuses root a file under /sys, on a read-only mount or on a full disk; only
// trying finds those. Each reason names the folder and says what to do.
#include <cstdint>
#include <string>

namespace ibt {

// Why a file cannot be created at PATH now, or "" when it can. `flag` names the option in
// the fix ("choose another --junit"); `min_free_bytes` is the room the output needs on
// PATH's file system (0: none checked). Reasons: the folder is missing (mkdir -p), a part
// of it is not a folder, permission denied (naming the user and uid), a read-only file
// system, a virtual one that takes no files (/proc), the disk full or the quota reached,
// fewer than `min_free_bytes` free.
std::string why_not_creatable(const std::string& path, const std::string& flag, std::uint64_t min_free_bytes = 0);

}  // namespace ibt
