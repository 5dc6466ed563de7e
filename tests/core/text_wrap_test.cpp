// wrap_lines: prose lines fitted to a width with their continuation under the value.
#include "core/text_wrap.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <vector>

namespace ibt {
namespace {

std::size_t longest_line(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::size_t longest = 0;
  while (std::getline(in, line)) longest = std::max(longest, line.size());
  return longest;
}

TEST(TextWrap, ShortLinesAndWidthZeroUnchanged) {
  const std::string text = "split        dp16 m128\nstep time    27.2 s\n";
  EXPECT_EQ(wrap_lines(text, 120), text);
  const std::string long_line(300, 'x');
  EXPECT_EQ(wrap_lines("a " + long_line, 0), "a " + long_line);
}

TEST(TextWrap, ContinuationUnderTheValueOfALabel) {
  const std::string line =
      "failure assumptions: node MTBF 6334.6 h ('llama3-paper'), devices per node 8 ('dgx-h100-guide'), checkpoint "
      "write 0.1221 GB/s per device ('llama3-paper'), restart 10 min ('ibt-reliability')";
  const std::string out = wrap_lines(line, 80);
  EXPECT_LE(longest_line(out), 80u);
  EXPECT_EQ(out.find("\n                     "), out.find('\n')) << out;  // 21 = "failure assumptions: "
  // Nothing lost or reordered: the words are the same.
  std::istringstream a(line), b(out);
  std::string wa, wb;
  while (a >> wa) {
    ASSERT_TRUE(static_cast<bool>(b >> wb));
    EXPECT_EQ(wa, wb);
  }
  EXPECT_FALSE(static_cast<bool>(b >> wb));
}

TEST(TextWrap, ContinuationUnderAColumnLabel) {
  const std::string line =
      "MFU          56.3% (80% band 46.2-100.0: out-of-family error of 15 published runs on dgx-h100) "
      "(model FLOPs vs bf16 peak), HFU 56.3% (with recompute)";
  const std::string out = wrap_lines(line, 100);
  EXPECT_LE(longest_line(out), 100u);
  EXPECT_NE(out.find("\n             "), std::string::npos) << out;  // 13 = "MFU          "
}

TEST(TextWrap, AWordLongerThanTheWidthStaysWhole) {
  const std::string word(50, 'w');
  const std::string out = wrap_lines("note: a " + word + " b", 20);
  EXPECT_NE(out.find(word), std::string::npos);
}

TEST(TextWrap, AGivenIndent) {
  const std::string row = "       8      1024          -  ";
  const std::string out =
      wrap_lines(row + std::string("no split fits in memory; e.g. 1231.6 GB over: needs 1308.9 GB ") +
                     "per device on stage 0 (weights 141.1 GB, optimizer 846.6 GB) > 77.3 GB usable",
                 80, row.size());
  EXPECT_LE(longest_line(out), 80u);
  std::istringstream lines(out);
  std::string line;
  std::getline(lines, line);
  int continuations = 0;
  while (std::getline(lines, line)) {  // each starts under the reason, where it began
    EXPECT_EQ(line.find_first_not_of(' '), row.size()) << out;
    ++continuations;
  }
  EXPECT_EQ(continuations, 2) << out;
}

TEST(CellPieces, ShortTextIsOnePiece) {
  EXPECT_EQ(cell_pieces("dp64 m32 zero2", 20), std::vector<std::string>{"dp64 m32 zero2"});
  EXPECT_EQ(cell_pieces("", 20), std::vector<std::string>{""});
}

TEST(CellPieces, LongTextBrokenAtSpacesWithinTheWidth) {
  const std::string label = "dp1024 cp4 ring ep128 m2 b2 zero3 recompute=selective";
  const std::vector<std::string> pieces = cell_pieces(label, 36);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0], "dp1024 cp4 ring ep128 m2 b2 zero3");
  EXPECT_EQ(pieces[1], "recompute=selective");
  // A word longer than the width is a piece of its own, whole.
  EXPECT_EQ(cell_pieces("pp4 recompute=selective", 10), (std::vector<std::string>{"pp4", "recompute=selective"}));
}

TEST(CommentLines, ALongCommentContinuesAsAComment) {
  const std::string line = "# ibt accept 0.1.0: reference local-cpu.json (local-cpu), 11 metrics, judged from c.h5\n";
  EXPECT_EQ(comment_lines(line, 0), line);
  EXPECT_EQ(comment_lines(line, 50),
            "# ibt accept 0.1.0: reference local-cpu.json\n"
            "#   (local-cpu), 11 metrics, judged from c.h5\n");
  EXPECT_EQ(comment_lines("# short\n", 50), "# short\n");
}

}  // namespace
}  // namespace ibt
