// core/row_schema.hpp: a row type's one field list gives its columns and cells, and a
// stored row reads back by column name, whatever the column order, with columns missing
// (older files) or unknown (newer ones).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "core/row_schema.hpp"

namespace ibt::store {
namespace {

struct Sample {
  std::int64_t rank = -1;
  std::uint64_t bytes = 0;
  double time_s = std::nan("");
  std::string op;
  static constexpr std::string_view kTable = "samples";
  static constexpr std::array<Field<Sample>, 4> kFields{{{"op", &Sample::op, "", "the operation"},
                                                         {"rank", &Sample::rank, "ranks", "the rank"},
                                                         {"bytes", &Sample::bytes, "B", "the size"},
                                                         {"time_s", &Sample::time_s, "s", "the time"}}};
};

TEST(RowSchema, ColumnsComeFromTheFieldListInItsOrderWithTypesFromTheMembers) {
  const std::vector<Column> c = columns_of<Sample>();
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0].name, "op");
  EXPECT_EQ(c[0].type, ColumnType::str);
  EXPECT_EQ(c[1].name, "rank");
  EXPECT_EQ(c[1].type, ColumnType::i64);
  EXPECT_EQ(c[1].unit, "ranks");
  EXPECT_EQ(c[2].type, ColumnType::u64);
  EXPECT_EQ(c[3].type, ColumnType::f64);
  EXPECT_EQ(c[3].unit, "s");
  EXPECT_EQ(c[0].str_bytes, 0u);  // variable-length, as every table ibt writes
}

TEST(RowSchema, ARowIsItsCellsInColumnOrder) {
  const Sample s{3, 1024, 0.5, "all_reduce"};
  const Row r = to_row(s);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(std::get<std::string>(r[0]), "all_reduce");
  EXPECT_EQ(std::get<std::int64_t>(r[1]), 3);
  EXPECT_EQ(std::get<std::uint64_t>(r[2]), 1024u);
  EXPECT_EQ(std::get<double>(r[3]), 0.5);
}

TEST(RowSchema, ReadsByNameWhateverTheOrderAndKeepsDefaultsForMissingColumns) {
  // A file whose columns are in another order, lacks "rank" and has one this build
  // does not know.
  const std::vector<Column> stored = {
      {"time_s", ColumnType::f64, "s"}, {"later", ColumnType::i64, ""}, {"op", ColumnType::str, ""}};
  const RowReader<Sample> reader(stored);
  EXPECT_TRUE(reader.has(&Sample::op));
  EXPECT_FALSE(reader.has(&Sample::rank));
  const Sample s = reader.read({2.5, std::int64_t{7}, std::string("broadcast")});
  EXPECT_EQ(s.op, "broadcast");
  EXPECT_EQ(s.time_s, 2.5);
  EXPECT_EQ(s.rank, -1);  // the default: the file has no such column
  EXPECT_EQ(s.bytes, 0u);
}

TEST(RowSchema, NumericCellsConvertBetweenTypesButNaNNeverBecomesAnInteger) {
  const std::vector<Column> stored = {{"rank", ColumnType::f64, ""},
                                      {"bytes", ColumnType::i64, ""},
                                      {"time_s", ColumnType::u64, ""},
                                      {"op", ColumnType::f64, ""}};
  const RowReader<Sample> reader(stored);
  Sample s = reader.read({4.0, std::int64_t{8}, std::uint64_t{2}, 1.0});
  EXPECT_EQ(s.rank, 4);
  EXPECT_EQ(s.bytes, 8u);
  EXPECT_EQ(s.time_s, 2.0);
  EXPECT_EQ(s.op, "");  // a number is no text: left as it was
  s = reader.read({std::nan(""), std::int64_t{8}, std::uint64_t{2}, 1.0});
  EXPECT_EQ(s.rank, -1);
}

TEST(RowSchema, ALayoutStoresSomeFieldsInItsOwnOrder) {
  const Layout<Sample> layout{"time_s", "op"};
  const std::vector<Column> c = layout.columns();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].name, "time_s");
  EXPECT_EQ(c[1].name, "op");
  const Row r = layout.row(Sample{1, 2, 3.0, "x"});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(std::get<double>(r[0]), 3.0);
  EXPECT_EQ(std::get<std::string>(r[1]), "x");
}

TEST(RowSchema, ANameOutsideTheSchemaIsABugCaughtWhenTheLayoutIsMade) {
  EXPECT_THROW((Layout<Sample>{"op", "tiem_s"}), std::logic_error);
  EXPECT_EQ(column_name(&Sample::bytes), "bytes");
}

}  // namespace
}  // namespace ibt::store
