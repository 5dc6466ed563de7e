#pragma once
// How a "name or path" argument (--model, --topology, a reference) finds its file: a
// catalog name ("dgx-h100") is <catalog>/<name>.json; anything containing '/' or ending
// in ".json" is a path taken as given. One rule for every catalog, so a name that works
// for one option works the same way for the others.
#include <string>

namespace ibt {

// True when `name_or_path` names a file rather than a catalog entry.
bool names_a_path(const std::string& name_or_path);

// The file `name_or_path` refers to, catalog names resolved in `catalog_dir`.
std::string catalog_file(const std::string& name_or_path, const std::string& catalog_dir);

}  // namespace ibt
