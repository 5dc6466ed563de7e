#include "reports/text/text_table.hpp"

#include <algorithm>
#include <stdexcept>

namespace ibt::reports {

void TextTable::add_column(std::string header, Align align, std::string unit) {
  if (!rows_.empty()) throw std::logic_error("TextTable: add every column before the first row");
  columns_.push_back({std::move(header), align, std::move(unit)});
}

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size())
    throw std::logic_error("TextTable: row has " + std::to_string(cells.size()) + " cells for " +
                           std::to_string(columns_.size()) + " columns");
  rows_.push_back(std::move(cells));
}

namespace {

void print_line(std::ostream& out, const std::string& indent, const std::vector<std::string>& cells,
                const std::vector<std::size_t>& widths, const std::vector<bool>& right) {
  std::string line = indent;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i) line += "  ";
    const std::string padding(widths[i] - std::min(widths[i], cells[i].size()), ' ');
    line += right[i] ? padding + cells[i] : cells[i] + padding;
  }
  line.erase(line.find_last_not_of(' ') + 1);
  out << line << '\n';
}

}  // namespace

void TextTable::print(std::ostream& out, const std::string& indent, bool header) const {
  std::vector<std::size_t> widths;
  std::vector<bool> right;
  std::vector<std::string> headers, units, rules;
  bool any_unit = false;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    std::size_t width = header ? std::max(columns_[i].header.size(), columns_[i].unit.size()) : 0;
    for (const auto& row : rows_) width = std::max(width, row[i].size());
    widths.push_back(width);
    right.push_back(columns_[i].align == Align::right);
    headers.push_back(columns_[i].header);
    units.push_back(columns_[i].unit);
    any_unit = any_unit || !columns_[i].unit.empty();
    rules.push_back(std::string(width, '-'));
  }
  if (header) {
    print_line(out, indent, headers, widths, right);
    if (any_unit) print_line(out, indent, units, widths, right);
    print_line(out, indent, rules, widths, right);
  }
  for (const auto& row : rows_) print_line(out, indent, row, widths, right);
}

}  // namespace ibt::reports
