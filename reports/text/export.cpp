#include "reports/text/export.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <type_traits>
#include <variant>

#include "core/errors.hpp"
#include "reports/store/csv_text.hpp"
#include "reports/store/row_layout.hpp"
#include "reports/text/run_selection.hpp"

namespace ibt::reports {

namespace {

using store::csv_value;

bool same_shape(const std::vector<store::Column>& a, const std::vector<store::Column>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].type != b[i].type) return false;
  return true;
}

nlohmann::ordered_json json_value(const store::Value& value) {
  return std::visit([](const auto& x) { return nlohmann::ordered_json(x); }, value);
}

nlohmann::ordered_json json_attr(const store::AttrValue& value) {
  return std::visit([](const auto& x) { return nlohmann::ordered_json(x); }, value);
}

nlohmann::ordered_json json_table(const store::TableData& data) {
  nlohmann::ordered_json columns = nlohmann::ordered_json::array();
  for (const auto& c : data.columns) {
    nlohmann::ordered_json column = {{"name", c.name}, {"type", store::type_name(c.type)}, {"unit", c.unit}};
    // Only a fixed-length string column (from an older file) has a width to state.
    if (c.type == store::ColumnType::str && c.str_bytes > 0) column["bytes"] = c.str_bytes;
    columns.push_back(std::move(column));
  }
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& row : data.rows) {
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    for (std::size_t i = 0; i < row.size(); ++i) object[data.columns[i].name] = json_value(row[i]);
    rows.push_back(std::move(object));
  }
  return {{"columns", std::move(columns)}, {"rows", std::move(rows)}};
}

}  // namespace

void write_csv(std::ostream& out, const std::string& path, const ExportSelection& selection) {
  const auto runs = select_runs(store::list_runs(path), selection.run, path);
  require_table_somewhere(runs, selection.table, path);

  std::set<std::string> names;
  for (const auto& run : runs)
    for (const auto& t : select_tables(run, selection.table)) names.insert(t);
  if (names.empty()) throw UsageError(path + ": the selected runs hold no tables: nothing to export");
  // Runs of one kind whose main table is named after the kind (a collectives run holds
  // "collectives" and its per-domain "collectives_groups"): without --table, the CSV is
  // that main table, as `ibt export FILE --csv` always gave for such files.
  if (names.size() > 1 && !selection.table && !runs.empty()) {
    const std::string kind = runs.front().attr_string("kind");
    const bool one_kind =
        std::all_of(runs.begin(), runs.end(), [&](const store::RunInfo& r) { return r.attr_string("kind") == kind; });
    if (one_kind && names.count(kind)) names = {kind};
  }
  if (names.size() > 1) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw UsageError(path + ": the selected runs hold several tables (" + list +
                     "); one CSV holds one table: choose it with --table");
  }
  const std::string table = *names.begin();

  std::optional<store::TableData> first;
  std::string first_run;
  for (const auto& run : runs) {
    if (select_tables(run, table).empty()) continue;
    store::TableData data = store::read_table(path, run.id, table);
    if (!first) {
      first = data;
      first_run = run.id;
      out << "run_id,kind";
      for (const auto& c : data.columns) out << ',' << csv_field(c.name);
      out << '\n';
    } else if (!same_shape(first->columns, data.columns)) {
      throw UsageError(path + ": table '" + table + "' has different columns in runs " + first_run + " and " + run.id +
                       "; export them one at a time with --run");
    }
    const std::string prefix = csv_field(run.id) + ',' + csv_field(run.attr_string("kind"));
    for (const auto& row : data.rows) {
      out << prefix;
      for (const auto& v : row) out << ',' << csv_value(v);
      out << '\n';
    }
  }
}

nlohmann::ordered_json export_json(const std::string& path, const ExportSelection& selection) {
  const auto runs = select_runs(store::list_runs(path), selection.run, path);
  require_table_somewhere(runs, selection.table, path);
  nlohmann::ordered_json out = {
      {"file", path}, {"schema", store::kSchemaName}, {"schema_version", store::kSchemaVersion}};
  out["runs"] = nlohmann::ordered_json::array();
  for (const auto& run : runs) {
    nlohmann::ordered_json attributes = nlohmann::ordered_json::object();
    for (const auto& [name, value] : run.attrs) attributes[name] = json_attr(value);
    nlohmann::ordered_json environment = nlohmann::ordered_json::object();
    for (const auto& [name, value] : run.environment) environment[name] = value;
    nlohmann::ordered_json tables = nlohmann::ordered_json::object();
    for (const auto& name : select_tables(run, selection.table))
      tables[name] = json_table(store::read_table(path, run.id, name));
    out["runs"].push_back({{"id", run.id},
                           {"attributes", std::move(attributes)},
                           {"environment", std::move(environment)},
                           {"tables", std::move(tables)}});
  }
  return out;
}

}  // namespace ibt::reports
