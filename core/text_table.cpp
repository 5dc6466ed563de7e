#include "core/text_table.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "core/text_wrap.hpp"

namespace ibt {

void TextTable::add_column(std::string header, Align align, std::string unit) {
  add_column(Column(std::move(header), align, std::move(unit)));
}

void TextTable::add_column(Column column) {
  if (!rows_.empty()) throw std::logic_error("TextTable: add every column before the first row");
  if (column.break_under && *column.break_under >= columns_.size())
    throw std::logic_error("TextTable: a column breaks under one that does not come before it");
  columns_.push_back(std::move(column));
  expected_.push_back(0);
}

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size())
    throw std::logic_error("TextTable: row has " + std::to_string(cells.size()) + " cells for " +
                           std::to_string(columns_.size()) + " columns");
  rows_.push_back(std::move(cells));
}

void TextTable::expect(const std::vector<std::string>& cells) {
  if (cells.size() != columns_.size()) throw std::logic_error("TextTable: expected cells do not match the columns");
  for (std::size_t i = 0; i < cells.size(); ++i) expected_[i] = std::max(expected_[i], cells[i].size());
}

namespace {

std::size_t longest_word(const std::string& text) {
  std::size_t longest = 0, start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    longest = std::max(longest, end - start);
    start = end + 1;
  }
  return longest;
}

// A wrapping column keeps words up to this long whole; a longer one (a JSON attribute, a
// path) is cut where its column ends rather than holding the table past its width.
constexpr std::size_t kWholeWord = 24;

// A wrapping cell's lines: broken at spaces, a word longer than the column cut.
std::vector<std::string> pieces_of(const std::string& text, std::size_t width) {
  std::vector<std::string> out;
  for (const auto& piece : cell_pieces(text, width))
    for (std::size_t at = 0; at == 0 || at < piece.size(); at += width) out.push_back(piece.substr(at, width));
  return out;
}

// A row's further line that names no column to sit under starts this far past the indent.
constexpr std::size_t kContinuationIndent = 4;

// Each column's start in its line; a segment after the first starts under the column it
// names, or a little in from the indent.
void place(const std::vector<TextTable::Column>& columns, std::size_t indent, const std::string& gap,
           const std::vector<std::size_t>& widths, const std::vector<std::size_t>& segments,
           std::vector<std::size_t>& starts) {
  starts.assign(columns.size(), indent);
  for (std::size_t s = 0; s < segments.size(); ++s) {
    const std::size_t first = segments[s];
    const std::size_t end = s + 1 < segments.size() ? segments[s + 1] : columns.size();
    std::size_t at = s == 0                       ? indent
                     : columns[first].break_under ? starts[*columns[first].break_under]
                                                  : indent + kContinuationIndent;
    for (std::size_t i = first; i < end; ++i) {
      if (i > first) at += columns[i].gap ? columns[i].gap->size() : gap.size();
      starts[i] = at;
      at += widths[i];
    }
  }
}

}  // namespace

TextTable::Layout TextTable::layout(const Style& style) const {
  Layout l;
  std::vector<std::size_t> floors;  // how narrow a wrapping column may get
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    const Column& c = columns_[i];
    std::size_t width = std::max(c.min_width, expected_[i]);
    if (style.header) width = std::max({width, c.header.size(), c.unit.size()});
    std::size_t floor = width;
    if (c.wraps) {
      floor = style.header ? std::max({c.min_width, c.header.size(), c.unit.size()}) : c.min_width;
      floor = std::max(floor, expected_[i]);
    }
    for (const auto& row : rows_) {
      width = std::max(width, row[i].size());
      if (c.wraps) floor = std::max(floor, std::min(longest_word(row[i]), kWholeWord));
    }
    l.widths.push_back(width);
    floors.push_back(floor);
  }
  l.segments = {0};
  place(columns_, style.indent.size(), style.gap, l.widths, l.segments, l.starts);
  auto end_of = [&](std::size_t s) {
    const std::size_t last = (s + 1 < l.segments.size() ? l.segments[s + 1] : columns_.size()) - 1;
    return l.starts[last] + l.widths[last];
  };
  auto too_wide = [&](std::size_t s) { return style.width > 0 && end_of(s) > style.width; };
  if (columns_.empty() || !too_wide(0)) return l;
  for (std::size_t i = 1; i < columns_.size(); ++i)
    if (columns_[i].break_under) l.segments.push_back(i);
  place(columns_, style.indent.size(), style.gap, l.widths, l.segments, l.starts);
  // Then the wrapping columns give up what is still over, a column at a time from the
  // widest, so that no one column is squeezed to its floor while another stays wide.
  for (std::size_t s = 0; s < l.segments.size(); ++s) {
    const std::size_t end = s + 1 < l.segments.size() ? l.segments[s + 1] : columns_.size();
    while (too_wide(s)) {
      std::size_t widest = end;
      for (std::size_t i = l.segments[s]; i < end; ++i)
        if (columns_[i].wraps && l.widths[i] > floors[i] && (widest == end || l.widths[i] > l.widths[widest]))
          widest = i;
      if (widest == end) break;
      --l.widths[widest];
      place(columns_, style.indent.size(), style.gap, l.widths, l.segments, l.starts);
    }
  }
  if (l.segments.size() > 1 || !too_wide(0)) return l;
  // No column says where to break: each line of a row takes the columns that fit.
  std::size_t at = style.indent.size();
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    const std::size_t gap = columns_[i].gap ? columns_[i].gap->size() : style.gap.size();
    const bool first = i == l.segments.back();
    if (!first && at + gap + l.widths[i] > style.width) {
      l.segments.push_back(i);
      at = style.indent.size() + kContinuationIndent + l.widths[i];
    } else {
      at += (first ? 0 : gap) + l.widths[i];
    }
  }
  place(columns_, style.indent.size(), style.gap, l.widths, l.segments, l.starts);
  return l;
}

std::string TextTable::segment_lines(const std::vector<std::string>& cells, const Layout& l, std::size_t s,
                                     const Style& style, const std::string& indent, bool wrap) const {
  const std::size_t first = l.segments[s];
  const std::size_t end = s + 1 < l.segments.size() ? l.segments[s + 1] : columns_.size();
  std::vector<std::vector<std::string>> pieces;
  std::size_t height = 1;
  for (std::size_t i = first; i < end; ++i) {
    // Without a budget a cell is never broken: a row printed on its own may be wider than
    // the header made its column, as printf's widths were. The last column of a line may
    // use what the budget leaves.
    std::size_t room = l.widths[i];
    if (i + 1 == end && style.width > l.starts[i]) room = std::max(room, style.width - l.starts[i]);
    const bool breaks = wrap && style.width > 0 && columns_[i].wraps && cells[i].size() > room;
    pieces.push_back(breaks ? pieces_of(cells[i], room) : std::vector<std::string>{cells[i]});
    height = std::max(height, pieces.back().size());
  }
  // A further line of a row with nothing on it (no note, say) is not printed.
  if (s > 0 && std::all_of(pieces.begin(), pieces.end(), [](const auto& p) { return p.size() == 1 && p[0].empty(); }))
    return "";
  std::string out;
  for (std::size_t p = 0; p < height; ++p) {
    std::string line = indent;
    for (std::size_t i = first; i < end; ++i) {
      if (i > first) line += columns_[i].gap ? *columns_[i].gap : style.gap;
      line.resize(std::max(line.size(), l.starts[i]), ' ');  // a second line starts under its column
      const auto& parts = pieces[i - first];
      const std::string cell = p < parts.size() ? parts[p] : "";
      const std::string padding(l.widths[i] - std::min(l.widths[i], cell.size()), ' ');
      line += columns_[i].align == Align::right ? padding + cell : cell + padding;
    }
    if (style.trim) line.erase(line.find_last_not_of(' ') + 1);
    out += line + '\n';
  }
  return out;
}

std::string TextTable::lines(const std::vector<std::string>& cells, const Layout& l, const Style& style,
                             const std::string& indent, bool wrap) const {
  std::string out;
  for (std::size_t s = 0; s < l.segments.size(); ++s) out += segment_lines(cells, l, s, style, indent, wrap);
  return out;
}

std::string TextTable::header_text(const Style& style) const {
  if (!style.header) return "";
  const Layout l = layout(style);
  const std::string& indent = style.header_indent ? *style.header_indent : style.indent;
  std::vector<std::string> names, units, rules;
  bool any_unit = false;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    names.push_back(columns_[i].header);
    units.push_back(columns_[i].unit);
    any_unit = any_unit || !columns_[i].unit.empty();
    rules.push_back(std::string(l.widths[i], '-'));
  }
  // With two lines per row, each line's units sit under its own names.
  std::string out;
  for (std::size_t s = 0; s < l.segments.size(); ++s) {
    out += segment_lines(names, l, s, style, indent, false);
    if (any_unit) out += segment_lines(units, l, s, style, indent, false);
  }
  if (style.rule) out += lines(rules, l, style, indent, false);
  return out;
}

std::string TextTable::row_text(const std::vector<std::string>& cells, const Style& style) const {
  if (cells.size() != columns_.size()) throw std::logic_error("TextTable: row does not match the columns");
  return lines(cells, layout(style), style, style.indent, true);
}

std::string TextTable::render(const Style& style) const {
  const Layout l = layout(style);
  std::string out = header_text(style);
  for (const auto& row : rows_) out += lines(row, l, style, style.indent, true);
  return out;
}

void TextTable::print(std::ostream& out, const std::string& indent, bool header) const {
  Style style;
  style.indent = indent;
  style.header = header;
  out << render(style);
}

std::size_t TextTable::column_start(const Style& style, std::size_t i) const { return layout(style).starts.at(i); }

bool TextTable::breaks_lines(const Style& style) const { return layout(style).segments.size() > 1; }

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string signed_fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%+.*f", decimals, value);
  return text;
}

}  // namespace ibt
