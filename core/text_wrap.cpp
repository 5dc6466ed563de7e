#include "core/text_wrap.hpp"

#include <regex>

namespace ibt {

namespace {

// Where a long line's continuation starts: under the value of "label: value" or
// "label    value"; a label so long the value would start past half the width gets 4.
std::size_t hanging_indent(const std::string& line, std::size_t width) {
  // "label   value" first (a value may hold a colon), then "label: value".
  static const std::regex labelled(R"(^(\s*\S+(?:\s\S+)?\s{2,}|\s*[^\s:][^:]{0,40}?:\s+))");
  std::smatch m;
  std::size_t indent = 2;
  if (std::regex_search(line, m, labelled)) indent = static_cast<std::size_t>(m.length(0));
  return indent * 2 > width ? 4 : indent;
}

// Breaks at spaces of the line itself, so the spacing inside each piece (aligned columns
// of "label   value") is kept.
std::string wrap_one(const std::string& line, std::size_t width, std::size_t indent) {
  if (line.size() <= width) return line;
  const std::string pad(indent == kIndentUnderValue || indent * 2 > width ? hanging_indent(line, width) : indent, ' ');
  std::string out, rest = line;
  std::size_t words_from = line.find_first_not_of(' ');  // never break inside the indent
  while (rest.size() > width) {
    std::size_t cut = rest.rfind(' ', width);
    if (cut == std::string::npos || cut <= words_from) cut = rest.find(' ', width);  // a word wider than the line
    if (cut == std::string::npos) break;
    const std::size_t end = rest.find_last_not_of(' ', cut);
    const std::size_t next = rest.find_first_not_of(' ', cut);
    if (end == std::string::npos || end < words_from) break;
    out += rest.substr(0, end + 1) + "\n";
    if (next == std::string::npos) return out.substr(0, out.size() - 1);
    rest = pad + rest.substr(next);
    words_from = pad.size();
  }
  return out + rest;
}

}  // namespace

std::string wrap_lines(const std::string& text, std::size_t width, std::size_t indent) {
  if (width == 0) return text;
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    const bool newline = end != std::string::npos;
    if (!newline) end = text.size();
    out += wrap_one(text.substr(start, end - start), width, indent);
    if (newline) out += '\n';
    start = end + 1;
  }
  return out;
}

std::string comment_lines(const std::string& text, std::size_t width) {
  if (width == 0) return text;
  std::string out = wrap_lines(text, width, 4);
  for (std::size_t at = out.find("\n    "); at != std::string::npos; at = out.find("\n    ", at + 1)) out[at + 1] = '#';
  return out;
}

std::vector<std::string> cell_pieces(const std::string& text, std::size_t width) {
  std::vector<std::string> pieces(1);
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) {
      const std::string word = text.substr(start, end - start);
      std::string& last = pieces.back();
      if (last.empty())
        last = word;
      else if (last.size() + 1 + word.size() <= width)
        last += " " + word;
      else
        pieces.push_back(word);
    }
    start = end + 1;
  }
  return pieces;
}

}  // namespace ibt
