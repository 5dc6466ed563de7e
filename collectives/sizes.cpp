#include "collectives/sizes.hpp"

#include <cctype>
#include <cmath>
#include <string>

#include "core/errors.hpp"

namespace ibt {

std::vector<std::size_t> expand(const SizeSweep& s) {
  if (s.min_bytes == 0) throw UsageError("--min-bytes must be at least 1");
  if (s.min_bytes > s.max_bytes)
    throw UsageError("--min-bytes (" + std::to_string(s.min_bytes) + ") is larger than --max-bytes (" +
                     std::to_string(s.max_bytes) + ")");
  if (s.step_bytes == 0 && !(s.factor > 1.0))
    throw UsageError("--step-factor must be greater than 1 (or give --step-bytes)");
  std::vector<std::size_t> sizes;
  for (std::size_t b = s.min_bytes; b <= s.max_bytes;) {
    sizes.push_back(b);
    const std::size_t next =
        s.step_bytes ? b + s.step_bytes : static_cast<std::size_t>(std::ceil(static_cast<double>(b) * s.factor));
    if (next <= b) break;  // overflow
    b = next;
  }
  return sizes;
}

std::size_t parse_size(std::string_view text, std::string_view flag) {
  const auto bad = [&] {
    return UsageError(std::string(flag) + ": '" + std::string(text) + "' is not a size (examples: 8, 64K, 1M, 2G)");
  };
  if (text.empty()) throw bad();
  std::size_t i = 0;
  unsigned long long value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    value = value * 10 + static_cast<unsigned>(text[i] - '0');
    if (value > (1ull << 50)) throw bad();
    ++i;
  }
  if (i == 0) throw bad();
  std::string suffix(text.substr(i));
  for (auto& ch : suffix) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (suffix.empty() || suffix == "B") return value;
  if (suffix == "K" || suffix == "KB" || suffix == "KIB") return value << 10;
  if (suffix == "M" || suffix == "MB" || suffix == "MIB") return value << 20;
  if (suffix == "G" || suffix == "GB" || suffix == "GIB") return value << 30;
  throw bad();
}

std::string format_size(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && u < 4 && std::fmod(v, 1024) == 0) {
    v /= 1024;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.0f %s", v, units[u]);
  return buf;
}

}  // namespace ibt
