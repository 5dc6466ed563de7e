#pragma once
// Aligned plain-text tables for the terminal: a header (column names, then units when
// any column has one), a rule, then one line per row, columns two spaces apart.
// Numbers read best right-aligned, words left-aligned.
#include <ostream>
#include <string>
#include <vector>

namespace ibt::reports {

class TextTable {
 public:
  enum class Align { left, right };

  void add_column(std::string header, Align align, std::string unit = "");
  // One cell per column, in column order.
  void add_row(std::vector<std::string> cells);
  std::size_t rows() const { return rows_.size(); }

  // Every line starts with `indent`; no line ends in spaces. Without `header`, only
  // the rows are printed (aligned all the same).
  void print(std::ostream& out, const std::string& indent = "", bool header = true) const;

 private:
  struct ColumnSpec {
    std::string header;
    Align align;
    std::string unit;
  };
  std::vector<ColumnSpec> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace ibt::reports
