#include "collectives/nccl_tests_format.hpp"

#include <cinttypes>
#include <cstdlib>

#include "core/errors.hpp"

namespace ibt::suites {

std::string nccl_tests_program(std::string_view op) {
  if (op == "all_to_all") return "alltoall_perf";
  if (op == "send_recv") return "sendrecv_perf";
  return std::string(op) + "_perf";  // all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf
}

std::string nccl_tests_type(DType t) {
  switch (t) {
    case DType::float32: return "float";
    case DType::float64: return "double";
    case DType::int32: return "int32";
    case DType::bfloat16: return "bfloat16";
    case DType::float16: return "half";
    case DType::fp8_e4m3: return "f8e4m3";
    case DType::fp8_e5m2: return "f8e5m2";
  }
  return "?";
}

std::string nccl_tests_number(double value, int width) {
  char buf[64];
  for (const char* fmt : {"%*.2f", "%*.1f", "%*.0f"})
    if (std::snprintf(buf, sizeof buf, fmt, width, value) <= width) return buf;
  std::snprintf(buf, sizeof buf, width >= 7 ? "%*.1e" : "%*.0e", width, value);
  return buf;
}

std::string nccl_tests_device_line(int rank, int pid, const std::string& host, int device, const std::string& bus,
                                   const std::string& name) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s", rank, 0, pid, host.c_str(),
                device, bus.c_str(), name.c_str());
  return buf;
}

double nccl_tests_min_bw(const char* env) {
  if (!env) return -1;
  char* end = nullptr;
  const double v = std::strtod(env, &end);
  if (end == env || *end != '\0')
    throw UsageError(std::string("NCCL_TESTS_MIN_BW must be a number of GB/s (got '") + env + "')");
  return v;
}

void NcclTestsPrinter::open(const SizeResult& r) {
  finish();
  block_ = {std::string(r.op->name()), std::string(to_string(r.scope))};
  program_ = nccl_tests_program(r.op->name());
  const NcclTestsRunFacts& f = facts_;
  if (!f.version_line.empty()) std::fprintf(out_, "%s\n", f.version_line.c_str());
  std::fprintf(out_, "# Collective test starting: %s\n", program_.c_str());
  std::fprintf(out_, "# ibt: op %s, scope %s, groups of %d ranks measured concurrently%s\n", block_->first.c_str(),
               block_->second.c_str(), r.group_size,
               r.op->name() == "ping_pong" ? " (ping_pong has no nccl-tests counterpart)" : "");
  const bool by_factor = f.step_bytes == 0;
  std::fprintf(out_,
               "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %ld(%s) warmup iters: %d iters: %d agg iters: "
               "%d validation: %d graph: %d unalign: %d\n",
               1, 1, f.min_bytes, f.max_bytes,
               by_factor ? static_cast<long>(f.step_factor) : static_cast<long>(f.step_bytes),
               by_factor ? "factor" : "bytes", f.warmup_iters, f.iters, f.agg_iters, f.check_iters, f.cuda_graph, 0);
  if (f.blocking) std::fprintf(out_, "# Blocking Enabled: wait and barrier after each inner iteration (-m) \n");
  std::fprintf(out_, "#\n");
  if (!f.device_lines.empty()) {
    std::fprintf(out_, "# Using devices\n");
    for (const auto& line : f.device_lines) std::fprintf(out_, "%s\n", line.c_str());
    std::fprintf(out_, "#\n");
  }
  const char* time = f.report_cputime ? "cputime" : "time";
  std::fprintf(out_, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n",
               "", "", "", "", "");
  std::fprintf(out_, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "size", "count",
               "type", "redop", "root", time, "algbw", "busbw", "#wrong", time, "algbw", "busbw", "#wrong", 0, "");
  std::fprintf(out_, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "(B)", "(elements)",
               "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", 0, "");
}

void NcclTestsPrinter::line(const SizeResult& r) {
  if (!block_ || block_->first != r.op->name() || block_->second != to_string(r.scope)) open(r);
  const std::string type = nccl_tests_type(r.dtype);
  const std::string redop = r.op->reduces() ? facts_.reduce_op : "none";
  const long root = r.op->name() == "broadcast" ? facts_.root : -1;  // -1: no root, as nccl-tests
  const std::size_t elems = r.bytes / size_of(r.dtype);
  std::fprintf(out_, "%12zu  %12zu  %8s  %6s  %6ld", r.bytes, elems, type.c_str(), redop.c_str(), root);
  for (const auto* m : {&r.out_of_place, &r.in_place}) {
    if (!*m) {
      std::fprintf(out_, "                                ");  // as nccl-tests for a placement not run
      continue;
    }
    const Measurement& x = **m;
    const std::string t = nccl_tests_number(x.time_us, 7), a = nccl_tests_number(x.algbw_GBps, 6),
                      b = nccl_tests_number(x.busbw_GBps, 6);
    if (x.checked)
      std::fprintf(out_, "  %7s  %6s  %6s  %6g", t.c_str(), a.c_str(), b.c_str(), static_cast<double>(x.wrong));
    else
      std::fprintf(out_, "  %7s  %6s  %6s    N/A", t.c_str(), a.c_str(), b.c_str());
    busbw_sum_ += x.busbw_GBps;
    ++busbw_count_;
    wrong_ += x.wrong;
  }
  std::fprintf(out_, "\n");
  std::fflush(out_);
}

void NcclTestsPrinter::finish() {
  if (!block_) return;
  const double avg = busbw_count_ ? busbw_sum_ / busbw_count_ : 0.0;
  std::fprintf(out_, "# %-20s : %d %s\n", "Out of bounds values", static_cast<int>(wrong_), wrong_ ? "FAILED" : "OK");
  // nccl-tests: FAILED below 90% of NCCL_TESTS_MIN_BW, OK at or above, nothing when unset.
  const bool below = facts_.min_bw >= 0 && avg < facts_.min_bw * 0.9;
  below_min_bw_ = below_min_bw_ || below;
  std::fprintf(out_, "# %-20s : %g %s\n", "Avg bus bandwidth", avg, facts_.min_bw < 0 ? "" : below ? "FAILED" : "OK");
  std::fprintf(out_, "#\n");
  std::fprintf(out_, "# Collective test concluded: %s\n", program_.c_str());
  std::fflush(out_);
  block_.reset();
  busbw_sum_ = 0;
  busbw_count_ = 0;
  wrong_ = 0;
}

}  // namespace ibt::suites
