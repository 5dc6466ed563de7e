// The one PP verdict rule (topologies/studies/verdict.hpp): its three outcomes at and
// around their boundaries, memory deciding when one side alone fits, and its words.
#include <gtest/gtest.h>

#include <limits>

#include "core/errors.hpp"
#include "topologies/studies/verdict.hpp"

namespace ibt::topo {
namespace {

PpVerdict both_fit(double gain, double u) { return pp_verdict({gain, u, true, true}, 0.05); }

TEST(Verdict, GainAgainstThresholdPlusMinusUncertainty) {
  // u = 3%: needed above 8%, not needed below 2%, within uncertainty between.
  EXPECT_EQ(both_fit(0.081, 0.03), PpVerdict::needed);
  EXPECT_EQ(both_fit(0.079, 0.03), PpVerdict::within_uncertainty);
  EXPECT_EQ(both_fit(0.06, 0.03), PpVerdict::within_uncertainty);  // the issue's +5.7-6.4% cells
  EXPECT_EQ(both_fit(0.021, 0.03), PpVerdict::within_uncertainty);
  EXPECT_EQ(both_fit(0.019, 0.03), PpVerdict::not_needed);
  EXPECT_EQ(both_fit(-0.2, 0.03), PpVerdict::not_needed);
  // On a boundary the evidence is not strictly past it: within uncertainty (threshold
  // and band exact in binary, so the sums are exact).
  EXPECT_EQ(pp_verdict({0.5, 0.25, true, true}, 0.25), PpVerdict::within_uncertainty);
  EXPECT_EQ(pp_verdict({0.0, 0.25, true, true}, 0.25), PpVerdict::within_uncertainty);
  // No band (u = 0): the threshold alone; exactly on it is neither.
  EXPECT_EQ(pp_verdict({0.2501, 0.0, true, true}, 0.25), PpVerdict::needed);
  EXPECT_EQ(pp_verdict({0.25, 0.0, true, true}, 0.25), PpVerdict::within_uncertainty);
  EXPECT_EQ(pp_verdict({0.2499, 0.0, true, true}, 0.25), PpVerdict::not_needed);
}

TEST(Verdict, MemoryDecidesWhenOneSideAloneFits) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(pp_verdict({inf, 0.5, false, true}, 0.05), PpVerdict::needed);
  EXPECT_EQ(pp_verdict({-1.0, 2.0, true, false}, 0.05), PpVerdict::not_needed);  // even with a huge band
  EXPECT_EQ(pp_verdict({0.0, 0.0, false, false}, 0.05), PpVerdict::nothing_fits);
}

TEST(Verdict, WordsRoundTripAndUnknownWordsAreRefused) {
  for (PpVerdict v : {PpVerdict::needed, PpVerdict::not_needed, PpVerdict::within_uncertainty, PpVerdict::nothing_fits})
    EXPECT_EQ(parse_verdict(verdict_text(v)), v);
  EXPECT_STREQ(verdict_text(PpVerdict::within_uncertainty), "within uncertainty");
  EXPECT_THROW(parse_verdict("yes"), RuntimeError);
}

}  // namespace
}  // namespace ibt::topo
