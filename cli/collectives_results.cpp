// ibt collectives' results on rank 0: printed, stored (the collectives table and one row
// per group), slow groups named, summed for the summary lines.
#include "cli/collectives_results.hpp"

#include <algorithm>
#include <cstdio>

#include "collectives/group_outliers.hpp"
#include "collectives/results_table.hpp"
#include "collectives/sizes.hpp"
#include "core/text_table.hpp"
#include "reports/tables/collectives_table.hpp"

namespace ibt::suites {

tables::CollectiveRow collectives_row(const Measurement& m, const std::string& backend) {
  tables::CollectiveRow r;
  r.op = m.op;
  r.scope = m.scope;
  r.backend = backend;
  r.dtype = m.dtype;
  r.reduce_op = m.reduce_op;
  r.placement = to_string(m.placement);
  r.group_size = m.group_size;
  r.groups = m.groups;
  r.bytes = m.bytes;
  r.count = m.count;
  r.iters = m.iters;
  r.time_us = m.time_us;
  r.p50_us = m.p50_us;
  r.p99_us = m.p99_us;
  r.algbw_GBps = m.algbw_GBps;
  r.busbw_GBps = m.busbw_GBps;
  r.wrong = m.wrong;
  return r;
}

// "0-3" or "0,2,4": world ranks of a group.
std::string rank_list(const std::vector<int>& ranks) {
  if (ranks.empty()) return "";
  bool consecutive = true;
  for (std::size_t i = 1; i < ranks.size(); ++i) consecutive = consecutive && ranks[i] == ranks[i - 1] + 1;
  if (consecutive && ranks.size() > 1) return std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

// The distinct hosts of a group's ranks, in rank order.
std::string hosts_of(const std::vector<int>& ranks, const std::vector<std::string>& host_of_rank) {
  std::vector<std::string> seen;
  std::string out;
  for (int r : ranks) {
    const std::string h = r < static_cast<int>(host_of_rank.size()) ? host_of_rank[r] : "?";
    if (std::find(seen.begin(), seen.end(), h) != seen.end()) continue;
    seen.push_back(h);
    out += (out.empty() ? "" : ",") + h;
  }
  return out;
}

ResultsTable results_table(const CollectivesArgs& args, int ranks) {
  return ResultsTable(args.wide, parse_size(args.max_bytes, "--max-bytes"), ranks);
}

SizeResults::SizeResults(const CollectivesArgs& args, std::size_t outlier_bandwidth_from, const Backend& backend,
                         RunRecorder* recorder, std::vector<std::string> host_of_rank)
    : args_(args),
      outlier_bandwidth_from_(outlier_bandwidth_from),
      nccl_format_(args.output_format == "nccl-tests"),
      backend_(backend),
      recorder_(recorder),
      host_of_rank_(std::move(host_of_rank)),
      nccl_printer_(stdout, {parse_size(args.min_bytes, "--min-bytes"),
                             parse_size(args.max_bytes, "--max-bytes"),
                             parse_size(args.step_bytes, "--step-bytes"),
                             args.step_factor,
                             args.warmup,
                             args.iters,
                             args.backend_flags.agg_iters,
                             args.check,
                             args.cuda_graph,
                             args.blocking,
                             args.backend_flags.report_cputime == 1,
                             args.reduce_op,
                             args.root,
                             {},
                             {},
                             -1}),
      table_(results_table(args, static_cast<int>(host_of_rank_.size()))) {}

void SizeResults::on_size(const SizeResult& r) {
  if (nccl_format_)
    nccl_printer_.line(r);
  else
    table_.print_line(stdout, r, args_.reduce_op);
  for (const auto* m : {&r.out_of_place, &r.in_place}) {
    if (!*m) continue;
    summary_.add(**m);
    recorder_->append(collectives_row(**m, backend_.name()));
    record_groups(**m);
  }
}

// The summary lines below the table (rank 0); the wrong values counted.
std::uint64_t SizeResults::print_summary(bool checked) {
  if (nccl_format_) {
    nccl_printer_.finish();
  } else {
    const double min_bw = nccl_printer_.facts().min_bw;
    std::printf("#\n# Average bus bandwidth (GB/s, over sizes and placements):\n");
    // Collective, scope, average and the NCCL_TESTS_MIN_BW verdict (its own gap), at the
    // printf widths they always had, each line laid out on its own.
    using Align = TextTable::Align;
    TextTable averages;
    averages.add_column({"collective", Align::left, "", 14});
    averages.add_column({"scope", Align::left, "", 5});
    averages.add_column({"GB/s", Align::right, "", 10});
    averages.add_column(TextTable::Column("", Align::left).after(""));
    TextTable::Style style;
    style.indent = "#   ";
    style.gap = " ";
    style.header = false;
    for (const auto& key : summary_.order) {
      const auto& [sum, n] = summary_.busbw[key];
      const double avg = n ? sum / n : 0.0;
      const bool below = min_bw >= 0 && avg < min_bw * 0.9;
      below_min_bw_ = below_min_bw_ || below;
      const char* verdict = min_bw < 0 ? "" : below ? "  FAILED (NCCL_TESTS_MIN_BW)" : "  OK";
      std::printf("%s", averages.row_text({key.first, key.second, fixed(avg, 3), verdict}, style).c_str());
    }
  }
  if (outliers_ > 0)
    std::printf("# Outlier domains: %zu (listed on stderr; rows in table %s)\n", outliers_,
                tables::CollectiveGroupRow::kTable.data());
  std::printf("# Wrong values: %llu%s\n", static_cast<unsigned long long>(summary_.wrong),
              checked ? "" : " (checking was off)");
  return summary_.wrong;
}

// One row per group of the measurement; a group slower than the others is flagged.
void SizeResults::record_groups(const Measurement& m) {
  const auto slow = find_group_outliers(m.per_group, m.bytes, args_.outlier_threshold, outlier_bandwidth_from_);
  for (const auto& g : m.per_group) {
    const GroupOutlier* flagged = nullptr;
    for (const auto& o : slow)
      if (o.group == g.group) flagged = &o;
    const std::string hosts = hosts_of(g.world_ranks, host_of_rank_), ranks = rank_list(g.world_ranks);
    tables::CollectiveGroupRow row;
    row.op = m.op;
    row.scope = m.scope;
    row.dtype = m.dtype;
    row.placement = to_string(m.placement);
    row.bytes = m.bytes;
    row.group = g.group;
    row.ranks = ranks;
    row.hosts = hosts;
    row.time_us = g.time_us;
    row.busbw_GBps = g.busbw_GBps;
    row.outlier = flagged != nullptr;
    row.ratio_to_median = flagged ? flagged->ratio : 0.0;
    recorder_->append(row);
    if (flagged) {
      ++outliers_;
      std::fprintf(stderr, "# outlier: %s %s %zu B %s: %s %d (hosts %s; ranks %s) %s %.3g, %.2fx the median %.3g\n",
                   m.op.c_str(), m.scope.c_str(), m.bytes, std::string(to_string(m.placement)).c_str(),
                   m.scope == "intra" ? "domain" : "rail", g.group, hosts.c_str(), ranks.c_str(),
                   flagged->metric == "bandwidth" ? "busbw GB/s" : "time us", flagged->value, flagged->ratio,
                   flagged->median);
    }
  }
}

}  // namespace ibt::suites
