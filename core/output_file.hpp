#pragma once
// Files a command creates whole (calibrate's topology, an export, a JUnit report, a
// generated reference): an existing file is never replaced without --force, and the new
// one is written beside it under a temporary name, flushed to disk and renamed over, so a
// failed write (disk full, a file-size limit) leaves no half file and never damages the
// file that was there. Results files (.h5) are appended to by the store, not written here.
#include <string>
#include <vector>

namespace ibt {

// A file a command reads, as its messages name it ("--from", "the log", "--model").
struct InputFile {
  std::string what, path;
};

// No command writes over one of its own inputs, with --force or without: throws
// UsageError naming `flag`, PATH and the input when PATH is the same file as an input
// (same device and inode after realpath, so a symlink or hard link is seen through) or,
// with `folder` (a command that writes files into the folder PATH, as `report --out`),
// when an input lies anywhere inside PATH. Paths that do not exist never clash: a new
// output replaces nothing, a missing input is left to the reader's own message.
void refuse_output_over_inputs(const std::string& path, const std::string& flag, const std::vector<InputFile>& inputs,
                               bool folder = false);

// Throws UsageError naming `flag` and PATH when PATH is empty, is a folder or not a
// regular file (a device or FIFO), exists and `force` is false, or cannot be written now:
// its folder missing, closed to this user, read-only, full (core/output_path.hpp). Called
// before the work, so a bad path costs nothing.
void refuse_existing_output(const std::string& path, const std::string& flag, bool force);

// Writes `text` to PATH atomically (temporary file in PATH's folder, fsync, rename).
// Throws StorageError naming PATH and the cause ("disk full (ENOSPC)", ...) when it
// cannot; the temporary is removed and an existing PATH is left as it was.
void write_output_file(const std::string& path, const std::string& text, const std::string& flag);

}  // namespace ibt
