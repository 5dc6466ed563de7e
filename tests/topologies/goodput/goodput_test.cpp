// Checkpoint interval and goodput: Young's and Daly's formulas against hand-computed
// values and the values Daly's paper prints, a seeded Monte-Carlo of the failure
// process against the closed form, the reliability section of topology files, and the
// goodput of a projection.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "core/errors.hpp"
#include "models/plan/accounting.hpp"
#include "models/plan/model_file.hpp"
#include "topologies/goodput/failure_model.hpp"
#include "topologies/goodput/failure_sim.hpp"
#include "topologies/goodput/goodput.hpp"
#include "topologies/projection/projection_goodput.hpp"
#include "topologies/studies/crossover.hpp"

namespace ibt::topo {
namespace {

TEST(Goodput, YoungIsSqrtTwoDeltaM) {
  // delta = 300 s, M = 1 day: sqrt(2 * 300 * 86400) = sqrt(51,840,000) = 7200 s.
  EXPECT_DOUBLE_EQ(young_interval(300, 86400), 7200);
  EXPECT_DOUBLE_EQ(young_interval(0, 86400), 0);
}

TEST(Goodput, DalyEstimateByHand) {
  // delta = 5 min, M = 24 h = 1440 min: sqrt(2*5*1440) = 120; delta/2M = 1/576,
  // sqrt = 1/24; 120 * (1 + 1/72 + 1/5184) - 5 = 120 + 1.66667 + 0.02315 - 5 = 116.68981.
  EXPECT_NEAR(daly_interval(5, 1440), 116.68981, 1e-5);
  // delta >= 2M: the estimate is M itself (Daly, 2006).
  EXPECT_DOUBLE_EQ(daly_interval(10, 5), 5);
  EXPECT_DOUBLE_EQ(daly_interval(10, 4), 4);
}

TEST(Goodput, DalyEstimateMatchesThePapersFigures) {
  // Daly (2006), captions of Figs. 3-5 (R = 10 min, delta = 5 min, T_s = 500 h): "the
  // new model predicts tau_opt = 117 min" for M = 24 h, 57 min for M = 6 h and 9.1 min
  // for M = 15 min. The paper rounds; so do these bounds.
  EXPECT_NEAR(daly_interval(5, 24 * 60), 117, 0.5);
  EXPECT_NEAR(daly_interval(5, 6 * 60), 57, 0.5);
  EXPECT_NEAR(daly_interval(5, 15), 9.1, 0.05);
}

TEST(Goodput, LambertW) {
  EXPECT_NEAR(lambert_w0(0), 0, 1e-15);
  EXPECT_NEAR(lambert_w0(-std::exp(-1.0)), -1, 1e-7);
  for (double x : {-0.36, -0.3, -0.2, -0.1, -1e-3, -1e-9}) {
    const double w = lambert_w0(x);
    EXPECT_NEAR(w * std::exp(w), x, 1e-14 + 1e-12 * std::fabs(x)) << x;
  }
  EXPECT_THROW(lambert_w0(0.5), UsageError);
}

TEST(Goodput, ExactOptimumMinimisesTheWallTime) {
  for (double xi : {1e-4, 1e-2, 0.3, 1.5}) {
    const double M = 3600, delta = xi * M, R = 120;
    const double tau = optimal_interval_exact(delta, M);
    const double best = expected_wall_time(1e6, tau, delta, R, M);
    for (double f : {0.99, 0.999, 1.001, 1.01})
      EXPECT_GT(expected_wall_time(1e6, tau * f, delta, R, M), best) << xi << " " << f;
  }
}

TEST(Goodput, DalyRefinementIsCloseToTheExactOptimumAndBetterThanYoung) {
  // The check of the refinement against the paper: its own exact minimiser of T_w
  // (Lambert W form). Relative error of the series: -1e-8 at delta/M = 1e-4, -4e-4 at
  // 0.1, -1.8% at 1, -5.7% at 1.9 (computed with this code and independently in Python).
  for (double xi : {1e-4, 1e-3, 1e-2, 0.1, 0.5, 1.0, 1.9}) {
    const double exact = optimal_interval_exact(xi, 1);
    const double daly = (daly_interval(xi, 1) - exact) / exact;
    const double young = (young_interval(xi, 1) - exact) / exact;
    EXPECT_LT(std::fabs(daly), xi <= 0.1 ? 5e-4 : 0.06) << xi;
    EXPECT_LT(std::fabs(daly), std::fabs(young)) << xi;
  }
  EXPECT_NEAR(optimal_interval_exact(5, 1440), 116.690073, 1e-5);
  EXPECT_NEAR(optimal_interval_exact(0, 1440), 0, 1e-6);  // free checkpoints: checkpoint always
}

TEST(Goodput, GoodputByHand) {
  // tau = 1 h, delta = 60 s, R = 300 s, M = 10 h:
  // T_w / T_s = M e^{R/M} (e^{(tau+delta)/M} - 1) / tau
  //           = 10 * e^{1/120} * (e^{0.1016667} - 1) = 10 * 1.0083682 * 0.1070146 = 1.0790992
  EXPECT_NEAR(expected_wall_time(7200, 3600, 60, 300, 36000), 2 * 3600 * 1.0790992, 2e-3);
  EXPECT_NEAR(goodput_exact(3600, 60, 300, 36000), 1 / 1.0790992, 1e-7);
  // First order: (1 - 3660/72000 - 300/36000) / (1 + 60/3600) = 0.9408333 / 1.0166667.
  EXPECT_NEAR(goodput_first_order(3600, 60, 300, 36000), 0.9254098, 1e-7);
  // Lost time: T_w - T_s - (T_s/tau) delta over 2 intervals.
  EXPECT_NEAR(expected_lost_time(7200, 3600, 60, 300, 36000), 7200 * 0.0790992 - 120, 2e-2);
  // No failures in the limit: goodput -> tau / (tau + delta).
  EXPECT_NEAR(goodput_exact(3600, 60, 0, 1e12), 3600.0 / 3660, 1e-6);
  // Checkpoints and restarts longer than the MTBF leave nothing in first order.
  EXPECT_EQ(goodput_first_order(3600, 60, 40000, 36000), 0.0);
  EXPECT_THROW(goodput_exact(0, 60, 300, 36000), UsageError);
  EXPECT_THROW(goodput_exact(3600, 60, 300, 0), UsageError);
}

// The Monte-Carlo walks a Poisson failure process drawn on the wall clock; its mean
// lost time must agree with Daly's closed form within 4 standard errors (a seeded
// run: the test is deterministic, and a wrong closed form or simulator fails it by
// many standard errors, see MonteCarloDetectsAWrongModel).
void expect_sim_matches(double solve, double tau, double delta, double R, double M, int trials, std::uint64_t seed) {
  FailureSimConfig c;
  c.solve = solve;
  c.interval = tau;
  c.checkpoint = delta;
  c.restart = R;
  c.mtbf = M;
  c.trials = trials;
  c.seed = seed;
  const FailureSimResult r = simulate_failures(c);
  const double lost = expected_lost_time(solve, tau, delta, R, M);
  const double wall = expected_wall_time(solve, tau, delta, R, M);
  SCOPED_TRACE("tau " + std::to_string(tau) + " delta " + std::to_string(delta) + " R " + std::to_string(R) + " M " +
               std::to_string(M));
  std::printf("  sim lost %.2f +- %.2f s (%d trials, %.2f failures/run), closed form %.2f s (%+.2f s.e.)\n",
              r.mean_lost, r.stderr_lost, r.trials, r.mean_failures, lost, (r.mean_lost - lost) / r.stderr_lost);
  ASSERT_GT(r.stderr_lost, 0);
  EXPECT_LT(std::fabs(r.mean_lost - lost), 4 * r.stderr_lost)
      << "sim " << r.mean_lost << " +- " << r.stderr_lost << ", closed form " << lost;
  EXPECT_LT(std::fabs(r.mean_wall - wall), 4 * r.stderr_wall);
  // The statistical error is small enough for the check to mean something.
  EXPECT_LT(r.stderr_lost, 0.05 * lost);
  EXPECT_GT(r.mean_failures, 1);
}

TEST(FailureSim, MeanLostTimeAgreesWithTheClosedForm) {
  // Rare failures (the usual regime): 100 intervals, M = 20 tau.
  expect_sim_matches(100 * 600, 600, 30, 300, 12000, 4000, 1);
  // Frequent failures, restarts often interrupted: M close to tau + delta + R.
  expect_sim_matches(20 * 100, 100, 20, 50, 150, 4000, 2);
  // At Daly's optimum for a Llama-3-like job: M = 6.19 h, delta = 6 s, R = 10 min.
  const double M = 6.19 * 3600, delta = 6, R = 600;
  const double tau = daly_interval(delta, M);
  expect_sim_matches(200 * tau, tau, delta, R, M, 3000, 3);
}

TEST(FailureSim, MonteCarloDetectsAWrongModel) {
  // Young's first-order accounting misjudges frequent failures badly; the simulation
  // must tell it apart from the exact form by far more than 4 standard errors.
  FailureSimConfig c;
  c.solve = 20 * 100;
  c.interval = 100;
  c.checkpoint = 20;
  c.restart = 50;
  c.mtbf = 150;
  c.trials = 4000;
  const FailureSimResult r = simulate_failures(c);
  const double first_order_wall = c.solve / goodput_first_order(100, 20, 50, 150);
  EXPECT_GT(std::fabs(r.mean_wall - first_order_wall), 10 * r.stderr_wall);
  c.solve = 1050;  // not a whole number of intervals
  EXPECT_THROW(simulate_failures(c), UsageError);
}

TEST(FailureModel, DgxH100ReliabilityFromTheLlama3Paper) {
  const Topology t = load_topology("dgx-h100");
  ASSERT_TRUE(t.reliability.has_value());
  // 419 unexpected interruptions in 54 days on 16,384 GPUs = 2,048 nodes.
  EXPECT_NEAR(t.reliability->node_mtbf_hours.get(), 54.0 * 24 * 2048 / 419, 0.05);
  EXPECT_EQ(t.reliability->devices_per_node.get(), 8);
  EXPECT_NEAR(t.reliability->checkpoint_write_GBps.get(), 2000.0 / 16384, 1e-4);
  const Source* s = t.find_source(t.reliability->restart_minutes.source);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->kind, SourceKind::assumption);  // no public figure: flagged as such
  const Topology back = parse_topology(to_json(t), "roundtrip");
  ASSERT_TRUE(back.reliability.has_value());
  EXPECT_EQ(back.reliability->node_mtbf_hours.get(), t.reliability->node_mtbf_hours.get());
}

std::string with_reliability(const std::string& section) {
  std::string text = to_json(load_topology("dgx-a100"));
  const size_t end = text.rfind('}');
  return text.substr(0, end) + ", \"reliability\": " + section + "}";
}

std::string error_of(const std::string& text) {
  try {
    parse_topology(text, "bad.json");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(FailureModel, MalformedReliabilityNamesTheField) {
  const std::string fig = R"({"value": 1, "unit": "x", "source": "ibt-efficiency"})";
  const std::string good = R"({"node_mtbf_hours": )" + fig + R"(, "devices_per_node": )" + fig +
                           R"(, "checkpoint_write_GBps": )" + fig + R"(, "restart_minutes": )" + fig + "}";
  EXPECT_NO_THROW(parse_topology(with_reliability(good), "ok.json"));

  std::string bad = good;
  bad.replace(bad.find(R"("value": 1)"), 10, R"("value": -3)");
  std::string e = error_of(with_reliability(bad));
  EXPECT_NE(e.find("bad.json"), std::string::npos) << e;
  EXPECT_NE(e.find("reliability.node_mtbf_hours.value"), std::string::npos) << e;

  e = error_of(with_reliability(R"({"node_mtbf_hours": )" + fig + "}"));
  EXPECT_NE(e.find("reliability.devices_per_node"), std::string::npos) << e;
  EXPECT_NE(e.find("missing"), std::string::npos) << e;

  bad = good;
  bad.insert(1, R"("mttr": 3, )");
  e = error_of(with_reliability(bad));
  EXPECT_NE(e.find("reliability.mttr"), std::string::npos) << e;

  bad = good;
  const size_t at = bad.find("ibt-efficiency");
  bad.replace(at, 14, "nowhere");
  e = error_of(with_reliability(bad));
  EXPECT_NE(e.find("reliability.node_mtbf_hours.source"), std::string::npos) << e;
}

TEST(FailureModel, FlagsOverrideAndMissingFiguresAreNotInvented) {
  const Topology h100 = load_topology("dgx-h100");
  FailureAssumptions a = failure_assumptions(h100, {});
  EXPECT_TRUE(a.complete());
  EXPECT_NE(a.node_mtbf_hours.origin.find("llama3-paper"), std::string::npos);
  FailureOverrides o;
  o.node_mtbf_hours = 1000;
  a = failure_assumptions(h100, o);
  EXPECT_EQ(*a.node_mtbf_hours.value, 1000);
  EXPECT_NE(a.node_mtbf_hours.origin.find("--node-mtbf-hours"), std::string::npos);

  // dgx-a100 has no reliability section: nothing is assumed.
  const Topology a100 = load_topology("dgx-a100");
  a = failure_assumptions(a100, {});
  EXPECT_NE(a.missing().find("no failure rate"), std::string::npos);
  const GoodputEstimate g = estimate_goodput(a, 64, 1e9, 1.0, 0.4);
  EXPECT_FALSE(g.computed);
  EXPECT_NE(describe_goodput(g).find("not computed: no failure rate"), std::string::npos);
  a = failure_assumptions(a100, o);
  EXPECT_NE(a.missing().find("--devices-per-node"), std::string::npos);

  FailureOverrides bad;
  bad.node_mtbf_hours = 0;
  try {
    failure_assumptions(a100, bad);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--node-mtbf-hours"), std::string::npos);
  }
  bad = {};
  bad.devices_per_node = 2.5;
  EXPECT_THROW(failure_assumptions(a100, bad), UsageError);
  bad = {};
  bad.restart_minutes = -1;
  EXPECT_THROW(failure_assumptions(a100, bad), UsageError);
}

TEST(FailureModel, JobMtbfAndEstimateByHand) {
  EXPECT_EQ(nodes_for(8192, 8), 1024);
  EXPECT_EQ(nodes_for(9, 8), 2);
  EXPECT_EQ(nodes_for(4, 8), 1);
  FailureOverrides o;
  o.node_mtbf_hours = 1024;  // 1024 h / 1024 nodes = 1 h job MTBF
  o.devices_per_node = 8;
  o.checkpoint_write_GBps = 1;
  o.restart_minutes = 5;
  const FailureAssumptions a = failure_assumptions(load_topology("dgx-a100"), o);
  // 18 GB per device at 1 GB/s: delta = 18 s; M = 3600 s; Young sqrt(2*18*3600) = 360 s.
  const GoodputEstimate g = estimate_goodput(a, 8192, 18e9, 10.0, 0.5);
  ASSERT_TRUE(g.computed) << g.why_not;
  EXPECT_EQ(g.nodes, 1024);
  EXPECT_DOUBLE_EQ(g.job_mtbf_s, 3600);
  EXPECT_DOUBLE_EQ(g.checkpoint_s, 18);
  EXPECT_DOUBLE_EQ(g.restart_s, 300);
  EXPECT_DOUBLE_EQ(g.young_s, 360);
  // Daly: 360 (1 + sqrt(1/400)/3 + 1/3600) - 18 = 360 + 6 + 0.1 - 18 = 348.1 -> 35 steps.
  EXPECT_NEAR(g.daly_s, 348.1, 1e-9);
  EXPECT_EQ(g.interval_steps, 35);
  EXPECT_DOUBLE_EQ(g.interval_s, 350);
  EXPECT_NEAR(g.goodput, goodput_exact(350, 18, 300, 3600), 1e-15);
  EXPECT_NEAR(g.goodput_mfu, 0.5 * g.goodput, 1e-15);
  // 86400 / 3600 failures a day; checkpoint writes take goodput x delta / tau of the wall time.
  const std::string text = describe_goodput(g);
  EXPECT_NE(text.find("24.00 failures per day"), std::string::npos) << text;
  char writes[64];
  std::snprintf(writes, sizeof writes, "checkpoint writes %.2f%%", 100 * g.goodput * 18 / 350);
  EXPECT_NE(text.find(writes), std::string::npos) << text;
  // Step longer than the interval: one checkpoint per step.
  EXPECT_EQ(estimate_goodput(a, 8192, 18e9, 1000.0, 0.5).interval_steps, 1);
}

TEST(FailureModel, CheckpointBytesAreWeightsAndOptimizerOverDp) {
  const auto m = models::load_model("llama3-8b");
  const models::Precision p = models::bf16_mixed_adam();  // 2 + 12 bytes saved per parameter
  const double total = models::count_parameters(m).total;
  models::ParallelSplit s;
  s.dp = 8;
  s.microbatches = 1;
  EXPECT_NEAR(checkpoint_bytes_per_device(m, s, p), total * 14 / 8, 1e-6 * total);
  s.zero = 1;  // sharding the optimizer changes memory, not what is saved
  EXPECT_NEAR(checkpoint_bytes_per_device(m, s, p), total * 14 / 8, 1e-6 * total);
  // Context-parallel ranks hold the same weights as their DP replica: they share the save.
  models::ParallelSplit c = s;
  c.dp = 4;
  c.cp = 2;
  EXPECT_NEAR(checkpoint_bytes_per_device(m, c, p), total * 14 / 8, 1e-6 * total);
  // With pipeline stages the largest stage sets the size: at least the even share.
  models::ParallelSplit q;
  q.dp = 2;
  q.pp = 4;
  q.microbatches = 4;
  const double even = total * 14 / 8;
  EXPECT_GE(checkpoint_bytes_per_device(m, q, p), even * (1 - 1e-9));
  EXPECT_LT(checkpoint_bytes_per_device(m, q, p), even * 1.5);
}

TEST(FailureModel, ProjectionGetsGoodputAndRanksByIt) {
  const auto m = models::load_model("llama3-8b");
  const Topology t = load_topology("dgx-h100");
  models::ParallelSplit s;
  s.tp = 8;
  s.sequence_parallel = true;
  s.microbatches = 4;
  ProjectionOptions opt;
  Projection p = project(m, t, s, opt);
  ASSERT_TRUE(p.feasible) << p.reason;
  add_goodput(p, m, opt, failure_assumptions(t, {}));
  ASSERT_TRUE(p.goodput.computed) << p.goodput.why_not;
  EXPECT_GT(p.goodput.goodput, 0.9);
  EXPECT_LT(p.goodput.goodput, 1.0);
  EXPECT_NEAR(p.goodput.goodput_mfu, p.mfu * p.goodput.goodput, 1e-12);

  Projection infeasible;
  add_goodput(infeasible, m, opt, failure_assumptions(t, {}));
  EXPECT_FALSE(infeasible.goodput.computed);

  // Ranking by goodput-adjusted MFU puts a higher product first even with a lower MFU.
  Projection a = p, b = p;
  a.mfu = 0.50;
  a.goodput.goodput_mfu = 0.40;
  b.mfu = 0.45;
  b.goodput.goodput_mfu = 0.44;
  std::vector<Projection> v = {infeasible, a, b};
  rank_projections(v, RankBy::goodput);
  EXPECT_EQ(v[0].goodput.goodput_mfu, 0.44);
  EXPECT_FALSE(v[2].feasible);
  rank_projections(v, RankBy::mfu);
  EXPECT_EQ(v[0].mfu, 0.50);
  EXPECT_EQ(parse_rank_by("goodput"), RankBy::goodput);
  EXPECT_THROW(parse_rank_by("speed"), UsageError);
}

TEST(FailureModel, CrossoverComparesOnGoodputAdjustedMfu) {
  const auto m = models::load_model("llama3-8b");
  const Topology base = load_topology("dgx-h100");
  const FailureAssumptions a = failure_assumptions(base, {});
  keep_freed_memory_for_reuse();
  const auto r = crossover(m, base, 64, {8, 64}, {100}, 64, 0.05, ProjectionOptions{}, &a, RankBy::goodput);
  for (const auto& c : r.cells) {
    ASSERT_TRUE(c.best_no_pp.feasible && c.best_with_pp.feasible);
    ASSERT_TRUE(c.best_no_pp.goodput.computed && c.best_with_pp.goodput.computed);
    EXPECT_NEAR(c.gain, c.best_with_pp.goodput.goodput_mfu / c.best_no_pp.goodput.goodput_mfu - 1, 1e-12);
    EXPECT_NEAR(c.best_no_pp.goodput.goodput_mfu, c.best_no_pp.mfu * c.best_no_pp.goodput.goodput, 1e-15);
  }
  EXPECT_NE(r.verdict.find("goodput-adjusted MFU gain"), std::string::npos) << r.verdict;
  // Without failure figures a goodput comparison is refused, not assumed.
  const FailureAssumptions none = failure_assumptions(load_topology("dgx-a100"), {});
  EXPECT_THROW(crossover(m, base, 64, {8}, {100}, 64, 0.05, ProjectionOptions{}, &none, RankBy::goodput), UsageError);
}

}  // namespace
}  // namespace ibt::topo
