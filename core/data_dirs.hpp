#pragma once
// Where ibt finds the files it ships beside the binary (the model and topology catalogs,
// acceptance references, the report scripts), so that a build tree, an installed prefix
// (`cmake --install`) and a relocated copy of that prefix all work:
//   1. the folder's own variable, when set (IBT_MODELS_DIR, IBT_TOPOLOGIES_DIR, ...);
//   2. $IBT_DATA_DIR/<relative>, when IBT_DATA_DIR is set (the root of an installed share/ibt);
//   3. <folder of the running ibt>/../share/ibt/<relative>: an installed prefix, wherever
//      it was moved to;
//   4. the source tree's folder compiled in (a build tree).
// The first that exists wins; when none does, the compiled-in folder is returned so that
// the caller's "not found" message names the place a build tree would use.
// Header-only: the planning library (no HDF5, no MPI) uses it too.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace ibt {

// The folder holding the running executable ("" when /proc/self/exe cannot be read).
inline std::filesystem::path executable_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

// `relative` is the folder's path inside the source tree and inside share/ibt alike,
// e.g. "models/catalog".
inline std::string data_dir(const char* env_var, const std::string& relative, const std::string& compiled_in) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (const char* own = std::getenv(env_var); own && *own) return own;
  if (const char* root = std::getenv("IBT_DATA_DIR"); root && *root) {
    const fs::path p = fs::path(root) / relative;
    if (fs::is_directory(p, ec)) return p.string();
  }
  if (const fs::path exe = executable_dir(); !exe.empty()) {
    const fs::path p = exe.parent_path() / "share" / "ibt" / relative;
    if (fs::is_directory(p, ec)) return p.string();
  }
  return compiled_in;
}

}  // namespace ibt
