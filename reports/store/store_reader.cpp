// Reading side of the store: list_runs and read_table, for show, export and reports.
#include <charconv>

#include "core/errors.hpp"
#include "core/hdf5.hpp"
#include "reports/store/row_layout.hpp"
#include "reports/store/store.hpp"
#include "reports/store/store_file.hpp"
#include "reports/store/table_digest.hpp"
#include "reports/store/writer_liveness.hpp"

namespace ibt::store {

std::optional<AttrValue> RunInfo::attr(const std::string& name) const {
  for (const auto& [key, value] : attrs)
    if (key == name) return value;
  return std::nullopt;
}

std::string RunInfo::oversubscription() const {
  if (attr_string("oversubscribed") != "1") return "";
  const std::string text = attr_string("oversubscription");
  return text.empty() ? "oversubscribed" : text;
}

std::string RunInfo::attr_string(const std::string& name) const {
  const auto value = attr(name);
  if (!value) return "";
  if (const auto* s = std::get_if<std::string>(&*value)) return *s;
  if (const auto* i = std::get_if<std::int64_t>(&*value)) return std::to_string(*i);
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, std::get<double>(*value)).ptr;
  return std::string(text, end);
}

int TableData::column_index(const std::string& name) const {
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (columns[i].name == name) return static_cast<int>(i);
  return -1;
}

namespace {

bool is_compound_dataset(hid_t group, const std::string& name) {
  H5O_info_t info{};
  if (H5Oget_info_by_name2(group, name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) return false;
  if (info.type != H5O_TYPE_DATASET) return false;
  h5::Handle dataset(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dataset.valid()) return false;
  h5::Handle type(H5Dget_type(dataset.get()), H5Tclose);
  return type.valid() && H5Tget_class(type.get()) == H5T_COMPOUND;
}

std::string as_text(const AttrValue& value) {
  RunInfo holder;
  holder.attrs.emplace_back("v", value);
  return holder.attr_string("v");
}

// Refuses a table whose rows no longer match the digest written with them
// (table_digest.hpp); a table from before digests has none to check. The writer updates
// the digest just after each row, so a writer killed between the two (or still writing,
// seen by a concurrent reader) leaves a digest one row short: the rows it covers are
// checked and the last one is taken as written.
void check_digest(hid_t dataset, const std::vector<Row>& rows, const std::string& where) {
  if (!h5::has_attribute(dataset, kDigestAttribute) || !h5::has_attribute(dataset, kDigestRowsAttribute)) return;
  const AttrValue stored_crc = h5::read_attribute(dataset, kDigestAttribute);
  const AttrValue stored_rows = h5::read_attribute(dataset, kDigestRowsAttribute);
  const auto* crc = std::get_if<std::int64_t>(&stored_crc);
  const auto* count = std::get_if<std::int64_t>(&stored_rows);
  const auto n = static_cast<std::int64_t>(rows.size());
  bool intact = crc && count && (*count == n || *count == n - 1);
  if (intact) {
    RowDigest digest;
    for (std::int64_t r = 0; r < *count; ++r) digest.add(rows[static_cast<std::size_t>(r)]);
    intact = *crc == std::int64_t{digest.crc()};
  }
  if (!intact)
    throw UsageError(where + " is damaged: its " + std::to_string(rows.size()) +
                     " rows do not match the CRC-32 written with them (the file was changed after ibt wrote it); "
                     "nothing in it is read or appended to");
}

RunInfo read_run(hid_t runs, const std::string& id, const std::string& path) {
  h5::Handle group = h5::checked_group(H5Gopen2(runs, id.c_str(), H5P_DEFAULT), path + ": opening run " + id);
  RunInfo run;
  run.id = id;
  run.attrs = h5::read_attributes(group.get());
  for (const auto& name : h5::child_names(group.get())) {
    if (name == "environment") {
      h5::Handle env = h5::checked_group(H5Gopen2(group.get(), name.c_str(), H5P_DEFAULT),
                                         path + ": opening the environment of run " + id);
      for (const auto& [key, value] : h5::read_attributes(env.get())) run.environment.emplace_back(key, as_text(value));
    } else if (is_compound_dataset(group.get(), name)) {
      run.tables.push_back(name);
    }
  }
  mark_if_interrupted(run);
  return run;
}

// Accepts "000003" or "3" for run 000003.
std::string normalized_run_id(const std::string& id) {
  if (id.empty() || id.size() >= 6 || id.find_first_not_of("0123456789") != std::string::npos) return id;
  return std::string(6 - id.size(), '0') + id;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

// "runs 000001 to 000042" rather than all of them.
std::string run_range(const std::vector<std::string>& ids) {
  if (ids.empty()) return "the file holds no runs";
  if (ids.size() == 1) return "the file holds run " + ids.front();
  return "the file holds runs " + ids.front() + " to " + ids.back();
}

}  // namespace

std::vector<RunInfo> list_runs(const std::string& path) {
  h5::Handle file = detail::open_results_read_only(path);
  std::vector<RunInfo> runs;
  if (!h5::has_child(file.get(), "runs")) return runs;
  h5::Handle group = h5::checked_group(H5Gopen2(file.get(), "runs", H5P_DEFAULT), path + ": opening /runs");
  for (const auto& id : h5::child_names(group.get())) runs.push_back(read_run(group.get(), id, path));
  return runs;
}

std::vector<RunInfo> check_tables(const std::string& path) {
  std::vector<RunInfo> runs = list_runs(path);
  for (const RunInfo& run : runs)
    for (const std::string& table : run.tables) read_table(path, run.id, table);
  return runs;
}

TableData read_table(const std::string& path, const std::string& run_id, const std::string& table) {
  h5::Handle file = detail::open_results_read_only(path);
  const std::string id = normalized_run_id(run_id);
  const bool has_runs = h5::has_child(file.get(), "runs");
  h5::Handle runs;
  if (has_runs) runs = h5::checked_group(H5Gopen2(file.get(), "runs", H5P_DEFAULT), path + ": opening /runs");
  if (!has_runs || id.find('/') != std::string::npos || !h5::has_child(runs.get(), id))
    throw UsageError(path + ": no run '" + run_id + "' (" +
                     run_range(has_runs ? h5::child_names(runs.get()) : std::vector<std::string>{}) + ")");
  h5::Handle run = h5::checked_group(H5Gopen2(runs.get(), id.c_str(), H5P_DEFAULT), path + ": opening run " + id);
  const std::string where = path + ": /runs/" + id + "/" + table;
  if (table.find('/') != std::string::npos || !h5::has_child(run.get(), table) ||
      !is_compound_dataset(run.get(), table))
    throw UsageError(path + ": run " + id + " has no table '" + table +
                     "' (tables: " + joined(read_run(runs.get(), id, path).tables) + ")");

  h5::Handle dataset = h5::checked_dataset(H5Dopen2(run.get(), table.c_str(), H5P_DEFAULT), where);
  h5::Handle type = h5::checked_type(H5Dget_type(dataset.get()), where);
  TableData data;
  data.columns = columns_of_compound(type.get(), where);
  for (auto& c : data.columns) {
    const std::string unit_attr = "unit:" + c.name;
    if (h5::has_attribute(dataset.get(), unit_attr)) c.unit = as_text(h5::read_attribute(dataset.get(), unit_attr));
  }
  const RowLayout layout(data.columns);
  h5::Handle space = h5::checked_space(H5Dget_space(dataset.get()), where);
  const hssize_t rows = H5Sget_simple_extent_npoints(space.get());
  if (rows < 0) h5::fail<RuntimeError>(where + ": reading its size");
  if (H5Sget_simple_extent_ndims(space.get()) != 1) throw UsageError(where + " is not a one-dimensional table");
  std::vector<unsigned char> buffer(static_cast<std::size_t>(rows) * layout.row_bytes());
  if (rows > 0) {
    h5::Handle memory_type = layout.memory_type();
    h5::check(H5Dread(dataset.get(), memory_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()),
              where + ": reading rows");
  }
  data.rows.reserve(static_cast<std::size_t>(rows));
  for (hssize_t r = 0; r < rows; ++r) data.rows.push_back(layout.unpack(buffer.data() + r * layout.row_bytes()));
  layout.reclaim(buffer.data(), static_cast<hsize_t>(rows));  // the strings were copied into data.rows
  check_digest(dataset.get(), data.rows, where);
  return data;
}

}  // namespace ibt::store
