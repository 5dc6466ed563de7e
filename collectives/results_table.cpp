#include "collectives/results_table.hpp"

namespace ibt::suites {
namespace {

// Like nccl-tests: two decimals while small, whole microseconds once large.
std::string format_time(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, us < 10000 ? "%.2f" : "%.0f", us);
  return buf;
}

void print_half(std::FILE* out, const std::optional<Measurement>& m) {
  if (!m) {
    std::fprintf(out, " %9s %9s %9s %7s %7s %6s", "n/a", "", "", "", "", "");
    return;
  }
  std::string wrong = m->checked ? std::to_string(m->wrong) : "N/A";
  std::fprintf(out, " %9s %9s %9s %7.2f %7.2f %6s", format_time(m->time_us).c_str(), format_time(m->p50_us).c_str(),
               format_time(m->p99_us).c_str(), m->algbw_GBps, m->busbw_GBps, wrong.c_str());
}

}  // namespace

void print_table_header(std::FILE* out) {
  std::fprintf(out, "#%79s%s\n", "", "out-of-place                                        in-place");
  std::fprintf(out, "# %-14s %-5s %5s %12s %11s %-8s %-5s %9s %9s %9s %7s %7s %6s %9s %9s %9s %7s %7s %6s\n", "op",
               "scope", "group", "size", "count", "type", "redop", "time", "p50", "p99", "algbw", "busbw", "#wrong",
               "time", "p50", "p99", "algbw", "busbw", "#wrong");
  std::fprintf(out, "# %-14s %-5s %5s %12s %11s %-8s %-5s %9s %9s %9s %7s %7s %6s %9s %9s %9s %7s %7s %6s\n", "", "",
               "(rks)", "(B)", "(elements)", "", "", "(us)", "(us)", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)",
               "(us)", "(GB/s)", "(GB/s)", "");
}

void print_table_line(std::FILE* out, const SizeResult& r, const std::string& reduce_op) {
  std::fprintf(out, "  %-14s %-5s %5d %12zu %11zu %-8s %-5s", std::string(r.op->name()).c_str(),
               std::string(to_string(r.scope)).c_str(), r.group_size, r.bytes, r.count,
               std::string(to_string(r.dtype)).c_str(), r.op->reduces() ? reduce_op.c_str() : "-");
  print_half(out, r.out_of_place);
  print_half(out, r.in_place);
  std::fprintf(out, "\n");
  std::fflush(out);
}

}  // namespace ibt::suites
