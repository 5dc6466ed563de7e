// nccl-tests compatibility of `ibt collectives`: its spellings and refusals, its number
// format, the lines it prints, and the rule that names a slow domain.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "collectives/group_outliers.hpp"
#include "collectives/nccl_tests_flags.hpp"
#include "collectives/nccl_tests_format.hpp"
#include "core/errors.hpp"

namespace ibt::suites {
namespace {

std::vector<std::string> spell(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return nccl_tests_spellings(static_cast<int>(argv.size()), argv.data());
}

std::string usage_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(NcclTestsFlags, LongNamesBecomeIbtNames) {
  EXPECT_EQ(spell({"collectives", "--minbytes", "8", "--maxbytes=1G", "--stepfactor", "4", "--datatype", "half",
                   "--agg_iters", "2", "--run_cycles=3", "--iters", "5"}),
            (std::vector<std::string>{"collectives", "--min-bytes", "8", "--max-bytes=1G", "--step-factor", "4",
                                      "--dtype", "half", "--agg-iters", "2", "--run-cycles=3", "--iters", "5"}));
}

TEST(NcclTestsFlags, UnsupportedFlagsAreRefusedWithTheReason) {
  EXPECT_NE(usage_error_of([] {
              spell({"collectives", "-y", "1"});
            }).find("--stream_null) is not supported"),
            std::string::npos);
  EXPECT_NE(usage_error_of([] {
              spell({"collectives", "--unalign=1"});
            }).find("-u) is not supported"),
            std::string::npos);
  EXPECT_NE(usage_error_of([] { spell({"collectives", "-J", "out.json"}); }).find("--out"), std::string::npos);
}

TEST(NcclTestsFlags, OldOpSpellingAndNcclTestsOpAreNotConfused) {
  // -t is nccl-tests' threads: a collective name there gets pointed at --op.
  EXPECT_NE(usage_error_of([] { spell({"collectives", "-t", "all_reduce"}); }).find("--op"), std::string::npos);
  EXPECT_EQ(spell({"collectives", "-t", "1"}).size(), 3u);
  // nccl-tests' --op is the reduction; in ibt --op names collectives.
  EXPECT_NE(usage_error_of([] { spell({"collectives", "--op", "prod"}); }).find("-o/--reduce-op"), std::string::npos);
  EXPECT_EQ(spell({"collectives", "--op", "all_reduce"})[2], "all_reduce");
}

TEST(NcclTestsFlags, BackendFlagsSayWhichBackendCannot) {
  BackendFlags f;
  EXPECT_NO_THROW(check_backend_flags(f, "mpi"));
  f.threads = 2;
  EXPECT_NE(usage_error_of([&] { check_backend_flags(f, "mpi"); }).find("not supported by the mpi backend"),
            std::string::npos);
  f = {};
  f.local_register = 1;
  EXPECT_NE(usage_error_of([&] { check_backend_flags(f, "mpi"); }).find("-R 1 is not supported by the mpi backend"),
            std::string::npos);
  f = {};
  f.agg_iters = 4;  // mpi: calls back to back
  EXPECT_NO_THROW(check_backend_flags(f, "mpi"));
  EXPECT_NE(usage_error_of([&] { check_backend_flags(f, "nccl"); }).find("nccl backend"), std::string::npos);
  f = {};
  f.gpus = 2;
  EXPECT_NE(usage_error_of([&] { check_backend_flags(f, "mpi"); }).find("-g 2"), std::string::npos);
}

TEST(NcclTestsFormat, NumbersAsNcclTestsPrintsThem) {
  EXPECT_EQ(nccl_tests_number(22.41, 7), "  22.41");
  EXPECT_EQ(nccl_tests_number(12345.678, 7), "12345.7");
  EXPECT_EQ(nccl_tests_number(1234567.0, 7), "1234567");
  EXPECT_EQ(nccl_tests_number(155.31, 6), "155.31");
  EXPECT_EQ(nccl_tests_number(1555.31, 6), "1555.3");
  EXPECT_EQ(nccl_tests_number(0.004, 6), "  0.00");
  EXPECT_EQ(nccl_tests_program("all_to_all"), "alltoall_perf");
  EXPECT_EQ(nccl_tests_program("all_reduce"), "all_reduce_perf");
  EXPECT_EQ(nccl_tests_type(DType::float16), "half");
  EXPECT_EQ(nccl_tests_type(DType::float32), "float");
}

// A line of ibt's nccl-tests output has nccl-tests' columns at nccl-tests' widths.
TEST(NcclTestsFlags, DashFIsExplainedNotUnrecognised) {
  const std::string why = usage_error_of([] { spell({"collectives", "-F", "1"}); });
  EXPECT_NE(why.find("not a flag of NVIDIA's nccl-tests"), std::string::npos) << why;
  EXPECT_NE(why.find("-G"), std::string::npos) << why;
  EXPECT_NE(why.find("--rotate-bytes"), std::string::npos) << why;
  EXPECT_NE(usage_error_of([] { spell({"collectives", "--cache_flush=1"}); }).find("rccl-tests"), std::string::npos);
}

TEST(NcclTestsFormat, MinBwIsReadAsNcclTestsReadsItAndRefusedWhenNotANumber) {
  EXPECT_EQ(nccl_tests_min_bw(nullptr), -1);
  EXPECT_EQ(nccl_tests_min_bw("150"), 150);
  EXPECT_EQ(nccl_tests_min_bw("0.5"), 0.5);
  EXPECT_NE(usage_error_of([] { nccl_tests_min_bw("fast"); }).find("NCCL_TESTS_MIN_BW"), std::string::npos);
}

TEST(NcclTestsFormat, DeviceLineHasNcclTestsLayout) {
  // As the sample log: "#  Rank  0 Group  0 Pid  41000 on     node-a device  0 [0000:18:00] NVIDIA H100 80GB HBM3".
  EXPECT_EQ(nccl_tests_device_line(0, 41000, "node-a", 0, "0000:18:00", "NVIDIA H100 80GB HBM3"),
            "#  Rank  0 Group  0 Pid  41000 on     node-a device  0 [0000:18:00] NVIDIA H100 80GB HBM3");
}

// One block below NCCL_TESTS_MIN_BW: "FAILED" on its Avg line (below 90% of the minimum),
// "OK" at 90% or more, as nccl-tests.
std::string printed_block(double busbw, double min_bw, bool* below) {
  const Collective& op = find_collective("all_reduce");
  SizeResult r{&op, Scope::world, DType::float32, 1024, 256, 2, {}, {}};
  Measurement m;
  m.time_us = 10;
  m.busbw_GBps = busbw;
  m.checked = true;
  r.out_of_place = m;
  std::FILE* f = std::tmpfile();
  NcclTestsRunFacts facts;
  facts.reduce_op = "sum";
  facts.min_bw = min_bw;
  facts.version_line = "# nccl-tests version ibt-test mpi-library=X";
  facts.device_lines = {nccl_tests_device_line(0, 1, "h", 0, "cpu", "host memory")};
  NcclTestsPrinter printer(f, facts);
  printer.line(r);
  printer.finish();
  *below = printer.below_min_bw();
  std::rewind(f);
  std::string text;
  for (int c; (c = std::fgetc(f)) != EOF;) text.push_back(static_cast<char>(c));
  std::fclose(f);
  return text;
}

TEST(NcclTestsFormat, MinBwFailsBelowNinetyPercentAsNcclTests) {
  bool below = false;
  std::string text = printed_block(80, 100, &below);
  EXPECT_TRUE(below);
  EXPECT_NE(text.find("# Avg bus bandwidth    : 80 FAILED\n"), std::string::npos) << text;
  text = printed_block(95, 100, &below);
  EXPECT_FALSE(below);
  EXPECT_NE(text.find("# Avg bus bandwidth    : 95 OK\n"), std::string::npos) << text;
  // Header order of nccl-tests >= 2.13: version, test starting, nThread, Using devices.
  const auto version = text.find("# nccl-tests version"), start = text.find("# Collective test starting"),
             nthread = text.find("# nThread"), devices = text.find("# Using devices\n#  Rank  0 Group  0");
  EXPECT_LT(version, start);
  EXPECT_LT(start, nthread);
  EXPECT_LT(nthread, devices);
  EXPECT_NE(devices, std::string::npos) << text;
}

TEST(NcclTestsFormat, RowMatchesTheHandWrittenLogLayout) {
  const Collective& op = find_collective("all_reduce");
  SizeResult r{&op, Scope::world, DType::float32, 134217728, 33554432, 8, {}, {}};
  Measurement m;
  m.time_us = 1512.3;
  m.algbw_GBps = 88.75;
  m.busbw_GBps = 155.31;
  m.checked = true;
  r.out_of_place = m;
  m.time_us = 1509.8;
  m.algbw_GBps = 88.90;
  m.busbw_GBps = 155.57;
  r.in_place = m;
  std::FILE* f = std::tmpfile();
  NcclTestsRunFacts facts;
  facts.reduce_op = "sum";
  NcclTestsPrinter printer(f, facts);
  printer.line(r);
  printer.finish();
  std::rewind(f);
  std::string text;
  for (int c; (c = std::fgetc(f)) != EOF;) text.push_back(static_cast<char>(c));
  std::fclose(f);
  // The same row in tests/collectives/data/nccl_tests_all_reduce_8gpu.log.
  EXPECT_NE(
      text.find("\n   134217728      33554432     float     sum      -1  1512.30   88.75  155.31       0  1509.80   "
                "88.90  155.57       0\n"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   "
                "algbw   busbw  #wrong \n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 155.44 \n"), std::string::npos) << text;
  EXPECT_NE(text.find("# Collective test starting: all_reduce_perf\n"), std::string::npos);
}

TEST(GroupOutliers, NamesTheSlowDomainByP2pMatrixRule) {
  std::vector<Measurement::GroupTime> groups;
  for (int g = 0; g < 4; ++g) groups.push_back({g, {2 * g, 2 * g + 1}, 10.0, 50.0});
  groups[2].time_us = 30.0;  // 3x slower
  groups[2].busbw_GBps = 50.0 / 3;
  // Small size: judged by time (above median x 1.5).
  auto small = find_group_outliers(groups, 1024, 0.5, 64 << 10);
  ASSERT_EQ(small.size(), 1u);
  EXPECT_EQ(small[0].group, 2);
  EXPECT_EQ(small[0].metric, "latency");
  EXPECT_DOUBLE_EQ(small[0].ratio, 3.0);
  // Large size: judged by busbw (below median x 0.5).
  auto large = find_group_outliers(groups, 1 << 20, 0.5, 64 << 10);
  ASSERT_EQ(large.size(), 1u);
  EXPECT_EQ(large[0].metric, "bandwidth");
  // Within the threshold nothing is named; one group has no peers to compare with.
  groups[2].time_us = 14.0;
  EXPECT_TRUE(find_group_outliers(groups, 1024, 0.5, 64 << 10).empty());
  EXPECT_TRUE(find_group_outliers({groups[0]}, 1024, 0.5, 64 << 10).empty());
}

}  // namespace
}  // namespace ibt::suites
