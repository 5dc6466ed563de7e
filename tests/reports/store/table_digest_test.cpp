// The digest of a table's rows (table_digest.hpp): a byte changed in a stored number or
// string is named on read and refuses an append, leaving the file as it was; a digest
// one row short (a writer stopped between a row and its digest) still reads.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstring>

#include "core/errors.hpp"
#include "reports/store/store.hpp"
#include "reports/store/table_digest.hpp"
#include "tests/reports/store/test_support.hpp"

namespace ibt::store {
namespace {

using test::ScratchDir;

constexpr double kMarker = 12345.678901234;  // a value whose 8 bytes occur once in the file

void write_run(const std::string& path) {
  auto run = open_for_append(path)->begin_run("x");
  Table& t = run->table("t", {{"label", ColumnType::str}, {"value", ColumnType::f64, "us"}});
  t.append({std::string("first-label-MARKER"), 1.5});
  t.append({std::string("second"), kMarker});
  t.append({std::string("third"), 2.5});
  run->finish(RunStatus::complete);
}

// Changes one byte of the first occurrence of `needle` in the file.
void flip_byte_of(const std::string& path, const std::string& needle) {
  std::string bytes = test::read_bytes(path);
  const auto at = bytes.find(needle);
  ASSERT_NE(at, std::string::npos) << "the file does not hold the bytes to damage";
  ASSERT_EQ(bytes.find(needle, at + 1), std::string::npos) << "the bytes to damage occur twice";
  bytes[at + 1] = static_cast<char>(bytes[at + 1] ^ 0x10);
  test::write_bytes(path, bytes);
}

std::string marker_bytes() {
  std::string b(8, '\0');
  std::memcpy(b.data(), &kMarker, 8);  // little-endian hosts only, as the file type is
  return b;
}

void expect_damaged(const std::string& path) {
  try {
    read_table(path, "000001", "t");
    ADD_FAILURE() << "a damaged table was read";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("/runs/000001/t is damaged"), std::string::npos) << e.what();
  }
  const test::Digest before = test::digest_of(path);
  EXPECT_THROW(open_for_append(path), UsageError);
  EXPECT_EQ(test::digest_of(path), before) << "the refused append changed the file";
}

TEST(TableDigest, IntactTablesReadAndAppend) {
  ScratchDir dir;
  const std::string path = dir.file("results.h5");
  write_run(path);
  write_run(path);
  EXPECT_EQ(read_table(path, "000001", "t").rows.size(), 3u);
  EXPECT_EQ(read_table(path, "000002", "t").rows.size(), 3u);
}

TEST(TableDigest, AChangedNumberIsNamedAndRefusesAppends) {
  ScratchDir dir;
  const std::string path = dir.file("results.h5");
  write_run(path);
  flip_byte_of(path, marker_bytes());
  expect_damaged(path);
}

TEST(TableDigest, AChangedStringIsNamedAndRefusesAppends) {
  ScratchDir dir;
  const std::string path = dir.file("results.h5");
  write_run(path);
  flip_byte_of(path, "first-label-MARKER");  // in HDF5's heap of variable-length strings
  expect_damaged(path);
}

// Sets the digest attributes to those of the table's first `rows` rows.
void set_digest_of_first_rows(const std::string& path, std::size_t rows) {
  TableData data = read_table(path, "000001", "t");
  RowDigest digest;
  for (std::size_t r = 0; r < rows; ++r) digest.add(data.rows[r]);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t dataset = H5Dopen2(file, "/runs/000001/t", H5P_DEFAULT);
  ASSERT_GE(dataset, 0);
  const std::int64_t values[2] = {std::int64_t{digest.crc()}, digest.rows()};
  const char* names[2] = {kDigestAttribute, kDigestRowsAttribute};
  for (int i = 0; i < 2; ++i) {
    const hid_t attr = H5Aopen(dataset, names[i], H5P_DEFAULT);
    ASSERT_GE(attr, 0);
    EXPECT_GE(H5Awrite(attr, H5T_NATIVE_INT64, &values[i]), 0);
    H5Aclose(attr);
  }
  H5Dclose(dataset);
  H5Fclose(file);
}

TEST(TableDigest, ADigestOneRowShortIsAWriterStoppedBetweenRowAndDigest) {
  ScratchDir dir;
  const std::string path = dir.file("results.h5");
  write_run(path);
  set_digest_of_first_rows(path, 2);
  EXPECT_EQ(read_table(path, "000001", "t").rows.size(), 3u);
  set_digest_of_first_rows(path, 1);  // two rows short: not a stopped writer
  expect_damaged(path);
}

}  // namespace
}  // namespace ibt::store
