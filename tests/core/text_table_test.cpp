// The one text-table printer: alignment, units, minimum widths, the width budget (wrapping
// columns, rows broken into two lines), wide mode and tables printed row by row.
#include <gtest/gtest.h>

#include <sstream>

#include "core/text_table.hpp"

namespace ibt {
namespace {

using Align = TextTable::Align;

std::size_t longest_line(const std::string& text) {
  std::size_t longest = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) longest = std::max(longest, line.size());
  return longest;
}

TEST(TextTable, AlignsWordsLeftAndNumbersRight) {
  TextTable t;
  t.add_column("op", Align::left);
  t.add_column("time", Align::right);
  t.add_row({"all_reduce", "1.50"});
  t.add_row({"ping", "12345.00"});
  std::ostringstream out;
  t.print(out, "  ");
  EXPECT_EQ(out.str(),
            "  op              time\n"
            "  ----------  --------\n"
            "  all_reduce      1.50\n"
            "  ping        12345.00\n");
  std::ostringstream rows_only;
  t.print(rows_only, "", false);
  EXPECT_EQ(rows_only.str(), "all_reduce      1.50\nping        12345.00\n");
}

TEST(TextTable, RefusesRowsOfTheWrongWidth) {
  TextTable t;
  t.add_column("a", Align::left);
  EXPECT_THROW(t.add_row({"1", "2"}), std::logic_error);
  EXPECT_THROW(t.expect({"1", "2"}), std::logic_error);
  EXPECT_THROW(t.add_column(TextTable::Column("b", Align::left).breaking_under(5)), std::logic_error);
}

TEST(TextTable, UnitsGoUnderTheNamesAndMinimumWidthsHold) {
  TextTable t;
  t.add_column({"size", Align::right, "(B)", 8});
  t.add_column({"busbw", Align::right, "(GB/s)", 7});
  t.add_row({"1024", fixed(12.3456, 2)});
  TextTable::Style s;
  s.gap = " ";
  s.rule = false;
  EXPECT_EQ(t.render(s),
            "    size   busbw\n"
            "     (B)  (GB/s)\n"
            "    1024   12.35\n");
}

TEST(TextTable, KeepsTrailingSpacesOnlyWhenAsked) {
  TextTable t;
  t.add_column({"a", Align::left, "", 3});
  t.add_column({"b", Align::right, "", 3});
  t.add_row({"x", ""});
  TextTable::Style s;
  s.header = false;
  EXPECT_EQ(t.render(s), "x\n");
  s.trim = false;
  EXPECT_EQ(t.render(s), "x       \n");  // "x" in 3, the gap, an empty 3
}

TEST(TextTable, AWrappingColumnShrinksToTheBudgetAndWideKeepsItWhole) {
  TextTable t;
  t.add_column("command", Align::left);
  t.add_column(TextTable::Column("what", Align::left).wrapping());
  t.add_row({"train", "train a model at a split on the CPU and check it against the serial reference"});
  TextTable::Style s;
  s.width = 40;
  const std::string narrow = t.render(s);
  EXPECT_LE(longest_line(narrow), 40u) << narrow;
  EXPECT_EQ(narrow.substr(narrow.find("train ")),
            "train    train a model at a split on the\n"
            "         CPU and check it against the\n"
            "         serial reference\n");
  s.width = 0;
  const std::string wide = t.render(s);
  EXPECT_EQ(wide.substr(wide.find("train ")),
            "train    train a model at a split on the CPU and check it against the serial reference\n")
      << wide;
}

TEST(TextTable, ARowTooWideForTheBudgetContinuesOnASecondLineUnderItsColumn) {
  TextTable t;
  t.add_column({"op", Align::left});
  t.add_column({"time", Align::right, "us", 6});
  t.add_column(TextTable::Column("time", Align::right, "us", 6).breaking_under(1));  // under the first
  t.add_row({"all_reduce", "1.00", "2.00"});
  TextTable::Style s;
  s.width = 20;
  ASSERT_TRUE(t.breaks_lines(s));
  EXPECT_EQ(t.render(s),
            "op            time\n"
            "                us\n"
            "              time\n"
            "                us\n"
            "----------  ------\n"
            "            ------\n"
            "all_reduce    1.00\n"
            "              2.00\n");
  EXPECT_EQ(t.column_start(s, 2), t.column_start(s, 1));
  s.width = 0;
  EXPECT_FALSE(t.breaks_lines(s));
  EXPECT_EQ(t.render(s),
            "op            time    time\n"
            "                us      us\n"
            "----------  ------  ------\n"
            "all_reduce    1.00    2.00\n");
}

TEST(TextTable, ARowPrintedAsItArrivesKeepsTheExpectedWidths) {
  TextTable t;
  t.add_column({"op", Align::left});
  t.add_column({"size", Align::right, "(B)"});
  t.expect({"reduce_scatter", "1048576"});
  TextTable::Style s;
  s.header_indent = "# ";
  s.indent = "  ";
  s.gap = " ";
  s.rule = false;
  EXPECT_EQ(t.header_text(s),
            "# op                size\n"
            "#                    (B)\n");
  EXPECT_EQ(t.row_text({"all_reduce", "8"}, s), "  all_reduce           8\n");
  EXPECT_EQ(t.column_start(s, 1), 17u);
  EXPECT_EQ(t.rows(), 0u);
}

TEST(TextTable, WithoutABreakColumnARowTakesTheColumnsThatFitPerLine) {
  TextTable t;
  for (const char* name : {"alpha", "beta", "gamma", "delta"}) t.add_column({name, Align::right, "", 8});
  t.add_row({"1", "2", "3", "4"});
  TextTable::Style s;
  s.width = 30;
  const std::string text = t.render(s);
  EXPECT_LE(longest_line(text), 30u) << text;
  EXPECT_EQ(text,
            "   alpha      beta     gamma\n"
            "       delta\n"
            "--------  --------  --------\n"
            "    --------\n"
            "       1         2         3\n"
            "           4\n");
}

TEST(TextTable, AWordLongerThanAWrappingColumnIsCutAtItsEdge) {
  TextTable t;
  t.add_column("name", Align::left);
  t.add_column(TextTable::Column("value", Align::left).wrapping());
  t.add_row({"config", "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7}"});
  TextTable::Style s;
  s.header = false;
  s.width = 34;  // the value column 26 wide
  EXPECT_EQ(t.render(s),
            "config  {\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"\n"
            "        e\":5,\"f\":6,\"g\":7}\n");
}

TEST(TextTable, AColumnMayHaveItsOwnSeparator) {
  TextTable t;
  t.add_column({"margin", Align::right});
  t.add_column(TextTable::Column("verdict", Align::left).after("  "));
  t.add_row({"+0.500", "PASS"});
  TextTable::Style s;
  s.gap = " ";
  s.rule = false;
  EXPECT_EQ(t.render(s), "margin  verdict\n+0.500  PASS\n");
}

TEST(TextTable, ARowPrintedOnItsOwnWithoutABudgetIsNeverBroken) {
  TextTable t;
  t.add_column({"metric", Align::left, "", 8});
  t.add_column(TextTable::Column("verdict", Align::left).wrapping());
  TextTable::Style s;
  s.gap = " ";
  EXPECT_EQ(t.row_text({"latency", "FAIL  not in the file"}, s), "latency  FAIL  not in the file\n");
  s.width = 20;  // the last column may take what the budget leaves: 11
  EXPECT_EQ(t.row_text({"latency", "FAIL  not in the file"}, s), "latency  FAIL not in\n         the file\n");
}

TEST(TextTable, AnEmptySecondLineIsNotPrinted) {
  TextTable t;
  t.add_column({"metric", Align::left});
  t.add_column({"verdict", Align::left});
  t.add_column(TextTable::Column("", Align::left).breaking_under(1));
  t.add_row({"latency", "PASS", ""});
  t.add_row({"bandwidth", "FAIL", "not in the file"});
  TextTable::Style s;
  s.width = 24;
  EXPECT_EQ(t.render(s),
            "metric     verdict\n"
            "---------  -------\n"
            "           ---------------\n"
            "latency    PASS\n"
            "bandwidth  FAIL\n"
            "           not in the file\n");
}

TEST(TextTable, FormatsFixedDecimals) {
  EXPECT_EQ(fixed(2.0, 2), "2.00");
  EXPECT_EQ(fixed(1234.5678, 0), "1235");
  EXPECT_EQ(fixed(-0.125, 1), "-0.1");
  EXPECT_EQ(signed_fixed(0.5, 2), "+0.50");
  EXPECT_EQ(signed_fixed(-1.25, 2), "-1.25");
}

}  // namespace
}  // namespace ibt
