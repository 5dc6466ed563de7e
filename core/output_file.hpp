#pragma once
// Files a command creates whole (calibrate's topology, an export, a JUnit report, a
// generated reference): an existing file is never replaced without --force, and the new
// one is written beside it under a temporary name, flushed to disk and renamed over, so a
// failed write (disk full, a file-size limit) leaves no half file and never damages the
// file that was there. Results files (.h5) are appended to by the store, not written here.
#include <string>

namespace ibt {

// Throws UsageError naming `flag` and PATH when PATH is empty, is a folder or not a
// regular file (a device or FIFO), or exists and `force` is false.
void refuse_existing_output(const std::string& path, const std::string& flag, bool force);

// Writes `text` to PATH atomically (temporary file in PATH's folder, fsync, rename).
// Throws StorageError naming PATH and the cause ("disk full (ENOSPC)", ...) when it
// cannot; the temporary is removed and an existing PATH is left as it was.
void write_output_file(const std::string& path, const std::string& text, const std::string& flag);

}  // namespace ibt
