// accept_reference: a reference is refused where it could pass unchecked: an unknown key
// outside `metrics` (a misspelt "jobs" section left the job open), an unknown key inside
// `job`, and job sizes beyond int (2^32+2 ranks once read as 2 and PASSed on 2 ranks).
#include <gtest/gtest.h>

#include <string>

#include "collectives/acceptance/accept_reference.hpp"
#include "core/errors.hpp"

namespace ibt::suites {
namespace {

const char* kMetric =
    R"({"op": "all_reduce", "scope": "world", "bytes": 8, "quantity": "time_us", "unit": "us", "target": 10})";

// A reference with `extra` (a JSON member list, may be empty) after "system".
std::string reference(const std::string& extra) {
  return R"({"system": "x", )" + extra + (extra.empty() ? "" : ", ") + R"("metrics": [)" + kMetric + "]}";
}

std::string refusal(const std::string& text) {
  try {
    parse_reference_text(text, "ref.json");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(AcceptReference, UnknownKeysAnywhereAreRefusedWithDidYouMean) {
  EXPECT_EQ(refusal(reference(R"("jobs": {"ranks": 4})")),
            "ref.json: field 'jobs': unknown field (did you mean 'job'?)");
  EXPECT_EQ(refusal(reference(R"("job": {"rank": 4})")),
            "ref.json: field 'job.rank': unknown field (did you mean 'ranks'?)");
  EXPECT_EQ(refusal(reference(R"("metric": [])")).rfind("ref.json: field 'metric': unknown field", 0), 0u);
  EXPECT_EQ(refusal(reference(R"("job": 4)")), "ref.json: field 'job': must be a JSON object");
  // What is known still reads.
  const AcceptReference r = parse_reference_text(
      reference(R"("description": "d", "derivation": "e", "job": {"ranks": 4, "domain_size": 2, "iters": 3,
                "warmup_iters": 1})"),
      "ref.json");
  EXPECT_EQ(r.job.ranks, 4);
  EXPECT_EQ(r.job.domain_size, 2);
  EXPECT_EQ(r.job.iters, 3);
  EXPECT_EQ(r.job.warmup_iters, 1);
}

TEST(AcceptReference, JobSizesBeyondIntAreRefused) {
  EXPECT_EQ(refusal(reference(R"("job": {"ranks": 4294967298})")),
            "ref.json: field 'job.ranks': out of range (4294967298 > 2147483647)");
  EXPECT_EQ(refusal(reference(R"("job": {"domain_size": 4294967298})")),
            "ref.json: field 'job.domain_size': out of range (4294967298 > 2147483647)");
  EXPECT_EQ(refusal(reference(R"("job": {"iters": 0})")), "ref.json: field 'job.iters': must be a whole number >= 1");
  EXPECT_EQ(refusal(reference(R"("job": {"ranks": -1})")), "ref.json: field 'job.ranks': must be a whole number >= 0");
  EXPECT_EQ(refusal(reference(R"("job": {"ranks": 2.5})")), "ref.json: field 'job.ranks': must be a whole number >= 0");
  EXPECT_EQ(parse_reference_text(reference(R"("job": {"ranks": 2147483647})"), "ref.json").job.ranks, 2147483647);
}

}  // namespace
}  // namespace ibt::suites
