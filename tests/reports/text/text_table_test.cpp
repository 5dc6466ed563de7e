// Text tables: alignment, units in headers and value formatting for `ibt show`.
#include <gtest/gtest.h>

#include <sstream>

#include "reports/text/run_text.hpp"
#include "reports/text/text_table.hpp"

namespace ibt::reports {
namespace {

TEST(TextTable, AlignsWordsLeftAndNumbersRight) {
  TextTable t;
  t.add_column("op", TextTable::Align::left);
  t.add_column("time", TextTable::Align::right);
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
  t.add_column("a", TextTable::Align::left);
  EXPECT_THROW(t.add_row({"1", "2"}), std::logic_error);
}

TEST(RunText, UnitsGoUnderColumnNamesAndValuesAreReadable) {
  store::TableData data;
  data.columns = {{"op", store::ColumnType::str},
                  {"bytes", store::ColumnType::u64, "B"},
                  {"busbw_GBps", store::ColumnType::f64, "GB/s"},
                  {"p50_us", store::ColumnType::f64, "us"}};
  data.rows = {{std::string("all_gather"), std::uint64_t{1048576}, 12.3456, 0.0123456}};
  std::ostringstream out;
  print_table(out, data, "");
  EXPECT_EQ(out.str(),
            "op            bytes  busbw_GBps  p50_us\n"
            "                  B        GB/s      us\n"
            "----------  -------  ----------  ------\n"
            "all_gather  1048576       12.35  0.0123\n");
}

}  // namespace
}  // namespace ibt::reports
