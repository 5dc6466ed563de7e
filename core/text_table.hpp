#pragma once
// The one printer of aligned plain-text tables for the terminal, shared by every command
// that prints a table: a header (column names, then units when any column has one), a rule,
// then one line per row. Numbers read best right-aligned, words left-aligned.
//
// A width budget keeps a table within a terminal (120 columns by default; 0, what --wide
// asks for, means none): when the table is wider, columns that may wrap shrink first, their
// cells continuing on the lines below their row; then columns marked as a line break start
// a second line of each row (and of the header), placed under a column of the first line.
// A table printed row by row as its results arrive (collectives) is laid out from its
// headers, the columns' minimum widths and the cells it was told to expect (expect()).
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace ibt {

class TextTable {
 public:
  enum class Align { left, right };

  struct Column {
    Column(std::string header_, Align align_, std::string unit_ = "", std::size_t min_width_ = 0)
        : header(std::move(header_)), align(align_), unit(std::move(unit_)), min_width(min_width_) {}
    // May shrink under the budget, its cells broken at spaces onto the lines below.
    Column& wrapping() {
      wraps = true;
      return *this;
    }
    // When the table is wider than the budget, this column starts a second line of each
    // row, placed under column `first_line_column`.
    Column& breaking_under(std::size_t first_line_column) {
      break_under = first_line_column;
      return *this;
    }
    // What separates this column from the one before, instead of the style's gap.
    Column& after(std::string separator) {
      gap = std::move(separator);
      return *this;
    }

    std::string header;
    Align align;
    std::string unit;
    std::size_t min_width;  // at least this wide, as a printf width ("%9s") makes it
    bool wraps = false;
    std::optional<std::size_t> break_under;
    std::optional<std::string> gap;
  };

  struct Style {
    std::string indent;                        // before every row line
    std::optional<std::string> header_indent;  // before the header lines (default: indent)
    std::string gap = "  ";                    // between columns
    bool header = true;                        // names (and units) above the rows
    bool rule = true;                          // a line of dashes under the header
    bool trim = true;                          // no line ends in spaces
    std::size_t width = 0;                     // the width budget; 0: none (--wide)
  };

  void add_column(std::string header, Align align, std::string unit = "");
  void add_column(Column column);
  // One cell per column, in column order.
  void add_row(std::vector<std::string> cells);
  // Widens the columns to fit these cells without printing them: the widest cells of a
  // table printed row by row.
  void expect(const std::vector<std::string>& cells);
  std::size_t rows() const { return rows_.size(); }
  std::size_t columns() const { return columns_.size(); }

  // Every line starts with `indent`; no line ends in spaces. Without `header`, only
  // the rows are printed (aligned all the same).
  void print(std::ostream& out, const std::string& indent = "", bool header = true) const;
  // The header and every row added, in `style`.
  std::string render(const Style& style) const;
  // The header lines alone, and one row's lines, for a table printed as its rows arrive.
  std::string header_text(const Style& style) const;
  std::string row_text(const std::vector<std::string>& cells, const Style& style) const;
  // Where column `i` starts in its line (the indent counted), for a caller that labels a
  // group of columns above the header; whether the layout broke rows into two lines.
  std::size_t column_start(const Style& style, std::size_t i) const;
  bool breaks_lines(const Style& style) const;

 private:
  struct Layout {
    std::vector<std::size_t> widths;
    std::vector<std::size_t> segments;  // the first column of each line of a row
    std::vector<std::size_t> starts;    // where each column starts in its line
  };
  Layout layout(const Style& style) const;
  std::string lines(const std::vector<std::string>& cells, const Layout& layout, const Style& style,
                    const std::string& indent, bool wrap) const;
  std::string segment_lines(const std::vector<std::string>& cells, const Layout& layout, std::size_t segment,
                            const Style& style, const std::string& indent, bool wrap) const;

  std::vector<Column> columns_;
  std::vector<std::size_t> expected_;  // the widest cell expected per column
  std::vector<std::vector<std::string>> rows_;
};

// A number with a fixed count of decimals ("%.2f"): the cells of most tables.
std::string fixed(double value, int decimals);
// The same with its sign always written ("%+.2f": "+0.50", "-1.25").
std::string signed_fixed(double value, int decimals);

}  // namespace ibt
