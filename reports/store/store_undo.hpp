#pragma once
// How an append survives a full disk (ENOSPC), a file-size limit (EFBIG) or an I/O
// error: an undo copy. HDF5 rewrites metadata inside the file (the /runs index, the
// superblock's end-of-file) as well as appending, so a write that fails halfway can
// leave every run unreadable; truncating back is not enough. Before the first write
// of an append, the writer (holding the file's lock) copies the file to a hidden
// sibling, ".NAME.ibt-undo" (a reflink where the filesystem offers one: free in time
// and space; else a byte copy, after checking there is room for it plus a margin). A
// write that fails renames the copy back over the file in one atomic step: every
// earlier run is exactly as it was, and the failed run is then recorded as `failed`
// with the reason through a second copy-on-write (write a temporary copy, rename).
// A run that ends normally deletes the copy. Rows stay visible as they are measured
// (the file itself is written), which a write-to-a-copy-then-rename design could not
// give. Cost: one copy of the file per append (results files are small: KB to MB).
#include <cstdint>
#include <string>

namespace ibt::store {

inline constexpr std::uint64_t kFreeSpaceMargin = 16ull << 20;  // room a run needs beyond the copy

std::string undo_path(const std::string& path);

// Refuses (UsageError, "disk full", naming the file and the bytes) when the file's
// file system cannot hold a copy of `existing_bytes` plus the margin.
void require_free_space(const std::string& path, std::uint64_t existing_bytes);

// Copies path to undo_path(path); throws RuntimeError naming the file on failure
// (the partial copy removed).
void take_undo_copy(const std::string& path);
// Renames the undo copy over path (atomic). Returns false (and leaves both) when the
// rename fails.
bool restore_undo_copy(const std::string& path);
void discard_undo_copy(const std::string& path);
// Copies src to dst (reflink when possible); false on failure, dst removed.
bool copy_file(const std::string& src, const std::string& dst, std::string* error);

// "disk full (ENOSPC: No space left on device)" and the like, from HDF5's error text
// ("... errno = 28 ...") or else from errno; "" when it names no errno.
std::string describe_write_errno(const std::string& hdf5_detail, int fallback_errno);

}  // namespace ibt::store
