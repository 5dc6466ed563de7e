#pragma once
// `ibt collectives --output-format nccl-tests`: the text nccl-tests prints (src/util.cu in
// NVIDIA/nccl-tests: the same header lines, column widths and number formats, the
// "# Out of bounds values" and "# Avg bus bandwidth" summary lines), so scripts written
// for nccl-tests logs read ibt's output unchanged. Each (op, scope) is one block, as if
// one nccl-tests binary (all_reduce_perf ...) had run: a log of several ops reads like
// nccl-tests logs concatenated. ibt's extras (scope, p50/p99) appear only in comments.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "collectives/harness.hpp"

namespace ibt::suites {

// nccl-tests' names: the test binary for an op ("all_reduce_perf"), a dtype ("float",
// "half", "bfloat16", "f8e4m3" ...).
std::string nccl_tests_program(std::string_view op);
std::string nccl_tests_type(DType t);
// getFloatStr of nccl-tests: value in `width` characters, fewer decimals as it grows.
std::string nccl_tests_number(double value, int width);

struct NcclTestsRunFacts {
  std::size_t min_bytes = 0, max_bytes = 0, step_bytes = 0;
  double step_factor = 2;
  int warmup_iters = 0, iters = 0, agg_iters = 1, check_iters = 1, cuda_graph = 0, blocking = 0;
  bool report_cputime = false;
  std::string reduce_op;
  int root = 0;  // broadcast's root
  // "# nccl-tests version ..." (ibt's version and the NCCL or MPI library's), first line
  // of every block as nccl-tests >= 2.13 prints it.
  std::string version_line;
  // The "# Using devices" lines, one per rank: "#  Rank  0 Group  0 Pid   1234 on host device  0 [..] name".
  std::vector<std::string> device_lines;
  // NCCL_TESTS_MIN_BW (GB/s; < 0 unset): a block whose average bus bandwidth is below 90%
  // of it prints FAILED on its "# Avg bus bandwidth" line, as nccl-tests does.
  double min_bw = -1;
};

// nccl-tests' "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s" line.
std::string nccl_tests_device_line(int rank, int pid, const std::string& host, int device, const std::string& bus,
                                   const std::string& name);
// NCCL_TESTS_MIN_BW as nccl-tests reads it (atof); -1 when unset. A value that is not a
// number is refused (nccl-tests would silently read 0).
double nccl_tests_min_bw(const char* env);

class NcclTestsPrinter {
 public:
  NcclTestsPrinter(std::FILE* out, NcclTestsRunFacts facts) : out_(out), facts_(std::move(facts)) {}
  // One table line; opens a new block (header) when op or scope changes.
  void line(const SizeResult& r);
  // Closes the open block with nccl-tests' summary lines.
  void finish();
  NcclTestsRunFacts& facts() { return facts_; }
  // Any block below NCCL_TESTS_MIN_BW (nccl-tests then exits 1).
  bool below_min_bw() const { return below_min_bw_; }

 private:
  void open(const SizeResult& r);
  std::FILE* out_;
  NcclTestsRunFacts facts_;
  std::optional<std::pair<std::string, std::string>> block_;  // (op, scope)
  std::string program_;
  double busbw_sum_ = 0;
  int busbw_count_ = 0;
  std::uint64_t wrong_ = 0;
  bool below_min_bw_ = false;
};

}  // namespace ibt::suites
