#pragma once
// Prose lines of a command's report fitted to a terminal's width: notes, assumptions and
// "label   value" lines are broken at spaces, continuation lines indented under the value,
// so the default output of project, crossover and scaling stays within 120 columns.
// Table rows are never passed through wrap_lines: they fit by their own column choices, a
// cell too long for its column continuing below it (cell_pieces).
#include <cstddef>
#include <string>
#include <vector>

namespace ibt {

// The columns the default output of project, crossover and scaling fits (--wide: no limit).
inline constexpr std::size_t kReportColumns = 120;

inline constexpr std::size_t kIndentUnderValue = static_cast<std::size_t>(-1);

// Each line of `text` longer than `width` broken at spaces into lines of at most `width`
// characters (a single word longer than that stays whole); continuation lines start
// `indent` spaces in, by default under the line's value: after a leading "label: " or
// "label  " (two or more spaces), else two spaces in. width 0 returns `text` unchanged.
std::string wrap_lines(const std::string& text, std::size_t width, std::size_t indent = kIndentUnderValue);

// Each "#" comment line of `text` longer than `width` broken at spaces, its continuations
// "#   ..." (still comments to the scripts that skip them); width 0 returns `text` unchanged.
std::string comment_lines(const std::string& text, std::size_t width);

// A table cell's text broken at spaces into pieces of at most `width` characters (a word
// longer than that stays whole), so a long cell continues on the lines below its row in
// its own column instead of pushing the row past the width. Always at least one piece.
std::vector<std::string> cell_pieces(const std::string& text, std::size_t width);

}  // namespace ibt
