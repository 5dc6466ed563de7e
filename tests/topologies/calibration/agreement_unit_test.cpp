// Calibration from train runs and the compare tool, without MPI: the split text of a
// run parses back, a topology calibrated on one node prices groups inside its domain
// from the fits and refuses (naming the missing scale_out figures) groups beyond it,
// the compute fit recovers a known efficiency and round-trips through the file, and
// the comparison names the component that differs most.
#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "models/plan/model_file.hpp"
#include "topologies/calibration/agreement.hpp"
#include "topologies/calibration/calibration.hpp"
#include "topologies/calibration/compute_fit.hpp"
#include "topologies/calibration/train_runs.hpp"
#include "topologies/hardware/collective_model.hpp"

namespace ibt::topo {
namespace {

models::ParallelSplit split(int dp, int tp, int pp, int m) {
  models::ParallelSplit s;
  s.dp = dp;
  s.tp = tp;
  s.pp = pp;
  s.microbatches = m;
  return s;
}

// A topology calibrated from 2-rank (and 4-rank) intra measurements on local-cpu.
Topology calibrated(bool with_four) {
  std::vector<MeasuredCollective> rows;
  for (double b : {1e3, 1e5, 1e7}) {
    for (const char* op : {"all_reduce", "all_gather", "reduce_scatter", "send_recv"})
      rows.push_back({op, "intra", 2, b, 3 + b / 5e3});
    if (with_four) rows.push_back({"all_reduce", "intra", 4, b, 40 + b / 1e3});
  }
  return calibrate(load_topology("local-cpu"), rows, {"r.h5"}, "cal").topology;
}

TEST(TrainRuns, SplitTextParsesBack) {
  models::ParallelSplit s = split(2, 2, 2, 4);
  s.sequence_parallel = true;
  s.zero = 1;
  EXPECT_EQ(parse_split(models::describe(s)), s);
  models::ParallelSplit i = split(1, 1, 2, 4);
  i.vpp = 2;
  i.schedule = models::ScheduleKind::interleaved;
  EXPECT_EQ(parse_split(models::describe(i)), i);
  EXPECT_THROW(parse_split("dp2 tp1"), UsageError);
  EXPECT_THROW(parse_split("dp2 tp1 pp1 ep1 vpp1 m2 b1 1f1b bogus recompute=none"), UsageError);
}

TEST(CalibratedTopology, GroupsInsideTheDomainUseTheFitsAndBeyondItAreRefused) {
  const Topology t = calibrated(false);
  ASSERT_FALSE(t.scale_out.present);
  ASSERT_EQ(t.domain_size(), 2);
  const CollectiveCost c = collective_cost(t, CollOp::all_reduce, place_group(2, 1, 2), 1e6);
  EXPECT_STREQ(c.algorithm, "fit");
  EXPECT_NEAR(c.time_us, 3 + 1e6 / 5e3, 1e-6);
  EXPECT_STREQ(p2p_cost(t, true, 1e6).algorithm, "fit");
  try {
    collective_cost(t, CollOp::all_reduce, place_group(4, 1, 2), 1e6);
    FAIL() << "a group spanning two domains without scale-out was priced";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("scale_out.bandwidth_GBps"), std::string::npos) << e.what();
  }
  EXPECT_THROW(p2p_cost(t, false, 1e6), UsageError);
  // A projection whose DP group spans domains fails the same way, never as zero.
  const MeasuredTrainRun run{"f.h5", "000001", "tiny-dense", split(4, 1, 1, 1), 3, 1.0};
  EXPECT_THROW(compare_run(run, t), UsageError);
}

TEST(CalibratedTopology, FittedGroupSizesAreUsedAndWidenTheDomain) {
  const Topology t = calibrated(true);
  EXPECT_EQ(t.domain_size(), 4);  // a 4-rank intra measurement: a 4-device domain
  const CollectiveCost four = collective_cost(t, CollOp::all_reduce, place_group(4, 1, 4), 1e6);
  EXPECT_STREQ(four.algorithm, "fit");
  EXPECT_NEAR(four.time_us, 40 + 1e6 / 1e3, 1e-6);  // the n = 4 fit, not n = 2 rescaled
  const CollectiveCost two = collective_cost(t, CollOp::all_reduce, place_group(2, 1, 4), 1e6);
  EXPECT_NEAR(two.time_us, 3 + 1e6 / 5e3, 1e-6);
}

TEST(ComputeFit, RecoversAKnownEfficiencyAndRoundTripsThroughTheFile) {
  Topology t = calibrated(false);
  const models::ModelConfig model = models::load_model("tiny-dense");
  // "Measured" runs made by projecting at a known efficiency.
  Topology truth = t;
  truth.model.gemm_efficiency.value = 0.37;
  auto measured = [&](const models::ParallelSplit& s, const char* id) {
    MeasuredTrainRun r{"f.h5", id, "tiny-dense", s, 3};
    const Agreement a = compare_run(r, model, truth);
    r.step_s = a.projected_step_s;
    r.compute_s = a.components[0].projected_s;
    return r;
  };
  const std::vector<MeasuredTrainRun> fit_runs = {measured(split(2, 1, 1, 2), "000002")};
  const std::vector<MeasuredTrainRun> held = {measured(split(1, 2, 1, 2), "000003")};
  const ComputeFit f = fit_compute(t, fit_runs, held);
  EXPECT_NEAR(f.gemm_efficiency, 0.37, 0.37 * 1e-3);
  ASSERT_EQ(f.residuals.size(), 2u);
  EXPECT_TRUE(f.residuals[0].fitted);
  EXPECT_FALSE(f.residuals[1].fitted);
  EXPECT_NEAR(f.residuals[1].projected_compute_s / f.residuals[1].measured_compute_s, 1.0, 1e-3);
  apply_compute_fit(t, f, fit_runs);
  const Topology back = parse_topology(to_json(t), "cal.json");
  EXPECT_NEAR(back.model.gemm_efficiency.get(), 0.37, 0.37 * 1e-3);
  EXPECT_EQ(back.model.gemm_efficiency.source, "calibration-train");
  ASSERT_NE(back.find_source("calibration-train"), nullptr);
  EXPECT_NE(back.find_source("calibration-train")->ref.find("f.h5:000002"), std::string::npos);
  EXPECT_EQ(back.fits.size(), t.fits.size());
  // The file projects exactly as the topology in memory.
  EXPECT_DOUBLE_EQ(compare_run(held[0], model, back).projected_step_s, compare_run(held[0], model, t).projected_step_s);
}

TEST(ComputeFit, AnEfficiencyAboveOneRaisesThePeak) {
  Topology t = calibrated(false);
  ComputeFit f;
  f.gemm_efficiency = 1.5;
  const double peak = t.device.fp32.get();
  apply_compute_fit(t, f, {});
  EXPECT_DOUBLE_EQ(t.model.gemm_efficiency.get(), 1.0);
  EXPECT_NEAR(t.device.fp32.get(), 1.5 * peak, 1e-12);
  EXPECT_NO_THROW(parse_topology(to_json(t), "cal.json"));
}

TEST(Agreement, NamesTheComponentThatDiffersMost) {
  const Topology t = calibrated(false);
  const models::ModelConfig model = models::load_model("tiny-dense");
  MeasuredTrainRun r{"f.h5", "000004", "tiny-dense", split(1, 2, 1, 2), 3};
  const Agreement p = compare_run(r, model, t);
  // Measured = projected, except 50 ms more of TP communication.
  r.compute_s = p.components[0].projected_s;
  r.tp_s = p.components[1].projected_s + 0.05;
  r.pp_s = p.components[2].projected_s;
  r.other_s = p.components[5].projected_s;
  r.step_s = p.projected_step_s + 0.05;
  const Agreement a = compare_run(r, model, t);
  EXPECT_EQ(a.worst, "tp");
  EXPECT_NEAR(a.worst_diff_s, -0.05, 1e-9);
  EXPECT_LT(a.rel_diff, 0);
}

}  // namespace
}  // namespace ibt::topo
