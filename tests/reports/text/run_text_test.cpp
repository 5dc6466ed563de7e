// `ibt show`'s tables: units in headers and value formatting.
#include <gtest/gtest.h>

#include <sstream>

#include "reports/text/run_text.hpp"

namespace ibt::reports {
namespace {

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
