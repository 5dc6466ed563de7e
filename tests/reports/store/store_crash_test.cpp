// Crash safety: every append is flushed, so a writer killed without closing the file
// leaves every row it appended readable, and the file open for further runs.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "reports/store/store.hpp"
#include "tests/reports/store/test_support.hpp"

namespace ibt::store {
namespace {

const std::vector<Column> kColumns = {
    {"i", ColumnType::u64, ""}, {"x", ColumnType::f64, "us"}, {"label", ColumnType::str}};

Row row_number(std::uint64_t i) { return {i, i * 0.25, "row" + std::to_string(i)}; }

// What the parent expects to find after the child died having appended `rows` rows.
void expect_rows_survived(const std::string& path, std::uint64_t at_least) {
  const auto runs = list_runs(path);
  ASSERT_EQ(runs.size(), 1u);
  // Nobody lived to finish it: the file still says running, and readers see that its
  // writer (this test's child, now dead) is gone.
  EXPECT_EQ(runs[0].attr_string("status"), "interrupted");
  EXPECT_EQ(runs[0].attr_string("command_line"), "crash test");
  const TableData data = read_table(path, runs[0].id, "t");
  ASSERT_GE(data.rows.size(), at_least);
  for (std::uint64_t i = 0; i < data.rows.size(); ++i) ASSERT_EQ(data.rows[i], row_number(i)) << "row " << i;

  // The dead writer's lock is gone and the file takes another run.
  auto run = open_for_append(path)->begin_run("after");
  EXPECT_EQ(run->id(), "000002");
  run->finish(RunStatus::complete);
  EXPECT_EQ(list_runs(path).size(), 2u);
}

// The child appends `rows` rows, then dies the way `die` says, never closing anything.
int run_child_then_die(const std::string& path, std::uint64_t rows, void (*die)()) {
  const pid_t child = fork();
  if (child == 0) {
    auto store = open_for_append(path);
    auto run = store->begin_run("crash");
    run->set_attr("command_line", std::string("crash test"));
    Table& t = run->table("t", kColumns);
    for (std::uint64_t i = 0; i < rows; ++i) t.append(row_number(i));
    die();
    _exit(99);  // not reached
  }
  int status = 0;
  waitpid(child, &status, 0);
  return status;
}

TEST(StoreCrash, KilledWriterKeepsEveryAppendedRow) {
  test::ScratchDir dir;
  const std::string path = dir.file("results.h5");
  const int status = run_child_then_die(path, 37, [] { raise(SIGKILL); });
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
  expect_rows_survived(path, 37);
}

TEST(StoreCrash, ExitWithoutClosingKeepsEveryAppendedRow) {
  test::ScratchDir dir;
  const std::string path = dir.file("results.h5");
  const int status = run_child_then_die(path, 5, [] { _exit(0); });  // no destructors, no H5Fclose
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  expect_rows_survived(path, 5);
}

// Killed from outside while appending as fast as it can: every row the child reported
// as appended is there (at most the row in flight is lost), and the file opens.
TEST(StoreCrash, KilledMidStreamLosesAtMostTheRowInFlight) {
  test::ScratchDir dir;
  const std::string path = dir.file("results.h5");
  int acks[2];
  ASSERT_EQ(pipe(acks), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(acks[0]);
    auto store = open_for_append(path);
    auto run = store->begin_run("crash");
    run->set_attr("command_line", std::string("crash test"));
    Table& t = run->table("t", kColumns);
    for (std::uint64_t i = 0;; ++i) {
      t.append(row_number(i));
      const char c = 'a';
      if (write(acks[1], &c, 1) != 1) _exit(2);
    }
  }
  close(acks[1]);
  constexpr std::uint64_t kAcknowledged = 200;
  char c;
  for (std::uint64_t n = 0; n < kAcknowledged; ++n) ASSERT_EQ(read(acks[0], &c, 1), 1);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  close(acks[0]);
  ASSERT_TRUE(WIFSIGNALED(status));
  expect_rows_survived(path, kAcknowledged);
}

}  // namespace
}  // namespace ibt::store
