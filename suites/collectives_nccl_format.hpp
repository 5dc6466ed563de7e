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
};

class NcclTestsPrinter {
 public:
  NcclTestsPrinter(std::FILE* out, NcclTestsRunFacts facts) : out_(out), facts_(std::move(facts)) {}
  // One table line; opens a new block (header) when op or scope changes.
  void line(const SizeResult& r);
  // Closes the open block with nccl-tests' summary lines.
  void finish();

 private:
  void open(const SizeResult& r);
  std::FILE* out_;
  NcclTestsRunFacts facts_;
  std::optional<std::pair<std::string, std::string>> block_;  // (op, scope)
  std::string program_;
  double busbw_sum_ = 0;
  int busbw_count_ = 0;
  std::uint64_t wrong_ = 0;
};

}  // namespace ibt::suites
