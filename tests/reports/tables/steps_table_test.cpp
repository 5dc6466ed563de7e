// reports/tables/steps_table.hpp: the `steps` table keeps the columns its files have
// always had (train's 20, import-log's 13, same names, types and order), and either
// writer's rows read back through one reader by name, in a real HDF5 store.
#include <gtest/gtest.h>

#include <cmath>

#include "reports/store/store.hpp"
#include "reports/tables/steps_table.hpp"
#include "tests/reports/store/test_support.hpp"

namespace ibt::tables {
namespace {

std::string names_of(const std::vector<store::Column>& columns) {
  std::string out;
  for (const auto& c : columns) out += (out.empty() ? "" : " ") + c.name + ":" + c.unit;
  return out;
}

// The stored formats, spelled out once here on purpose: a schema change that would
// change what train or import-log files hold must change this test too.
TEST(StepsTable, TrainStoresTheTwentyColumnsItsFilesHaveAlwaysHad) {
  EXPECT_EQ(names_of(StepRow::kTrainLayout.columns()),
            "step: loss:nats aux_loss: grad_norm: param_norm: step_time:s tokens_per_s:1/s "
            "model_tflops:TFLOP/s mfu: compute:s tp_comm:s pp_comm_and_bubble:s dp_comm:s ep_comm:s other:s "
            "ref_loss:nats ref_grad_norm: ref_param_norm: mfu_gemm_peak: cp_comm:s");
  EXPECT_EQ(StepRow::kTrainLayout.columns()[0].type, store::ColumnType::i64);
  for (size_t i = 1; i < StepRow::kTrainLayout.columns().size(); ++i)
    EXPECT_EQ(StepRow::kTrainLayout.columns()[i].type, store::ColumnType::f64) << i;
}

TEST(StepsTable, ImportLogStoresTheThirteenColumnsItsFilesHaveAlwaysHad) {
  EXPECT_EQ(names_of(StepRow::kLoggedLayout.columns()),
            "step: iteration: step_time:s tokens_per_s:1/s model_tflops:TFLOP/s mfu: "
            "logged_tflops_per_gpu:TFLOP/s compute:s tp_comm:s pp_comm_and_bubble:s dp_comm:s ep_comm:s other:s");
  EXPECT_EQ(StepRow::kLoggedLayout.columns()[1].type, store::ColumnType::i64);
}

TEST(StepsTable, BothWritersRowsReadBackByNameFromAnHdf5File) {
  test::ScratchDir dir;
  const std::string path = dir.file("steps.h5");
  StepRow trained;
  trained.step = 2;
  trained.loss = 3.25;
  trained.step_time = 0.5;
  trained.cp_comm = 0.125;
  StepRow logged;
  logged.step = 1;
  logged.iteration = 40;
  logged.step_time = 1.5;
  logged.logged_tflops_per_gpu = 390;
  {
    auto store = store::open_for_append(path);
    auto run = store->begin_run("train");
    run->table("steps", StepRow::kTrainLayout.columns()).append(StepRow::kTrainLayout.row(trained));
    run->finish(store::RunStatus::complete);
    auto run2 = store->begin_run("train");
    run2->table("steps", StepRow::kLoggedLayout.columns()).append(StepRow::kLoggedLayout.row(logged));
    run2->finish(store::RunStatus::complete);
  }
  const auto runs = store::list_runs(path);
  ASSERT_EQ(runs.size(), 2u);
  const store::TableData a = store::read_table(path, runs[0].id, "steps");
  const store::RowReader<StepRow> ra(a.columns);
  ASSERT_EQ(a.rows.size(), 1u);
  const StepRow back = ra.read(a.rows[0]);
  EXPECT_EQ(back.step, 2);
  EXPECT_EQ(back.loss, 3.25);
  EXPECT_EQ(back.cp_comm, 0.125);
  EXPECT_TRUE(std::isnan(back.ref_loss));  // stored NaN: no --check
  EXPECT_FALSE(ra.has(&StepRow::iteration));
  const store::TableData b = store::read_table(path, runs[1].id, "steps");
  const store::RowReader<StepRow> rb(b.columns);
  const StepRow imported = rb.read(b.rows[0]);
  EXPECT_EQ(imported.iteration, 40);
  EXPECT_EQ(imported.logged_tflops_per_gpu, 390);
  EXPECT_TRUE(std::isnan(imported.loss));  // the column is absent: the field's default
  EXPECT_TRUE(rb.has(&StepRow::compute));
  EXPECT_FALSE(rb.has(&StepRow::loss));
}

}  // namespace
}  // namespace ibt::tables
