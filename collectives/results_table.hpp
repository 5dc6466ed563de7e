#pragma once
// The text table `ibt collectives` prints: one line per size with the out-of-place and
// in-place measurements side by side, as nccl-tests prints them, plus scope and group.
#include <cstdio>
#include <string>

#include "collectives/harness.hpp"

namespace ibt::suites {

void print_table_header(std::FILE* out);
void print_table_line(std::FILE* out, const SizeResult& r, const std::string& reduce_op);

}  // namespace ibt::suites
