// ibt collectives' table: --wide is the layout ibt always printed (checked against that
// layout's printf formats), the default fits 120 columns with each size's in-place half on
// the line below its out-of-place half, under it.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "collectives/collective.hpp"
#include "collectives/results_table.hpp"

namespace ibt::suites {
namespace {

std::string printed(const ResultsTable& table, const SizeResult* row) {
  std::FILE* f = std::tmpfile();
  if (row)
    table.print_line(f, *row, "sum");
  else
    table.print_header(f);
  std::rewind(f);
  std::string text;
  for (int c; (c = std::fgetc(f)) != EOF;) text += static_cast<char>(c);
  std::fclose(f);
  return text;
}

std::string sprint(const char* format, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, args...);
  return buf;
}

SizeResult sample(bool with_in_place) {
  static const Collective& op = find_collective("all_reduce");
  SizeResult r{&op, Scope::world, DType::float32, 1048576, 262144, 4, {}, {}};
  Measurement m;
  m.time_us = 12345.6;  // whole microseconds from 10000 us, as nccl-tests
  m.p50_us = 9.876;
  m.p99_us = 15.5;
  m.algbw_GBps = 84.94;
  m.busbw_GBps = 127.41;
  m.checked = true;
  m.wrong = 0;
  r.out_of_place = m;
  if (with_in_place) {
    m.checked = false;
    r.in_place = m;
  }
  return r;
}

std::size_t longest_line(const std::string& text) {
  std::size_t longest = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) longest = std::max(longest, line.size());
  return longest;
}

TEST(ResultsTable, WideIsTheLayoutIbtAlwaysPrinted) {
  const ResultsTable wide(true, 4194304, 4);
  // The printf formats of that layout, as they were.
  const char* head = "# %-14s %-5s %5s %12s %11s %-8s %-5s %9s %9s %9s %7s %7s %6s %9s %9s %9s %7s %7s %6s\n";
  const std::string header =
      sprint("#%79s%s\n", "", "out-of-place                                        in-place") +
      sprint(head, "op", "scope", "group", "size", "count", "type", "redop", "time", "p50", "p99", "algbw", "busbw",
             "#wrong", "time", "p50", "p99", "algbw", "busbw", "#wrong") +
      sprint(head, "", "", "(rks)", "(B)", "(elements)", "", "", "(us)", "(us)", "(us)", "(GB/s)", "(GB/s)", "", "(us)",
             "(us)", "(us)", "(GB/s)", "(GB/s)", "");
  EXPECT_EQ(printed(wide, nullptr), header);
  const std::string ids = sprint("  %-14s %-5s %5d %12zu %11zu %-8s %-5s", "all_reduce", "world", 4,
                                 std::size_t{1048576}, std::size_t{262144}, "float32", "sum");
  const char* half = " %9s %9s %9s %7.2f %7.2f %6s";
  const std::string out = sprint(half, "12346", "9.88", "15.50", 84.94, 127.41, "0");
  const std::string in = sprint(half, "12346", "9.88", "15.50", 84.94, 127.41, "N/A");
  const SizeResult both = sample(true), one = sample(false);
  EXPECT_EQ(printed(wide, &both), ids + out + in + "\n");
  EXPECT_EQ(printed(wide, &one), ids + out + sprint(" %9s %9s %9s %7s %7s %6s", "n/a", "", "", "", "", "") + "\n");
  EXPECT_EQ(longest_line(printed(wide, &both)), 174u);
}

TEST(ResultsTable, DefaultFits120ColumnsWithTheInPlaceHalfBelow) {
  const ResultsTable narrow(false, std::size_t{10} << 30, 4096);  // up to 10 GiB: 11 digits
  const std::string header = printed(narrow, nullptr);
  EXPECT_LE(longest_line(header), 120u) << header;
  EXPECT_NE(header.find("out-of-place (in-place on the line below)"), std::string::npos) << header;
  const SizeResult both = sample(true);
  const std::string row = printed(narrow, &both);
  EXPECT_LE(longest_line(row), 120u) << row;
  const std::size_t newline = row.find('\n');
  ASSERT_NE(newline, std::string::npos);
  const std::string first = row.substr(0, newline), second = row.substr(newline + 1, row.size() - newline - 2);
  // The second line holds only the in-place half, in the columns of the first line's
  // out-of-place half: the same figures, a different #wrong.
  const std::size_t time_column = first.find("12346") - 4;  // "12346" right-aligned in 9
  EXPECT_EQ(second.find_first_not_of(' '), time_column + 4) << row;
  EXPECT_EQ(first.substr(time_column, 46), second.substr(time_column, 46)) << row;
  EXPECT_EQ(first.substr(first.size() - 6), "     0") << row;
  EXPECT_EQ(second.substr(second.size() - 6), "   N/A") << row;
}

}  // namespace
}  // namespace ibt::suites
