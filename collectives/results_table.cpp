#include "collectives/results_table.hpp"

#include <optional>
#include <vector>

#include "core/text_wrap.hpp"

namespace ibt::suites {
namespace {

using Align = TextTable::Align;

// The columns of one half (out-of-place or in-place), in printf widths.
constexpr std::size_t kHalfColumns = 6;
constexpr std::size_t kIdColumns = 7;

// Like nccl-tests: two decimals while small, whole microseconds once large.
std::string format_time(double us) { return fixed(us, us < 10000 ? 2 : 0); }

void add_cells(std::vector<std::string>& cells, const std::optional<Measurement>& m) {
  if (!m) {
    cells.insert(cells.end(), {"n/a", "", "", "", "", ""});
    return;
  }
  cells.insert(cells.end(),
               {format_time(m->time_us), format_time(m->p50_us), format_time(m->p99_us), fixed(m->algbw_GBps, 2),
                fixed(m->busbw_GBps, 2), m->checked ? std::to_string(m->wrong) : "N/A"});
}

}  // namespace

ResultsTable::ResultsTable(bool wide, std::size_t max_bytes, int ranks) {
  // Wide, the widths ibt's printf always used; by default size, count and group as wide as
  // the run needs, so the first line of a size fits 120 columns up to 10 GB.
  const std::size_t digits = std::to_string(max_bytes).size();
  table_.add_column({"op", Align::left, "", 14});
  table_.add_column({"scope", Align::left, "", 5});
  table_.add_column({"group", Align::right, "(rks)", wide ? 5u : std::to_string(ranks).size()});
  table_.add_column({"size", Align::right, "(B)", wide ? 12 : digits});
  table_.add_column({"count", Align::right, "(elements)", wide ? 11 : digits});
  table_.add_column({"type", Align::left, "", 8});
  table_.add_column({"redop", Align::left, "", 5});
  for (std::size_t half = 0; half < 2; ++half) {
    // The in-place half: the second line of a size when the budget asks for one.
    TextTable::Column time("time", Align::right, "(us)", 9);
    if (half) time.breaking_under(kIdColumns);
    table_.add_column(time);
    table_.add_column({"p50", Align::right, "(us)", 9});
    table_.add_column({"p99", Align::right, "(us)", 9});
    table_.add_column({"algbw", Align::right, "(GB/s)", 7});
    table_.add_column({"busbw", Align::right, "(GB/s)", 7});
    table_.add_column({"#wrong", Align::right, "", 6});
  }
  style_.header_indent = "# ";
  style_.indent = "  ";
  style_.gap = " ";
  style_.rule = false;
  style_.trim = false;  // as printf padded them, "n/a" rows included
  style_.width = wide ? 0 : kReportColumns;
}

void ResultsTable::print_header(std::FILE* out) const {
  // Which half is which, above the names: wide, where ibt always put the words.
  std::string groups = "#";
  const std::size_t out_of_place = table_.column_start(style_, kIdColumns);
  if (table_.breaks_lines(style_)) {
    groups.resize(out_of_place, ' ');
    groups += "out-of-place (in-place on the line below)";
  } else {
    groups.resize(out_of_place + 11, ' ');
    groups += "out-of-place";
    groups.resize(table_.column_start(style_, kIdColumns + kHalfColumns) + 10, ' ');
    groups += "in-place";
  }
  std::fprintf(out, "%s\n%s", groups.c_str(), table_.header_text(style_).c_str());
}

void ResultsTable::print_line(std::FILE* out, const SizeResult& r, const std::string& reduce_op) const {
  std::vector<std::string> cells = {std::string(r.op->name()),        std::string(to_string(r.scope)),
                                    std::to_string(r.group_size),     std::to_string(r.bytes),
                                    std::to_string(r.count),          std::string(to_string(r.dtype)),
                                    r.op->reduces() ? reduce_op : "-"};
  add_cells(cells, r.out_of_place);
  add_cells(cells, r.in_place);
  std::fputs(table_.row_text(cells, style_).c_str(), out);
  std::fflush(out);
}

}  // namespace ibt::suites
