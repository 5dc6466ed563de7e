// The one "did you mean" rule: a slip or a swap of neighbours names the intended word, a
// word far from every known one names none.
#include "core/did_you_mean.hpp"

#include <gtest/gtest.h>

namespace ibt {
namespace {

TEST(DidYouMean, OneSwapOfNeighboursCountsAsOneEdit) {
  EXPECT_EQ(closest_name("modle", {"model", "topology", "gpus"}), "model");
  EXPECT_EQ(closest_name("projct", {"project", "crossover", "scaling"}), "project");
  EXPECT_EQ(closest_name("dgx-h10", {"dgx-a100", "dgx-h100", "dgx-h200"}), "dgx-h100");
}

TEST(DidYouMean, FarWordsNameNothingAndShortWordsAllowOneEdit) {
  EXPECT_EQ(closest_name("banana", {"model", "topology"}), "");
  EXPECT_EQ(closest_name("tp", {"pp", "dp"}), "pp");  // one edit: the first of equals
  EXPECT_EQ(closest_name("xyz", {"abc"}), "");
  EXPECT_EQ(unknown_name_hint("uper", {"upper", "lower"}), " (did you mean 'upper'?)");
  EXPECT_EQ(unknown_name_hint("zzz", {"upper", "lower"}), " (known: upper, lower)");
  EXPECT_EQ(unknown_name_hint("zzz", {}), "");
}

}  // namespace
}  // namespace ibt
