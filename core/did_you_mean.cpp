// "Did you mean": the closest known name by edit distance (optimal string alignment).
#include "core/did_you_mean.hpp"

#include <algorithm>
#include <vector>

namespace ibt {

namespace {

// Edits between a and b, a swap of two neighbours counting as one ("modle" -> "model"): the
// optimal-string-alignment distance, the commonest typos being one slip or one swap.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

}  // namespace

std::string closest_name(const std::string& word, const std::vector<std::string>& known) {
  const size_t limit = word.size() <= 4 ? 1 : word.size() / 3;
  std::string best;
  size_t best_distance = limit + 1;
  for (const auto& k : known) {
    const size_t d = edit_distance(word, k);
    if (d < best_distance) best = k, best_distance = d;
  }
  return best;
}

std::string unknown_name_hint(const std::string& word, const std::vector<std::string>& known) {
  if (known.empty()) return "";
  const std::string close = closest_name(word, known);
  if (!close.empty()) return " (did you mean '" + close + "'?)";
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  return " (known: " + list + ")";
}

}  // namespace ibt
