// The cuda executor on one rank against the serial fp32 reference, step by step (what
// `ibt train --executor cuda --check` does: loss, gradient and parameter norms) and then
// tensor by tensor, and its failure without a GPU: one UsageError naming the CUDA error.
#include <gtest/gtest.h>

#include <cmath>

#include "core/errors.hpp"
#include "gpu_test_support.hpp"
#include "models/cuda/executor/cuda_executor.hpp"
#include "models/engine/reference_trainer.hpp"
#include "models/plan/model_file.hpp"

namespace ibt {
namespace {

models::ParallelSplit single_rank(int microbatches) {
  models::ParallelSplit s;
  s.microbatches = microbatches;
  s.micro_batch_size = 2;
  return s;
}

void train_and_compare(const std::string& precision, double loss_rtol, double grad_rtol, double param_rtol,
                       const std::string& attention = "threads") {
  const models::ModelConfig m = models::load_model("tiny-dense");
  const models::ParallelSplit split = single_rank(2);
  models::TrainConfig train;
  train.microbatches = split.microbatches;
  train.micro_batch_size = split.micro_batch_size;
  const models::SyntheticData data(m.vocab, m.seq_len, train.seed);
  gpu::CudaExecutorOptions o;
  o.precision = precision;
  o.attention = attention;
  gpu::CudaExecutor exec(m, split, train, data, MPI_COMM_WORLD, o);
  models::ReferenceTrainer ref(m, train, data);
  for (int s = 0; s < 3; ++s) {
    const models::StepStats got = exec.step();
    const models::StepStats want = ref.step();
    EXPECT_NEAR(got.loss, want.loss, loss_rtol * want.loss) << "step " << s;
    EXPECT_NEAR(got.grad_norm, want.grad_norm, grad_rtol * want.grad_norm) << "step " << s;
    EXPECT_NEAR(got.param_norm, want.param_norm, param_rtol * want.param_norm) << "step " << s;
  }
  // Every parameter tensor after the steps, not only the norm: relative L2 per tensor,
  // within 3x the norm's tolerance (one tensor may differ more than the whole; AdamW's
  // normalised first steps amplify differences in small gradients). Passed on an H200
  // (2026-11-26) with the one-thread attention kernels.
  const auto params = exec.download_params(false);
  const std::vector<models::Param*> ref_params = ref.model().params();
  ASSERT_EQ(params.size(), ref_params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    ASSERT_EQ(params[i].first, ref_params[i]->name);
    const std::vector<float>& got = params[i].second;
    const std::vector<float>& want = ref_params[i]->value.data;
    ASSERT_EQ(got.size(), want.size()) << params[i].first;
    double num = 0, den = 0;
    for (std::size_t j = 0; j < got.size(); ++j) {
      num += (double(got[j]) - want[j]) * (double(got[j]) - want[j]);
      den += double(want[j]) * want[j];
    }
    EXPECT_LE(std::sqrt(num), 3 * param_rtol * std::sqrt(den)) << params[i].first;
  }
}

// The --check tolerances of models/training/train_runner.cpp.
TEST(CudaExecutor, Fp32StepsMatchTheSerialReference) {
  IBT_REQUIRE_GPU();
  train_and_compare("fp32", 1e-4, 1e-3, 1e-4);
}

TEST(CudaExecutor, Bf16StepsAreWithinTheCheckTolerance) {
  IBT_REQUIRE_GPU();
  train_and_compare("bf16", 2e-2, 1e-1, 1e-2);
}

// --cuda-attention gemm (the default): the same steps and tolerances (passed on an H200, 2026-11-26).
TEST(CudaExecutor, GemmAttentionStepsMatchTheSerialReference) {
  IBT_REQUIRE_GPU();
  train_and_compare("fp32", 1e-4, 1e-3, 1e-4, "gemm");
  train_and_compare("bf16", 2e-2, 1e-1, 1e-2, "gemm");
}

TEST(CudaExecutor, RefusesWhatItDoesNotImplement) {
  const models::ModelConfig moe = models::load_model("tiny-moe");
  EXPECT_NE(gpu::cuda_executor_check(single_rank(1), moe, 1).find("MoE"), std::string::npos);
  const models::ModelConfig dense = models::load_model("tiny-dense");
  models::ParallelSplit zero1 = single_rank(1);
  zero1.dp = 2;
  zero1.zero = 1;
  EXPECT_NE(gpu::cuda_executor_check(zero1, dense, 2).find("ZeRO"), std::string::npos);
  models::ParallelSplit dualpipe = single_rank(1);
  dualpipe.pp = 2;
  dualpipe.vpp = 2;
  dualpipe.microbatches = 4;
  dualpipe.schedule = models::ScheduleKind::dualpipev;
  EXPECT_NE(gpu::cuda_executor_check(dualpipe, dense, 2).find("dualpipev"), std::string::npos);
  EXPECT_EQ(gpu::cuda_executor_check(single_rank(1), dense, 1), "");
}

TEST(NoGpu, CudaExecutorFailsWithTheCudaError) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc == cudaSuccess && count > 0) GTEST_SKIP() << "a CUDA device is present; this test covers machines without one";
  const std::string cuda_text = rc == cudaSuccess ? "cudaGetDeviceCount found none" : cudaGetErrorString(rc);
  const models::ModelConfig m = models::load_model("tiny-dense");
  models::TrainConfig train;
  const models::SyntheticData data(m.vocab, m.seq_len, train.seed);
  try {
    gpu::CudaExecutor exec(m, single_rank(1), train, data, MPI_COMM_WORLD, gpu::CudaExecutorOptions{});
    FAIL() << "the cuda executor started without a GPU";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("--executor cuda: no CUDA GPU on this machine (", 0), 0u) << what;
    EXPECT_NE(what.find(cuda_text == "cudaGetDeviceCount found none" ? "lists no device" : cuda_text),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("; the cuda executor needs one; use --executor cpu"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace ibt
