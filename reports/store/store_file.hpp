#pragma once
// Checking a path before the store reads or appends to it. Every refusal is a
// UsageError whose message starts with the path and names the problem; nothing here
// ever writes to an existing file, so a refused file stays byte-for-byte as it was.
#include <string>

#include "core/hdf5.hpp"
#include "reports/store/store.hpp"

namespace ibt::store::detail {

enum class PathState { missing_but_creatable, ibt_results_file };

// The checks of open_for_append: an existing file must be a writable ibt results file
// of a schema version this build reads; a missing one needs a writable directory.
PathState check_append_target(const std::string& path);

// Opens an existing ibt results file read-only after the same checks (minus the
// writability ones). Missing files are refused.
h5::Handle open_results_read_only(const std::string& path);

}  // namespace ibt::store::detail
