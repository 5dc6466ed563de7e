// rescue_rows (rescued_rows.hpp): a failed append's rows as CSV beside the results file,
// else in $TMPDIR, strings quoted where CSV needs it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "reports/store/rescued_rows.hpp"
#include "tests/reports/store/test_support.hpp"

namespace ibt::store {
namespace {

using test::ScratchDir;

std::vector<KeptTable> two_tables() {
  return {{"collectives",
           {{"op", ColumnType::str}, {"bytes", ColumnType::u64, "B"}, {"time_us", ColumnType::f64, "us"}},
           {{std::string("all_reduce"), std::uint64_t{8}, 1.25}, {std::string("a,\"b\""), std::uint64_t{16}, 0.1}}},
          {"empty", {{"n", ColumnType::i64}}, {}}};
}

TEST(RescuedRows, WritesOneCsvPerTableBesideTheFile) {
  ScratchDir dir;
  const RescueResult r = rescue_rows(dir.file("results.h5"), "000002", two_tables());
  ASSERT_EQ(r.folder, dir.file("results.h5.run-000002.rescued")) << r.error;
  EXPECT_EQ(test::read_bytes(r.folder + "/collectives.csv"),
            "op,bytes,time_us\nall_reduce,8,1.25\n\"a,\"\"b\"\"\",16,0.1\n");
  EXPECT_FALSE(std::ifstream(r.folder + "/empty.csv").good()) << "a table without rows was written";
}

TEST(RescuedRows, FallsBackToTmpdirWhenTheFolderBesideCannotBeMade) {
  ScratchDir dir, tmp;
  test::write_bytes(dir.file("not-a-folder"), "x");  // the results "folder" is a file
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  setenv("TMPDIR", tmp.path().c_str(), 1);
  const RescueResult r = rescue_rows(dir.file("not-a-folder/results.h5"), "000001", two_tables());
  if (old)
    setenv("TMPDIR", saved.c_str(), 1);
  else
    unsetenv("TMPDIR");
  EXPECT_EQ(r.folder, tmp.file("results.h5.run-000001.rescued")) << r.error;
  EXPECT_NE(test::read_bytes(r.folder + "/collectives.csv").find("all_reduce,8,1.25"), std::string::npos);
}

// After a full disk the space beside the file is the failed-run record's: $TMPDIR first.
TEST(RescuedRows, AfterAFullDiskTmpdirComesFirst) {
  ScratchDir dir, tmp;
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  setenv("TMPDIR", tmp.path().c_str(), 1);
  const RescueResult r = rescue_rows(dir.file("results.h5"), "000003", two_tables(), /*disk_full=*/true);
  if (old)
    setenv("TMPDIR", saved.c_str(), 1);
  else
    unsetenv("TMPDIR");
  EXPECT_EQ(r.folder, tmp.file("results.h5.run-000003.rescued")) << r.error;
  EXPECT_FALSE(std::ifstream(dir.file("results.h5.run-000003.rescued/collectives.csv")).good());
}

TEST(RescuedRows, NothingToRescueWritesNothing) {
  ScratchDir dir;
  const RescueResult r = rescue_rows(dir.file("results.h5"), "000001", {{"empty", {{"n", ColumnType::i64}}, {}}});
  EXPECT_EQ(r.folder, "");
  EXPECT_EQ(r.error, "");
}

}  // namespace
}  // namespace ibt::store
