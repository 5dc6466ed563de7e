#include "reports/store/store_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/errors.hpp"
#include "core/output_path.hpp"
#include "reports/store/store.hpp"
#include "reports/store/store_undo.hpp"

namespace ibt::store::detail {

namespace {

[[noreturn]] void refuse(const std::string& path, const std::string& problem) {
  throw UsageError(path + ": " + problem);
}

// Returns false when the path does not exist; refuses anything but a regular file.
bool existing_regular_file(const std::string& path) {
  if (path.empty()) throw UsageError("the results file name is empty");
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    // Missing, or its folder is (or cannot be reached): require_creatable says which.
    if (errno == ENOENT || errno == ENOTDIR || errno == EACCES) return false;
    refuse(path, std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode))
    refuse(path, "is a directory, not a results file (name a file inside it, e.g. " +
                     (std::filesystem::path(path) / "results.h5").string() + ")");
  if (!S_ISREG(st.st_mode)) refuse(path, "is not a regular file");
  if (st.st_size == 0) refuse(path, "is an empty file, not an HDF5 results file (remove it or choose another name)");
  return true;
}

// The folder must take a new file: the results file itself, or beside an existing one the
// undo copy an append makes first (store_undo.hpp). Tried, not asked (core/output_path.hpp).
void require_creatable(const std::string& path) {
  const std::string why = why_not_creatable(path, "--out");
  if (!why.empty()) refuse(path, why);
}

void require_ibt_schema(hid_t file, const std::string& path) {
  if (!h5::has_attribute(file, "ibt_schema"))
    refuse(path, "is an HDF5 file but not an ibt results file (no 'ibt_schema' attribute on /)");
  const AttrValue name = h5::read_attribute(file, "ibt_schema");
  const auto* text = std::get_if<std::string>(&name);
  if (!text || *text != kSchemaName)
    refuse(path, "is not an ibt results file (its 'ibt_schema' attribute is not \"" + std::string(kSchemaName) + "\")");
  if (!h5::has_attribute(file, "ibt_schema_version"))
    refuse(path, "is not a valid ibt results file (no 'ibt_schema_version' attribute on /)");
  const AttrValue version = h5::read_attribute(file, "ibt_schema_version");
  const auto* number = std::get_if<std::int64_t>(&version);
  if (!number || *number < 1) refuse(path, "has an invalid 'ibt_schema_version' attribute (expected an integer >= 1)");
  if (*number > kSchemaVersion)
    refuse(path, "was written with ibt results schema version " + std::to_string(*number) +
                     ", newer than this ibt reads (" + std::to_string(kSchemaVersion) +
                     "); use a newer ibt or another file");
}

h5::Handle open_checked(const std::string& path, bool for_append) {
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 == 0) refuse(path, for_append ? "is not an HDF5 file (refusing to write to it)" : "is not an HDF5 file");
  if (is_hdf5 < 0) refuse(path, "cannot be read (" + h5::error_detail() + ")");
  h5::Handle fapl = h5::file_access_plist();
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (id < 0) {
    const std::string detail = h5::error_detail();
    if (detail.find("unable to lock file") != std::string::npos)
      refuse(path,
             "is locked by another process (an ibt run writing to it, or a reader holding it open: h5py, h5dump, a "
             "notebook); try again when it is closed");
    // A valid file whose superblock records an unfinished SWMR/latest-format writer
    // also fails here; HDF5's own message (with its h5clear hint) says so.
    std::string hint;
    if (access(undo_path(path).c_str(), F_OK) == 0)
      hint = "; an append to it was interrupted and left " + undo_path(path) +
             ", the file as it was before that append: check it with `ibt show` and move it back over " + path;
    refuse(path, "is a damaged or truncated HDF5 file (HDF5: " + detail + ")" + hint);
  }
  h5::Handle file(id, H5Fclose);
  require_ibt_schema(file.get(), path);
  return file;
}

}  // namespace

PathState check_append_target(const std::string& path) {
  h5::silence_errors();
  if (!existing_regular_file(path)) {
    require_creatable(path);
    require_free_space(path, 0);
    return PathState::missing_but_creatable;
  }
  if (access(path.c_str(), R_OK | W_OK) != 0)
    refuse(path, std::string("is not writable (") + std::strerror(errno) + "): choose another --out, or " +
                     "make it writable (chmod u+w)");
  require_creatable(path);   // the undo copy is made beside it
  open_checked(path, true);  // closed again at once: the caller reopens it for writing
  // Every table's rows against their digest (table_digest.hpp): a run is never appended
  // to a file whose earlier runs were damaged since they were written.
  check_tables(path);
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) require_free_space(path, static_cast<std::uint64_t>(st.st_size));
  return PathState::ibt_results_file;
}

h5::Handle open_results_read_only(const std::string& path) {
  h5::silence_errors();
  if (!existing_regular_file(path)) {
    const int err = errno;  // of existing_regular_file's stat
    refuse(path, err == EACCES ? "permission denied (a folder above it is closed to this user)" : "no such file");
  }
  return open_checked(path, false);
}

}  // namespace ibt::store::detail
