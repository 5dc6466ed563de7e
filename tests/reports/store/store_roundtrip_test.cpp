// The store's schema round-trip: what is written reads back equal, runs append without
// touching earlier ones, and the layout is what docs/results-format.md documents.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <limits>
#include <regex>

#include "core/errors.hpp"
#include "reports/store/store.hpp"
#include "tests/reports/store/test_support.hpp"

namespace ibt::store {
namespace {

using test::ScratchDir;

std::vector<Column> every_type_columns() {
  return {{"name", ColumnType::str},
          {"signed", ColumnType::i64, "ranks"},
          {"unsigned", ColumnType::u64, "B"},
          {"real", ColumnType::f64, "us"},
          {"tag", ColumnType::str}};
}

std::vector<Row> every_type_rows() {
  return {
      {std::string("all_reduce"), std::int64_t{-3}, std::uint64_t{0}, 0.1, std::string("in")},
      {std::string(""), std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::uint64_t>::max(), -1.0e300,
       std::string("full")},  // "full" fills its 4 bytes: no NUL terminator in the file
      {std::string("h\xc3\xa9llo"), std::numeric_limits<std::int64_t>::max(), std::uint64_t{1} << 63,
       std::numeric_limits<double>::denorm_min(), std::string("x")},
  };
}

// One run with attributes of each type, an environment, a table and an array.
void write_first_run(const std::string& path) {
  auto store = open_for_append(path);
  auto run = store->begin_run("collectives");
  run->set_attr("world_size", std::int64_t{4});
  run->set_attr("timeout_s", 2.5);
  run->set_attr("command_line", std::string("ibt collectives -b 8 -e 1M"));
  run->set_environment({{"UCX_TLS", "sm,self"}, {"NCCL_DEBUG", "INFO"}});
  Table& table = run->table("results", every_type_columns());
  for (const auto& row : every_type_rows()) table.append(row);
  const double weights[6] = {1, 2, 3, 4, 5, 6.5};
  run->write_array("params/layer0/weight", {2, 3}, weights);
  run->finish(RunStatus::complete);
}

void expect_rows_equal(const std::vector<Row>& expected, const std::vector<Row>& actual) {
  ASSERT_EQ(expected.size(), actual.size());
  for (std::size_t r = 0; r < expected.size(); ++r) {
    ASSERT_EQ(expected[r].size(), actual[r].size()) << "row " << r;
    for (std::size_t c = 0; c < expected[r].size(); ++c)
      EXPECT_EQ(expected[r][c], actual[r][c]) << "row " << r << " column " << c;
  }
}

TEST(StoreRoundTrip, TwoRunsReadBackEqual) {
  ScratchDir dir;
  const std::string path = dir.file("results.h5");
  write_first_run(path);
  const TableData first_before = read_table(path, "000001", "results");

  {
    auto store = open_for_append(path);
    auto run = store->begin_run("train");
    EXPECT_EQ(run->id(), "000002");
    Table& table = run->table("steps", {{"step", ColumnType::i64, "steps"}, {"loss", ColumnType::f64, ""}});
    table.append({std::int64_t{1}, 3.25});
    table.append({std::int64_t{2}, 2.5});
    run->finish(RunStatus::partial, "stopped after 2 steps");
  }

  const auto runs = list_runs(path);
  ASSERT_EQ(runs.size(), 2u);
  const RunInfo& a = runs[0];
  EXPECT_EQ(a.id, "000001");
  EXPECT_EQ(a.attr_string("kind"), "collectives");
  EXPECT_EQ(a.attr_string("status"), "complete");
  EXPECT_EQ(std::get<std::int64_t>(*a.attr("world_size")), 4);
  EXPECT_EQ(std::get<double>(*a.attr("timeout_s")), 2.5);
  EXPECT_EQ(a.attr_string("command_line"), "ibt collectives -b 8 -e 1M");
  EXPECT_FALSE(a.attr("error").has_value());
  const std::regex iso8601(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)");
  EXPECT_TRUE(std::regex_match(a.attr_string("start_time"), iso8601)) << a.attr_string("start_time");
  EXPECT_TRUE(std::regex_match(a.attr_string("end_time"), iso8601)) << a.attr_string("end_time");
  const std::vector<std::pair<std::string, std::string>> env = {{"NCCL_DEBUG", "INFO"}, {"UCX_TLS", "sm,self"}};
  EXPECT_EQ(a.environment, env);
  EXPECT_EQ(a.tables, std::vector<std::string>{"results"});  // the array is not a table

  const RunInfo& b = runs[1];
  EXPECT_EQ(b.id, "000002");
  EXPECT_EQ(b.attr_string("kind"), "train");
  EXPECT_EQ(b.attr_string("status"), "partial");
  EXPECT_EQ(b.attr_string("error"), "stopped after 2 steps");
  EXPECT_TRUE(b.environment.empty());
  EXPECT_EQ(b.tables, std::vector<std::string>{"steps"});

  const TableData first = read_table(path, "000001", "results");
  const auto columns = every_type_columns();
  ASSERT_EQ(first.columns.size(), columns.size());
  for (std::size_t i = 0; i < columns.size(); ++i) {
    EXPECT_EQ(first.columns[i].name, columns[i].name);
    EXPECT_EQ(first.columns[i].type, columns[i].type);
    EXPECT_EQ(first.columns[i].unit, columns[i].unit);
    if (columns[i].type == ColumnType::str) {
      EXPECT_EQ(first.columns[i].str_bytes, columns[i].str_bytes);
    }
  }
  expect_rows_equal(every_type_rows(), first.rows);
  expect_rows_equal(first_before.rows, first.rows);  // appending run 2 left run 1 as it was
  EXPECT_EQ(first.column_index("real"), 3);
  EXPECT_EQ(first.column_index("absent"), -1);

  const TableData second = read_table(path, "2", "steps");  // the bare number names a run too
  expect_rows_equal({{std::int64_t{1}, 3.25}, {std::int64_t{2}, 2.5}}, second.rows);
  EXPECT_EQ(second.columns[0].unit, "steps");
  EXPECT_EQ(second.columns[1].unit, "");
}

TEST(StoreRoundTrip, LayoutMatchesTheDocumentedSchema) {
  ScratchDir dir;
  const std::string path = dir.file("results.h5");
  write_first_run(path);

  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  // Root attributes: a variable-length string and an integer.
  const hid_t schema = H5Aopen(file, "ibt_schema", H5P_DEFAULT);
  ASSERT_GE(schema, 0);
  const hid_t schema_type = H5Aget_type(schema);
  EXPECT_GT(H5Tis_variable_str(schema_type), 0);
  H5Tclose(schema_type);
  H5Aclose(schema);
  const hid_t version = H5Aopen(file, "ibt_schema_version", H5P_DEFAULT);
  ASSERT_GE(version, 0);
  long long v = 0;
  EXPECT_GE(H5Aread(version, H5T_NATIVE_LLONG, &v), 0);
  EXPECT_EQ(v, kSchemaVersion);
  H5Aclose(version);

  // The table: chunked, extendible without limit, one unit attribute per column.
  const hid_t table = H5Dopen2(file, "/runs/000001/results", H5P_DEFAULT);
  ASSERT_GE(table, 0);
  const hid_t dcpl = H5Dget_create_plist(table);
  EXPECT_EQ(H5Pget_layout(dcpl), H5D_CHUNKED);
  H5Pclose(dcpl);
  const hid_t space = H5Dget_space(table);
  hsize_t dims = 0, maxdims = 0;
  EXPECT_EQ(H5Sget_simple_extent_dims(space, &dims, &maxdims), 1);
  EXPECT_EQ(dims, 3u);
  EXPECT_EQ(maxdims, H5S_UNLIMITED);
  H5Sclose(space);
  for (const auto& c : every_type_columns()) EXPECT_GT(H5Aexists(table, ("unit:" + c.name).c_str()), 0) << c.name;
  H5Dclose(table);

  // The array, under intermediate groups created on the way.
  const hid_t array = H5Dopen2(file, "/runs/000001/params/layer0/weight", H5P_DEFAULT);
  ASSERT_GE(array, 0);
  const hid_t array_space = H5Dget_space(array);
  hsize_t shape[2] = {0, 0};
  EXPECT_EQ(H5Sget_simple_extent_dims(array_space, shape, nullptr), 2);
  EXPECT_EQ(shape[0], 2u);
  EXPECT_EQ(shape[1], 3u);
  double values[6] = {};
  EXPECT_GE(H5Dread(array, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values), 0);
  EXPECT_EQ(values[5], 6.5);
  EXPECT_EQ(values[0], 1.0);
  H5Sclose(array_space);
  H5Dclose(array);
  EXPECT_GE(H5Fclose(file), 0);
}

TEST(StoreRoundTrip, ManyRowsSpanSeveralChunks) {
  ScratchDir dir;
  const std::string path = dir.file("results.h5");
  {
    auto store = open_for_append(path);
    auto run = store->begin_run("sweep");
    Table& t = run->table("points", {{"i", ColumnType::u64, ""}, {"x", ColumnType::f64, "s"}});
    for (std::uint64_t i = 0; i < 2500; ++i) t.append({i, static_cast<double>(i) / 7});
    run->finish(RunStatus::complete);
  }
  const TableData data = read_table(path, "000001", "points");
  ASSERT_EQ(data.rows.size(), 2500u);
  for (std::uint64_t i = 0; i < 2500; ++i) {
    ASSERT_EQ(std::get<std::uint64_t>(data.rows[i][0]), i);
    ASSERT_EQ(std::get<double>(data.rows[i][1]), static_cast<double>(i) / 7);
  }
}

TEST(StoreRoundTrip, NonFiniteDoublesSurvive) {
  ScratchDir dir;
  const std::string path = dir.file("results.h5");
  {
    auto run = open_for_append(path)->begin_run("x");
    Table& t = run->table("t", {{"v", ColumnType::f64, ""}});
    t.append({std::numeric_limits<double>::quiet_NaN()});
    t.append({-std::numeric_limits<double>::infinity()});
    run->finish(RunStatus::complete);
  }
  const TableData data = read_table(path, "000001", "t");
  ASSERT_EQ(data.rows.size(), 2u);
  EXPECT_TRUE(std::isnan(std::get<double>(data.rows[0][0])));
  EXPECT_EQ(std::get<double>(data.rows[1][0]), -std::numeric_limits<double>::infinity());
}

TEST(StoreRoundTrip, RunDroppedWithoutFinishIsMarkedFailed) {
  ScratchDir dir;
  const std::string path = dir.file("results.h5");
  open_for_append(path)->begin_run("collectives");  // store and run destroyed at once
  const auto runs = list_runs(path);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].attr_string("status"), "failed");
  EXPECT_NE(runs[0].attr_string("error"), "");
  EXPECT_NE(runs[0].attr_string("end_time"), "");
}

TEST(StoreRoundTrip, BadRowsAreRefusedAndLeaveTheTableAsItWas) {
  ScratchDir dir;
  const std::string path = dir.file("results.h5");
  {
    auto run = open_for_append(path)->begin_run("x");
    Table& t = run->table("t", {{"op", ColumnType::str, "", 4}, {"n", ColumnType::i64, ""}});  // fixed-length, 4 bytes
    t.append({std::string("abcd"), std::int64_t{1}});
    try {
      t.append({std::string("abcde"), std::int64_t{2}});
      ADD_FAILURE() << "a 5-byte string fit a 4-byte column";
    } catch (const RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find("column 'op'"), std::string::npos) << e.what();
    }
    EXPECT_THROW(t.append({std::string("ab"), 2.0}), RuntimeError);               // f64 for i64
    EXPECT_THROW(t.append({std::string("ab")}), RuntimeError);                    // too few values
    EXPECT_EQ(&run->table("t", t.columns()), &t);                                 // same table again
    EXPECT_THROW(run->table("t", {{"n", ColumnType::i64, ""}}), RuntimeError);    // other columns
    EXPECT_THROW(run->table("a/b", {{"n", ColumnType::i64, ""}}), RuntimeError);  // not a plain name
    run->finish(RunStatus::complete);
  }
  const TableData data = read_table(path, "000001", "t");
  ASSERT_EQ(data.rows.size(), 1u);
  EXPECT_EQ(std::get<std::string>(data.rows[0][0]), "abcd");
}

// HDF5 locks files and refuses to reopen for writing a file this process still holds
// read-only; readers close everything, so a report then a new run in one process work.
// Labels grow with the search (a split string of 81 bytes once overflowed an 80-byte
// column after the whole search had run): string columns have no width to outgrow.
TEST(StoreRoundTrip, StringsOfAnyLengthRoundTrip) {
  ScratchDir dir;
  const std::string path = dir.file("results.h5");
  const std::string long_label(5000, 'x');
  const std::string split = "dp2 tp32 pp2 cp16 ring ep1 vpp2 m1024 b1 interleaved sp zero1 recompute=selective";
  const std::string utf8 = "caf\xc3\xa9 \xe2\x80\x94 ok";
  {
    auto run = open_for_append(path)->begin_run("x");
    Table& t = run->table("t", {{"label", ColumnType::str}, {"n", ColumnType::i64, ""}});
    t.append({long_label, std::int64_t{1}});
    t.append({split, std::int64_t{2}});
    t.append({std::string(""), std::int64_t{3}});
    t.append({utf8, std::int64_t{4}});
    run->finish(RunStatus::complete);
  }
  const TableData data = read_table(path, "000001", "t");
  ASSERT_EQ(data.rows.size(), 4u);
  EXPECT_EQ(data.columns[0].str_bytes, 0u);  // read back as variable-length
  EXPECT_EQ(std::get<std::string>(data.rows[0][0]), long_label);
  EXPECT_EQ(std::get<std::string>(data.rows[1][0]), split);
  EXPECT_EQ(std::get<std::string>(data.rows[2][0]), "");
  EXPECT_EQ(std::get<std::string>(data.rows[3][0]), utf8);
}

// Files written before string columns were variable-length hold fixed-length ones: they
// read back as stored, width included, and a value longer than such a column is refused.
TEST(StoreRoundTrip, FixedLengthStringColumnsStillReadAndAreChecked) {
  ScratchDir dir;
  const std::string path = dir.file("results.h5");
  {
    auto run = open_for_append(path)->begin_run("x");
    Table& t = run->table("t", {{"op", ColumnType::str, "", 16}, {"n", ColumnType::i64, ""}});
    t.append({std::string("all_reduce"), std::int64_t{1}});
    EXPECT_THROW(t.append({std::string(17, 'y'), std::int64_t{2}}), RuntimeError);
    run->finish(RunStatus::complete);
  }
  const TableData data = read_table(path, "000001", "t");
  ASSERT_EQ(data.rows.size(), 1u);
  EXPECT_EQ(data.columns[0].str_bytes, 16u);
  EXPECT_EQ(std::get<std::string>(data.rows[0][0]), "all_reduce");
}

// HDF5's strings end at a NUL byte, so text holding one would come back cut short.
TEST(StoreRoundTrip, TextWithANulByteIsRefused) {
  ScratchDir dir;
  const std::string path = dir.file("results.h5");
  auto run = open_for_append(path)->begin_run("x");
  Table& t = run->table("t", {{"label", ColumnType::str}});
  try {
    t.append({std::string("a\0b", 3)});
    ADD_FAILURE() << "a NUL byte was stored";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("NUL byte"), std::string::npos) << e.what();
  }
  run->finish(RunStatus::complete);
}

TEST(StoreRoundTrip, ReaderThenWriterInOneProcess) {
  ScratchDir dir;
  const std::string path = dir.file("results.h5");
  write_first_run(path);
  ASSERT_EQ(list_runs(path).size(), 1u);
  ASSERT_EQ(read_table(path, "000001", "results").rows.size(), 3u);
  auto store = open_for_append(path);
  auto run = store->begin_run("again");
  Table& t = run->table("t", {{"n", ColumnType::i64, ""}});
  t.append({std::int64_t{7}});
  // A reader while the writer is open sees what was flushed so far.
  const auto runs = list_runs(path);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].attr_string("status"), "running");
  EXPECT_EQ(read_table(path, "000002", "t").rows.size(), 1u);
  t.append({std::int64_t{8}});
  run->finish(RunStatus::complete);
  run.reset();
  store.reset();
  EXPECT_EQ(read_table(path, "000002", "t").rows.size(), 2u);
  EXPECT_NO_THROW(check_appendable(path));
}

TEST(StoreRoundTrip, ReadingMissingRunsAndTablesNamesThem) {
  ScratchDir dir;
  const std::string path = dir.file("results.h5");
  write_first_run(path);
  try {
    read_table(path, "000009", "results");
    ADD_FAILURE() << "no error for a missing run";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("no run '000009'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("the file holds run 000001"), std::string::npos) << e.what();
  }
  try {
    read_table(path, "000001", "nope");
    ADD_FAILURE() << "no error for a missing table";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("no table 'nope' (tables: results)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_table(path, "000001", "params"), UsageError);  // a group, not a table
}

}  // namespace
}  // namespace ibt::store
