// why_not_creatable (core/output_path.hpp) on real folders: a writable one, a missing one, a
// file where a folder goes, /proc (a virtual file system: no new files), /sys as root (the
// kernel refuses root where access(2) would not), more free space asked than there is; and
// the probe leaves nothing behind.
#include "core/output_path.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace ibt {
namespace {

namespace fs = std::filesystem;

struct Scratch {
  fs::path dir;
  Scratch() {
    char name[] = "/tmp/ibt-output-path-XXXXXX";
    dir = mkdtemp(name);
  }
  ~Scratch() { fs::remove_all(dir); }
  std::string at(const std::string& name) const { return (dir / name).string(); }
};

TEST(OutputPath, WritableFolderAndNothingLeft) {
  Scratch s;
  EXPECT_EQ(why_not_creatable(s.at("x.h5"), "--out"), "");
  EXPECT_EQ(why_not_creatable(s.at("x.h5"), "--out", 1), "");
  EXPECT_TRUE(fs::is_empty(s.dir)) << "the probe file was left";
}

TEST(OutputPath, MissingFolderSaysMkdir) {
  Scratch s;
  EXPECT_EQ(why_not_creatable(s.at("a/b/x.xml"), "--junit"), "folder '" + s.at("a/b") +
                                                                 "' does not exist: create it (mkdir -p " +
                                                                 s.at("a/b") + ") or choose another --junit");
}

TEST(OutputPath, FileWhereAFolderGoes) {
  Scratch s;
  std::ofstream(s.at("plain")) << "x";
  EXPECT_EQ(why_not_creatable(s.at("plain/x.h5"), "--out"),
            "'" + s.at("plain") + "' is not a folder: choose another --out");
  EXPECT_EQ(why_not_creatable(s.at("plain/sub/x.h5"), "--out"),
            "a part of folder '" + s.at("plain/sub") + "' is a file, not a folder: choose another --out");
}

TEST(OutputPath, VirtualFileSystemIsNotDiskFull) {
  // statvfs reads 0 bytes free on /proc: the free-space check alone called it "disk full".
  EXPECT_EQ(why_not_creatable("/proc/x.h5", "--out", 64 << 20),
            "folder '/proc' takes no new files (a virtual file system such as /proc): choose another --out");
}

TEST(OutputPath, RootIsRefusedUnderSys) {
  if (geteuid() != 0) GTEST_SKIP() << "not root: /sys refuses every user, the point is that it refuses root";
  const std::string why = why_not_creatable("/sys/x.xml", "--junit");
  EXPECT_EQ(why.rfind("permission denied: user ", 0), 0u) << why;
  EXPECT_NE(why.find("(uid 0) cannot create files in folder '/sys'"), std::string::npos) << why;
}

TEST(OutputPath, LessRoomThanNeeded) {
  Scratch s;
  const std::string why = why_not_creatable(s.at("x.json"), "--write", 1ull << 62);
  EXPECT_EQ(why.rfind("disk full: the file system of folder '" + s.dir.string() + "' has ", 0), 0u) << why;
  EXPECT_NE(why.find("--write needs at least 4611686018427387904: free space or choose another --write"),
            std::string::npos)
      << why;
  EXPECT_TRUE(fs::is_empty(s.dir));
}

TEST(OutputPath, BareFileNameIsTheWorkingFolder) {
  Scratch s;
  const fs::path was = fs::current_path();
  fs::current_path(s.dir);
  EXPECT_EQ(why_not_creatable("x.h5", "--out"), "");
  fs::current_path(was);
}

}  // namespace
}  // namespace ibt
