// Foreign, damaged and unreachable files are refused with a message naming the path and
// the problem, and a refused file is left byte-for-byte as it was.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include "core/errors.hpp"
#include "reports/store/store.hpp"
#include "tests/reports/store/test_support.hpp"

namespace ibt::store {
namespace {

using test::digest_of;
using test::ScratchDir;

// The UsageError message `action` throws; fails the test when it throws nothing.
std::string usage_error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UsageError";
  return "";
}

void make_valid_results_file(const std::string& path) {
  auto run = open_for_append(path)->begin_run("collectives");
  Table& t = run->table("t", {{"n", ColumnType::i64, ""}, {"x", ColumnType::f64, "us"}});
  for (int i = 0; i < 50; ++i) t.append({std::int64_t{i}, i * 0.5});
  run->finish(RunStatus::complete);
}

void make_foreign_hdf5_file(const std::string& path, const char* schema_attribute) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hsize_t n = 4;
  const hid_t space = H5Screate_simple(1, &n, nullptr);
  const hid_t data = H5Dcreate2(file, "measurements", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const double values[4] = {1, 2, 3, 4};
  EXPECT_GE(H5Dwrite(data, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values), 0);
  if (schema_attribute) {
    const hid_t scalar = H5Screate(H5S_SCALAR);
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, H5T_VARIABLE);
    const hid_t attr = H5Acreate2(file, "ibt_schema", type, scalar, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(H5Awrite(attr, type, &schema_attribute), 0);
    H5Aclose(attr);
    H5Tclose(type);
    H5Sclose(scalar);
  }
  H5Dclose(data);
  H5Sclose(space);
  ASSERT_GE(H5Fclose(file), 0);
}

// Every entry point refuses `path` with `expected` in the message, and the file's bytes
// do not change.
void expect_refused_untouched(const std::string& path, const std::string& expected, bool readable_refused = true) {
  const auto before = digest_of(path);
  const std::string append = usage_error_of([&] { open_for_append(path); });
  EXPECT_NE(append.find(path), std::string::npos) << append;
  EXPECT_NE(append.find(expected), std::string::npos) << append;
  EXPECT_EQ(usage_error_of([&] { check_appendable(path); }), append);
  if (readable_refused) {
    const std::string read = usage_error_of([&] { list_runs(path); });
    EXPECT_NE(read.find(expected), std::string::npos) << read;
  }
  EXPECT_EQ(digest_of(path), before) << path << " changed";
}

TEST(StoreRefusal, TextFile) {
  ScratchDir dir;
  const std::string path = dir.file("notes.h5");
  test::write_bytes(path, "op,bytes,time\nall_reduce,8,1.5\n");
  expect_refused_untouched(path, "is not an HDF5 file");
}

TEST(StoreRefusal, EmptyFile) {
  ScratchDir dir;
  const std::string path = dir.file("empty.h5");
  test::write_bytes(path, "");
  expect_refused_untouched(path, "is an empty file");
}

TEST(StoreRefusal, HDF5FileWithoutIbtSchema) {
  ScratchDir dir;
  const std::string path = dir.file("foreign.h5");
  make_foreign_hdf5_file(path, nullptr);
  expect_refused_untouched(path, "not an ibt results file (no 'ibt_schema' attribute");
}

TEST(StoreRefusal, HDF5FileOfAnotherSchema) {
  ScratchDir dir;
  const std::string path = dir.file("other.h5");
  make_foreign_hdf5_file(path, "someone-elses-results");
  expect_refused_untouched(path, "is not an ibt results file");
}

TEST(StoreRefusal, NewerSchemaVersion) {
  ScratchDir dir;
  const std::string path = dir.file("future.h5");
  make_valid_results_file(path);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t attr = H5Aopen(file, "ibt_schema_version", H5P_DEFAULT);
  const long long future = kSchemaVersion + 1;
  ASSERT_GE(H5Awrite(attr, H5T_NATIVE_LLONG, &future), 0);
  H5Aclose(attr);
  ASSERT_GE(H5Fclose(file), 0);
  expect_refused_untouched(path, "schema version " + std::to_string(future) + ", newer than this ibt reads");
}

TEST(StoreRefusal, TruncatedCopyOfAValidFile) {
  ScratchDir dir;
  const std::string valid = dir.file("valid.h5"), path = dir.file("truncated.h5");
  make_valid_results_file(valid);
  const std::string bytes = test::read_bytes(valid);
  test::write_bytes(path, bytes.substr(0, bytes.size() / 2));
  expect_refused_untouched(path, "is a damaged or truncated HDF5 file");
}

TEST(StoreRefusal, CorruptedSuperblock) {
  ScratchDir dir;
  const std::string path = dir.file("corrupted.h5");
  make_valid_results_file(path);
  std::string bytes = test::read_bytes(path);
  for (std::size_t i = 8; i < 32; ++i) bytes[i] = '\xff';  // the signature stays, the rest is garbage
  test::write_bytes(path, bytes);
  expect_refused_untouched(path, "is a damaged or truncated HDF5 file");
}

TEST(StoreRefusal, Directory) {
  ScratchDir dir;
  const std::string path = dir.file("results.h5");
  ASSERT_TRUE(std::filesystem::create_directory(path));
  for (const auto& action : std::vector<std::function<void()>>{
           [&] { open_for_append(path); }, [&] { check_appendable(path); }, [&] { list_runs(path); }}) {
    const std::string message = usage_error_of(action);
    EXPECT_NE(message.find(path + ": is a directory"), std::string::npos) << message;
  }
  EXPECT_TRUE(std::filesystem::is_empty(path));
}

TEST(StoreRefusal, MissingParentDirectory) {
  ScratchDir dir;
  const std::string path = dir.file("no-such-dir/results.h5");
  const std::string message = usage_error_of([&] { open_for_append(path); });
  EXPECT_NE(message.find("folder '" + dir.file("no-such-dir") + "' does not exist: create it (mkdir -p " +
                         dir.file("no-such-dir") + ") or choose another --out"),
            std::string::npos)
      << message;
  EXPECT_EQ(usage_error_of([&] { check_appendable(path); }), message);
  EXPECT_NE(usage_error_of([&] { list_runs(path); }).find("no such file"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(StoreRefusal, ParentIsAFile) {
  ScratchDir dir;
  test::write_bytes(dir.file("plain"), "x");
  const std::string message = usage_error_of([&] { open_for_append(dir.file("plain/results.h5")); });
  EXPECT_NE(message.find("'" + dir.file("plain") + "' is not a folder: choose another --out"), std::string::npos)
      << message;
}

TEST(StoreRefusal, CheckAppendableCreatesNothing) {
  ScratchDir dir;
  EXPECT_NO_THROW(check_appendable(dir.file("results.h5")));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

// Runs `action` in a child process without root's privileges (as nobody when this test
// runs as root, which ignores permission bits) and returns the UsageError it threw.
std::string usage_error_unprivileged(const std::function<void()>& action) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(3);
    int status = 1;  // no exception
    std::string message;
    try {
      action();
    } catch (const UsageError& e) {
      message = e.what();
      status = 0;
    } catch (const std::exception& e) {
      message = e.what();
      status = 2;
    }
    if (write(fds[1], message.data(), message.size()) < 0) status = 4;
    _exit(status);
  }
  close(fds[1]);
  std::string message;
  char buffer[512];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) message.append(buffer, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child did not get a UsageError: " << message;
  return message;
}

TEST(StoreRefusal, UnwritableDirectory) {
  ScratchDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);  // let the unprivileged child in
  const std::string readonly = dir.file("readonly");
  ASSERT_EQ(mkdir(readonly.c_str(), 0555), 0);
  const std::string path = readonly + "/results.h5";
  const std::string message = usage_error_unprivileged([&] { open_for_append(path); });
  EXPECT_NE(message.find("permission denied: user "), std::string::npos) << message;
  EXPECT_NE(message.find(" cannot create files in folder '" + readonly + "'"), std::string::npos) << message;
  EXPECT_EQ(usage_error_unprivileged([&] { check_appendable(path); }), message);
  EXPECT_TRUE(std::filesystem::is_empty(readonly));
}

TEST(StoreRefusal, UnwritableFile) {
  ScratchDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  const std::string path = dir.file("results.h5");
  make_valid_results_file(path);
  ASSERT_EQ(chmod(path.c_str(), 0444), 0);
  const auto before = digest_of(path);
  const std::string message = usage_error_unprivileged([&] { open_for_append(path); });
  EXPECT_NE(message.find(path + ": is not writable"), std::string::npos) << message;
  EXPECT_EQ(digest_of(path), before);
  EXPECT_EQ(list_runs(path).size(), 1u);  // still readable
}

// HDF5's file lock keeps a second writer out while a run is writing; the refusal says so.
TEST(StoreRefusal, FileLockedByAnotherWriter) {
  ScratchDir dir;
  const std::string path = dir.file("results.h5");
  make_valid_results_file(path);
  int ready[2], release[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(release), 0);
  const pid_t child = fork();
  if (child == 0) {
    auto store = open_for_append(path);  // holds the lock
    char c = 'r';
    if (write(ready[1], &c, 1) != 1) _exit(2);
    if (read(release[0], &c, 1) < 0) _exit(3);
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  const std::string message = usage_error_of([&] { open_for_append(path); });
  EXPECT_NE(message.find("is locked by another process"), std::string::npos) << message;
  ASSERT_EQ(write(release[1], &c, 1), 1);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_NO_THROW(open_for_append(path));  // the lock went with the process
}

}  // namespace
}  // namespace ibt::store
