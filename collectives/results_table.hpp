#pragma once
// The text table `ibt collectives` prints: one line per size with the out-of-place and
// in-place measurements side by side, as nccl-tests prints them, plus scope and group.
// Wide (--wide) it is the 174-column layout ibt always printed; by default it fits 120
// columns, each size's in-place half on a second line under its out-of-place half.
#include <cstddef>
#include <cstdio>
#include <string>

#include "collectives/harness.hpp"
#include "core/text_table.hpp"

namespace ibt::suites {

class ResultsTable {
 public:
  // max_bytes and ranks: the largest size and group the run measures, which the default
  // layout's size, count and group columns are as wide as (the rows come one by one).
  ResultsTable(bool wide, std::size_t max_bytes, int ranks);

  void print_header(std::FILE* out) const;
  void print_line(std::FILE* out, const SizeResult& r, const std::string& reduce_op) const;

 private:
  TextTable table_;
  TextTable::Style style_;
};

}  // namespace ibt::suites
