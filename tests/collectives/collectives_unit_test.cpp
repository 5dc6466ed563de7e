// Unit tests of the harness's pure parts: byte accounting, busbw factors, sweeps, dtype
// conversions, domains, checks and statistics.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <thread>

#include "collectives/check.hpp"
#include "collectives/collective.hpp"
#include "collectives/domains.hpp"
#include "collectives/harness.hpp"
#include "collectives/provenance.hpp"
#include "collectives/sizes.hpp"
#include "core/errors.hpp"
#include "core/stats.hpp"

namespace ibt {
namespace {

TEST(BusBandwidth, FactorsMatchNcclTests) {
  const int n = 8;
  EXPECT_DOUBLE_EQ(find_collective("all_reduce").bus_factor(n), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(find_collective("all_gather").bus_factor(n), 7.0 / 8);
  EXPECT_DOUBLE_EQ(find_collective("reduce_scatter").bus_factor(n), 7.0 / 8);
  EXPECT_DOUBLE_EQ(find_collective("all_to_all").bus_factor(n), 7.0 / 8);
  EXPECT_DOUBLE_EQ(find_collective("broadcast").bus_factor(n), 1.0);
  EXPECT_DOUBLE_EQ(find_collective("send_recv").bus_factor(n), 1.0);
  EXPECT_DOUBLE_EQ(find_collective("all_reduce").bus_factor(1), 0.0);
}

// The memory plan of a sweep: the largest measurement's send and receive buffers with
// their rotation pools, and the check copies; smaller messages rotate through at most
// --rotate-bytes (or one slot per timed call) and never plan more than that.
TEST(HarnessMemoryPlan, CountsTheLargestMeasurementsBuffersPoolsAndCheckCopies) {
  HarnessOptions opt;
  opt.ops = {&find_collective("all_gather")};
  opt.scopes = {Scope::world};
  opt.dtypes = {DType::float32};
  opt.sizes = {1024, 1u << 20};
  opt.placements = {Placement::out_of_place};
  opt.rotate_bytes = 0;
  const DomainLayout four = layout_by_block(4, 0, 4);
  // all_gather of 1 MiB on 4 ranks: receives 1 MiB, sends 256 KiB; checked on the host.
  const double buffers = (1u << 20) + (1u << 18);
  HostMemoryPlan plan = plan_host_memory(opt, four, true);
  EXPECT_DOUBLE_EQ(plan.bytes, 2 * buffers);
  EXPECT_NE(plan.what.find("all_gather"), std::string::npos) << plan.what;
  EXPECT_NE(plan.what.find("1048576 B"), std::string::npos) << plan.what;
  EXPECT_DOUBLE_EQ(plan_host_memory(opt, four, false).bytes, buffers);  // device buffers: the check copies only
  opt.check = false;
  EXPECT_DOUBLE_EQ(plan_host_memory(opt, four, false).bytes, 0);
  // A 64 MiB rotation pool for 1 KiB messages holds one slot per timed call (20), never more.
  opt.check = true;
  opt.sizes = {1024};
  opt.rotate_bytes = 64u << 20;
  plan = plan_host_memory(opt, four, true);
  EXPECT_DOUBLE_EQ(plan.bytes, 20.0 * 1024 + 20.0 * 256 + 1024 + 256);
}

TEST(ByteAccounting, AllGatherCountsTheGatheredOutput) {
  const OpShape s = find_collective("all_gather").shape(1 << 20, 4, 4);
  EXPECT_EQ(s.count, (1u << 20) / 16);
  EXPECT_EQ(s.send_elems, s.count);
  EXPECT_EQ(s.recv_elems, 4 * s.count);
  EXPECT_EQ(s.bytes, 1u << 20);
}

TEST(ByteAccounting, ReduceScatterCountsTheWholeInput) {
  const OpShape s = find_collective("reduce_scatter").shape(1 << 20, 4, 2);
  EXPECT_EQ(s.send_elems, 4 * s.count);
  EXPECT_EQ(s.recv_elems, s.count);
  EXPECT_EQ(s.bytes, s.send_elems * 2);
}

TEST(ByteAccounting, RoundsDownToWholeElementsPerRank) {
  // 1000 B of float32 over 3 ranks: 83 elements each, 996 B.
  const OpShape s = find_collective("all_to_all").shape(1000, 3, 4);
  EXPECT_EQ(s.count, 83u);
  EXPECT_EQ(s.bytes, 996u);
  EXPECT_EQ(find_collective("all_gather").shape(8, 3, 4).bytes, 0u);  // less than one per rank
  EXPECT_EQ(find_collective("all_reduce").shape(10, 3, 4).bytes, 8u);
}

TEST(ByteAccounting, PingPongReportsHalfTheRoundTrip) {
  EXPECT_EQ(find_collective("ping_pong").time_divisor(), 2.0);
  EXPECT_EQ(find_collective("ping_pong").required_group_size(), 2);
}

TEST(Collectives, ParseListsAndRejectUnknownNames) {
  EXPECT_EQ(parse_collectives("all").size(), 7u);
  EXPECT_EQ(parse_collectives("all_reduce,ping_pong").size(), 2u);
  try {
    parse_collectives("all_reduce,allreduce");
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown op 'allreduce'"), std::string::npos);
  }
}

TEST(Sizes, GeometricSweepIncludesBothEnds) {
  EXPECT_EQ(expand({8, 64, 2.0, 0}), (std::vector<std::size_t>{8, 16, 32, 64}));
  EXPECT_EQ(expand({8, 100, 4.0, 0}), (std::vector<std::size_t>{8, 32}));
  EXPECT_EQ(expand({4, 20, 2.0, 8}), (std::vector<std::size_t>{4, 12, 20}));
}

TEST(Sizes, BadSweepsNameTheFlag) {
  EXPECT_THROW(expand({64, 8, 2.0, 0}), UsageError);
  EXPECT_THROW(expand({8, 64, 1.0, 0}), UsageError);
  EXPECT_THROW(expand({0, 64, 2.0, 0}), UsageError);
  try {
    expand({64, 8, 2.0, 0});
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--min-bytes"), std::string::npos);
  }
}

TEST(Sizes, ParseSuffixes) {
  EXPECT_EQ(parse_size("8", "-b"), 8u);
  EXPECT_EQ(parse_size("64K", "-b"), 65536u);
  EXPECT_EQ(parse_size("1m", "-b"), 1u << 20);
  EXPECT_EQ(parse_size("2GiB", "-b"), 2ull << 30);
  EXPECT_THROW(parse_size("12Q", "-b"), UsageError);
  EXPECT_THROW(parse_size("", "-b"), UsageError);
  EXPECT_THROW(parse_size("K", "-b"), UsageError);
}

TEST(DTypes, ParseNamesAndAliases) {
  EXPECT_EQ(parse_dtype("bf16"), DType::bfloat16);
  EXPECT_EQ(parse_dtype("float16"), DType::float16);
  EXPECT_EQ(parse_dtype_list("float32,int32").size(), 2u);
  EXPECT_THROW(parse_dtype("float8"), UsageError);
  EXPECT_EQ(parse_reduce_op("prod"), ReduceOp::prod);  // nccl-tests' -o set
  EXPECT_EQ(parse_reduce_op("avg"), ReduceOp::avg);
  EXPECT_EQ(parse_dtype("f8e5m2"), DType::fp8_e5m2);
  EXPECT_THROW(parse_reduce_op("mulsum"), UsageError);
  EXPECT_FALSE(mpi_supports(DType::fp8_e4m3));
}

TEST(DTypes, SixteenBitConversionsRoundToNearestEven) {
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f)), 1.0f);
  EXPECT_EQ(bf16_to_float(float_to_bf16(-3.5f)), -3.5f);
  // 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties to even gives 1.
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  EXPECT_EQ(fp16_to_float(float_to_fp16(65504.0f)), 65504.0f);
  EXPECT_EQ(fp16_to_float(float_to_fp16(1.0f + std::ldexp(1.0f, -11))), 1.0f);
  EXPECT_EQ(fp16_to_float(float_to_fp16(std::ldexp(1.0f, -24))), std::ldexp(1.0f, -24));  // subnormal
  EXPECT_TRUE(std::isinf(fp16_to_float(float_to_fp16(1e6f))));
  for (int v = -256; v <= 256; ++v) {
    EXPECT_EQ(bf16_to_float(float_to_bf16(static_cast<float>(v))), v);
    EXPECT_EQ(fp16_to_float(float_to_fp16(static_cast<float>(v))), v);
  }
}

TEST(DTypes, Fp8RoundTripsSmallIntegers) {
  for (int v = -16; v <= 16; ++v) {
    unsigned char b[1];
    store_element(b, 0, DType::fp8_e4m3, v);
    EXPECT_EQ(load_element(b, 0, DType::fp8_e4m3), v);
  }
}

TEST(Domains, BlocksAndLabels) {
  const DomainLayout l = layout_by_block(8, 5, 4);
  EXPECT_EQ(l.num_domains, 2);
  EXPECT_EQ(l.domain, 1);
  EXPECT_EQ(l.local_rank, 1);
  EXPECT_TRUE(l.uniform());
  EXPECT_THROW(layout_by_block(6, 0, 4), UsageError);
  // Labels need not be contiguous (ranks round-robin over hosts).
  const DomainLayout rr = layout_from_labels({0, 1, 0, 1}, 3, "test");
  EXPECT_EQ(rr.domain, 1);
  EXPECT_EQ(rr.local_rank, 1);
}

TEST(Domains, ScopeGroupsAreRailAligned) {
  const DomainLayout l = layout_by_block(8, 6, 4);  // domain 1, local 2
  EXPECT_EQ(group_key(Scope::intra, l).color, 1);
  EXPECT_EQ(group_key(Scope::inter, l).color, 2);  // with rank 2 of domain 0
  EXPECT_EQ(group_key(Scope::inter, l).key, 1);
  EXPECT_EQ(group_size(Scope::inter, l), 2);
  EXPECT_EQ(group_count(Scope::inter, l), 4);
  EXPECT_EQ(group_size(Scope::intra, l), 4);
}

TEST(Domains, InterScopeNeedsTwoDomains) {
  const DomainLayout one = layout_by_block(4, 0, 4);
  try {
    group_key(Scope::inter, one);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("at least 2 domains"), std::string::npos);
  }
  EXPECT_THROW(parse_scopes("intra,nvlink"), UsageError);
  EXPECT_EQ(parse_scopes("all").size(), 3u);
}

// Simulates each collective for every rank in one process (computing what a correct
// backend delivers) and checks that the checker accepts it and catches one bad value.
struct CheckerCase {
  std::string op;
  DType dtype;
  ReduceOp reduce_op;
  Placement placement;
};

std::vector<CheckerCase> checker_cases() {
  std::vector<CheckerCase> cases;
  for (const auto& op : all_collectives())
    for (DType t : {DType::float32, DType::bfloat16, DType::int32, DType::float16})
      for (ReduceOp r : {ReduceOp::sum, ReduceOp::max})
        for (Placement p : {Placement::out_of_place, Placement::in_place})
          if (op->supports(p) && (op->reduces() || r == ReduceOp::sum))
            cases.push_back({std::string(op->name()), t, r, p});
  return cases;
}

class CheckerTest : public ::testing::TestWithParam<CheckerCase> {};

TEST_P(CheckerTest, AcceptsCorrectResultsAndCountsEachWrongValue) {
  const auto& [name, dtype, reduce_op, placement] = GetParam();
  const Collective& op = find_collective(name);
  const int n = op.required_group_size() ? op.required_group_size() : 3;
  const OpShape shape = op.shape(4 * 1000 + 4, n, size_of(dtype));  // odd counts per rank
  for (int rank = 0; rank < n; ++rank) {
    CheckContext ctx{&op, shape, dtype, reduce_op, placement, rank, n, 0};
    HostImages img = make_inputs(ctx);
    const bool holds_result_already = name == "broadcast" && rank == 0;  // the root's own buffer
    if (!holds_result_already) {
      EXPECT_GT(count_wrong(ctx, img.recv.data()), 0u) << "the untouched output must not pass";
    }
    const std::size_t off = placement == Placement::in_place ? op.in_place_recv_offset(shape, rank) : 0;
    for (std::size_t i = 0; i < shape.recv_elems; ++i)
      store_element(img.recv.data(), off + i, dtype, op.expected(rank, i, n, shape, reduce_op, 0));
    EXPECT_EQ(count_wrong(ctx, img.recv.data()), 0u);
    store_element(img.recv.data(), off + shape.recv_elems / 2, dtype,
                  op.expected(rank, shape.recv_elems / 2, n, shape, reduce_op, 0) + 8);
    EXPECT_EQ(count_wrong(ctx, img.recv.data()), 1u);
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, CheckerTest, ::testing::ValuesIn(checker_cases()),
                         [](const ::testing::TestParamInfo<CheckerCase>& case_info) {
                           const auto& c = case_info.param;
                           return c.op + "_" + std::string(to_string(c.dtype)) + "_" +
                                  std::string(to_string(c.reduce_op)) + "_" + std::string(to_string(c.placement));
                         });

TEST(Checker, SumsAreAcceptedWithinTheStatedUlpBound) {
  // (n-1) ULPs of the result: 3 ranks, bf16 result 300 (ULP 2) accepts +-4, not 6.
  EXPECT_DOUBLE_EQ(accepted_error(300, DType::bfloat16, ReduceOp::sum, 3), 4.0);
  EXPECT_DOUBLE_EQ(accepted_error(300, DType::bfloat16, ReduceOp::max, 3), 0.0);
  EXPECT_DOUBLE_EQ(accepted_error(300, DType::int32, ReduceOp::sum, 3), 0.0);
  EXPECT_DOUBLE_EQ(accepted_error(300, DType::bfloat16, ReduceOp::prod, 3), 4.0);
  EXPECT_DOUBLE_EQ(accepted_error(300, DType::int32, ReduceOp::prod, 3), 0.0);
  // prod and avg reduce the inputs as nccl-tests' -o prod / -o avg do.
  EXPECT_DOUBLE_EQ(reduce_inputs(5, 3, ReduceOp::prod), input_value(0, 5) * input_value(1, 5) * input_value(2, 5));
  EXPECT_DOUBLE_EQ(reduce_inputs(5, 3, ReduceOp::avg), reduce_inputs(5, 3, ReduceOp::sum) / 3);
}

TEST(Stats, QuantilesInterpolateLikeNumpy) {
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4, 5}, 0.99), 4.96);
  EXPECT_DOUBLE_EQ(quantile({7}, 0.99), 7.0);
  EXPECT_DOUBLE_EQ(mean({1, 2, 3}), 2.0);
}

TEST(Provenance, EnvironmentAllowListKeepsOnlyCommunicationVariables) {
  std::string a = "NCCL_DEBUG=INFO", b = "AWS_SECRET_ACCESS_KEY=x", c = "UCX_TLS=sm", d = "HOME=/root",
              e = "SLURM_JOB_ID=42";
  char* env[] = {a.data(), b.data(), c.data(), d.data(), e.data(), nullptr};
  const auto kept = allowed_environment(env);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].first, "NCCL_DEBUG");
  EXPECT_EQ(kept[1].first, "SLURM_JOB_ID");
  EXPECT_EQ(kept[2], (std::pair<std::string, std::string>{"UCX_TLS", "sm"}));
}

// Under an allowed prefix, a secret-looking name is kept with its value redacted.
TEST(Provenance, SecretLookingNamesUnderAllowedPrefixesAreRedacted) {
  std::string a = "SLURM_JOB_TOKEN=t0p", b = "UCX_IB_PASSWORD=pw", c = "NCCL_API_KEY=k", d = "NCCL_IB_PKEY=3",
              e = "FI_Secret_thing=s", f = "NCCL_DEBUG=INFO";
  char* env[] = {a.data(), b.data(), c.data(), d.data(), e.data(), f.data(), nullptr};
  std::map<std::string, std::string> kept;
  for (const auto& [name, value] : allowed_environment(env)) kept[name] = value;
  EXPECT_EQ(kept.at("SLURM_JOB_TOKEN"), kRedacted);
  EXPECT_EQ(kept.at("UCX_IB_PASSWORD"), kRedacted);
  EXPECT_EQ(kept.at("NCCL_API_KEY"), kRedacted);
  EXPECT_EQ(kept.at("FI_Secret_thing"), kRedacted);
  EXPECT_EQ(kept.at("NCCL_IB_PKEY"), "3");
  EXPECT_EQ(kept.at("NCCL_DEBUG"), "INFO");
}

// Slow is not stalled: work that keeps calling progress() outlives its timeout; the
// handler fires only after a whole period without progress.
TEST(Watchdog, ProgressMovesTheDeadlineAndAStallStillFires) {
  std::atomic<int> fired{0};
  Watchdog dog([&](const std::string&, double) { ++fired; });
  dog.arm(0.2, "slow but progressing");
  for (int i = 0; i < 12; ++i) {  // 0.6 s, three timeouts long, a call every 50 ms
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    dog.progress();
  }
  EXPECT_EQ(fired.load(), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // no progress: at most T + T/10
  EXPECT_EQ(fired.load(), 1);
  dog.disarm();
}

// A stall is noticed T to T + min(1 s, T/10) after the last completed call, not after up to
// two periods (2 T) as when the deadline moved on by whole periods: what lets a stopped rank
// end the job within the documented T + 15 s at the default T of 60 s.
TEST(Watchdog, AStallIsNoticedWithinATenthOfThePeriodAfterTheLastCall) {
  std::atomic<bool> fired{false};
  Watchdog dog([&](const std::string&, double) { fired = true; });
  const auto armed = std::chrono::steady_clock::now();
  dog.arm(1.0, "stalls after a while");
  // Calls every 50 ms until just past the first deadline (1.05 s): moving on by whole
  // periods, the 1 s look sees progress, the 2 s look sees the last call, and the handler
  // fires at 3 s, 1.95 s after it.
  while (std::chrono::steady_clock::now() - armed < std::chrono::milliseconds(1050)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    dog.progress();
  }
  const auto last_call = std::chrono::steady_clock::now();
  while (!fired && std::chrono::steady_clock::now() - last_call < std::chrono::seconds(3))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const double after = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_call).count();
  ASSERT_TRUE(fired.load());
  EXPECT_GE(after, 0.9);  // one look (0.1 s) may have seen the last call late
  EXPECT_LT(after, 1.4);  // T + one look = 1.1 s, with room for a loaded machine
  dog.disarm();
}

TEST(Watchdog, WithoutProgressTheDeadlineIsFixed) {
  std::atomic<int> fired{0};
  Watchdog dog([&](const std::string&, double) { ++fired; });
  dog.arm(0.1, "stuck");
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(fired.load(), 1);
}

}  // namespace
}  // namespace ibt
