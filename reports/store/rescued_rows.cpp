#include "reports/store/rescued_rows.hpp"

#include "reports/store/csv_text.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace ibt::store {

namespace {

namespace fs = std::filesystem;

// Writes every table into `folder` (created); "" or the first error.
std::string write_tables(const fs::path& folder, const std::vector<KeptTable>& tables) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) return folder.string() + ": " + ec.message();
  for (const KeptTable& table : tables) {
    if (table.rows.empty()) continue;
    const fs::path file = folder / (table.name + ".csv");
    std::ofstream out(file);
    for (std::size_t c = 0; c < table.columns.size(); ++c) out << (c ? "," : "") << csv_field(table.columns[c].name);
    out << '\n';
    for (const Row& row : table.rows) {
      for (std::size_t c = 0; c < row.size(); ++c) out << (c ? "," : "") << csv_value(row[c]);
      out << '\n';
    }
    out.flush();
    if (!out) return file.string() + ": could not be written";
  }
  return "";
}

}  // namespace

RescueResult rescue_rows(const std::string& results_path, const std::string& run_id,
                         const std::vector<KeptTable>& tables, bool disk_full) {
  bool any = false;
  for (const KeptTable& t : tables) any = any || !t.rows.empty();
  if (!any) return {};
  const fs::path results(results_path);
  const std::string name = results.filename().string() + ".run-" + run_id + ".rescued";
  const char* tmp = std::getenv("TMPDIR");
  const fs::path beside = results.parent_path().empty() ? fs::path(name) : results.parent_path() / name;
  const fs::path in_tmp = fs::path(tmp && *tmp ? tmp : "/tmp") / name;
  const fs::path candidates[] = {disk_full ? in_tmp : beside, disk_full ? beside : in_tmp};
  std::string errors;
  for (const fs::path& folder : candidates) {
    const std::string error = write_tables(folder, tables);
    if (error.empty()) return {folder.string(), ""};
    errors += (errors.empty() ? "" : "; ") + error;
    std::error_code ec;
    fs::remove_all(folder, ec);  // a half-written folder would pass for the rows
  }
  return {"", errors};
}

}  // namespace ibt::store
