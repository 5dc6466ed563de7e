#include "reports/text/run_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <type_traits>
#include <variant>

#include "core/text_table.hpp"
#include "reports/text/run_selection.hpp"

namespace ibt::reports {

namespace {

// Attributes people look for first, in this order; the rest follow by name.
const std::vector<std::string> kLeadingAttributes = {"kind",       "status",       "error",       "start_time",
                                                     "end_time",   "command_line", "ibt_version", "git_commit",
                                                     "world_size", "backend",      "hosts",       "mpi_library"};

std::string format_double(double v) {
  char text[64];
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0 || std::fabs(v) >= 1)
    std::snprintf(text, sizeof text, "%.2f", v);
  else
    std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

bool is_number(store::ColumnType type) { return type != store::ColumnType::str; }

}  // namespace

std::string display_value(const store::Value& value) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>)
          return x;
        else if constexpr (std::is_same_v<T, double>)
          return format_double(x);
        else
          return std::to_string(x);
      },
      value);
}

void print_run_list(std::ostream& out, const std::vector<store::RunInfo>& runs, std::size_t width) {
  if (runs.empty()) {
    out << "(no runs)\n";
    return;
  }
  using Align = TextTable::Align;
  TextTable table;
  table.add_column("run", Align::left);
  table.add_column("kind", Align::left);
  table.add_column("status", Align::left);
  table.add_column("start (UTC)", Align::left);
  table.add_column("ranks", Align::right);
  table.add_column(TextTable::Column("command", Align::left).wrapping());
  for (const auto& run : runs)
    table.add_row({run.id, run.attr_string("kind"), run.attr_string("status"), run.attr_string("start_time"),
                   run.attr_string("world_size"), run.attr_string("command_line")});
  TextTable::Style style;
  style.width = width;
  out << table.render(style);
}

void print_table(std::ostream& out, const store::TableData& data, const std::string& indent, std::size_t width) {
  TextTable table;
  for (const auto& c : data.columns)
    table.add_column(c.name, is_number(c.type) ? TextTable::Align::right : TextTable::Align::left, c.unit);
  for (const auto& row : data.rows) {
    std::vector<std::string> cells;
    cells.reserve(row.size());
    for (const auto& v : row) cells.push_back(display_value(v));
    table.add_row(std::move(cells));
  }
  TextTable::Style style;
  style.indent = indent;
  style.width = width;
  out << table.render(style);
}

void print_run(std::ostream& out, const std::string& path, const store::RunInfo& run,
               const std::optional<std::string>& table_filter, std::size_t width) {
  out << "run " << run.id << " of " << path << "\n\nattributes:\n";
  TextTable attrs;
  attrs.add_column("", TextTable::Align::left);
  attrs.add_column(TextTable::Column("", TextTable::Align::left).wrapping());
  for (const auto& name : kLeadingAttributes)
    if (run.attr(name)) attrs.add_row({name, run.attr_string(name)});
  for (const auto& [name, value] : run.attrs)
    if (std::find(kLeadingAttributes.begin(), kLeadingAttributes.end(), name) == kLeadingAttributes.end())
      attrs.add_row({name, run.attr_string(name)});
  TextTable::Style attr_style;
  attr_style.indent = "  ";
  attr_style.header = false;
  attr_style.width = width;
  out << attrs.render(attr_style);

  out << "\nenvironment:\n";
  if (run.environment.empty()) out << "  (none recorded)\n";
  for (const auto& [name, value] : run.environment) out << "  " << name << "=" << value << "\n";

  const auto tables = select_tables(run, table_filter);
  if (tables.empty())
    out << "\n" << (table_filter ? "no table '" + *table_filter + "' in this run" : "no tables") << "\n";
  for (const auto& name : tables) {
    const store::TableData data = store::read_table(path, run.id, name);
    out << "\ntable " << name << " (" << data.rows.size() << (data.rows.size() == 1 ? " row" : " rows") << "):\n";
    print_table(out, data, "  ", width);
  }
}

}  // namespace ibt::reports
