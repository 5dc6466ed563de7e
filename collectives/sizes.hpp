#pragma once
// Message-size sweeps, as nccl-tests' -b/-e/-f/-i: from min to max, multiplying by a
// factor (geometric) or adding a step (arithmetic). Both ends are included when reached.
#include <cstddef>
#include <string_view>
#include <vector>

namespace ibt {

struct SizeSweep {
  std::size_t min_bytes = 8;
  std::size_t max_bytes = 1 << 20;
  double factor = 2.0;  // used when step_bytes == 0
  std::size_t step_bytes = 0;
};

// Throws UsageError naming the flag when the sweep is empty or would not advance.
std::vector<std::size_t> expand(const SizeSweep& sweep);
// Parses "8", "64K", "1M", "2G" (binary multiples: K = 1024), throwing UsageError
// with the flag name on bad input.
std::size_t parse_size(std::string_view text, std::string_view flag);
// "8 B", "64 KiB", "1 MiB"
std::string format_size(std::size_t bytes);

}  // namespace ibt
