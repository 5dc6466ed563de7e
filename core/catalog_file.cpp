#include "core/catalog_file.hpp"

namespace ibt {

bool names_a_path(const std::string& name_or_path) {
  const std::string json = ".json";
  return name_or_path.find('/') != std::string::npos ||
         (name_or_path.size() > json.size() &&
          name_or_path.compare(name_or_path.size() - json.size(), json.size(), json) == 0);
}

std::string catalog_file(const std::string& name_or_path, const std::string& catalog_dir) {
  return names_a_path(name_or_path) ? name_or_path : catalog_dir + "/" + name_or_path + ".json";
}

}  // namespace ibt
