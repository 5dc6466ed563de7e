#include "models/training/train_executor.hpp"

#include "core/errors.hpp"
#include "core/no_gpu.hpp"
#include "models/executor/cpu_executor.hpp"
#ifdef IBT_HAVE_CUDA
#include "collectives/nccl/cuda_device.hpp"
#include "models/cuda/executor/cuda_executor.hpp"
#endif

namespace ibt::suites {

namespace {

class CpuTrainExecutor final : public TrainExecutor {
 public:
  CpuTrainExecutor(const models::ModelConfig& m, const models::ParallelSplit& s, const models::TrainConfig& t,
                   const models::DataSource& d, MPI_Comm world)
      : exec_(m, s, t, d, world) {}
  models::StepStats step(models::TimeBreakdown* time) override { return exec_.step(time); }
  const models::ProcessGroups& groups() const override { return exec_.groups(); }
  double model_state_bytes() override { return exec_.model_state_bytes(); }
  std::string kind() const override { return "cpu"; }
  std::string precision() const override { return "fp32"; }
  std::string device_name() const override { return ""; }
  models::CpuExecutor* checkpointable() override { return &exec_; }

 private:
  models::CpuExecutor exec_;
};

#ifdef IBT_HAVE_CUDA
class CudaTrainExecutor final : public TrainExecutor {
 public:
  CudaTrainExecutor(const models::ModelConfig& m, const models::ParallelSplit& s, const models::TrainConfig& t,
                    const models::DataSource& d, MPI_Comm world, const gpu::CudaExecutorOptions& o)
      : exec_(m, s, t, d, world, o) {}
  models::StepStats step(models::TimeBreakdown* time) override { return exec_.step(time); }
  const models::ProcessGroups& groups() const override { return exec_.groups(); }
  double model_state_bytes() override { return exec_.model_state_bytes(); }
  std::string kind() const override { return "cuda"; }
  std::string precision() const override { return exec_.precision(); }
  std::string device_name() const override { return exec_.device_name(); }

 private:
  gpu::CudaExecutor exec_;
};
#endif

#ifndef IBT_HAVE_CUDA
[[noreturn]] void no_cuda_build() { throw UsageError(built_without_cuda_message("--executor cuda")); }
#endif

}  // namespace

std::string resolve_precision(const ExecutorChoice& c) {
  if (c.kind == "cpu") {
    if (!c.precision.empty() && c.precision != "fp32")
      throw UsageError("--precision " + c.precision + ": the cpu executor computes in fp32 only");
    return "fp32";
  }
  if (c.kind == "cuda") {
    const std::string p = c.precision.empty() ? "bf16" : c.precision;
    if (p == "fp8")
      throw UsageError("--precision fp8: not offered by the cuda executor (fp8 GEMMs are measured by `ibt gemm` only)");
    if (p != "bf16" && p != "fp32") throw UsageError("--precision '" + p + "': expected bf16 or fp32");
    return p;
  }
  throw UsageError("--executor '" + c.kind + "': expected cpu or cuda");
}

std::string train_executor_check(const ExecutorChoice& c, const models::ParallelSplit& split,
                                 const models::ModelConfig& model, int world_size) {
  resolve_precision(c);
  if (c.kind == "cpu") return models::cpu_executor_check(split, model, world_size);
#ifdef IBT_HAVE_CUDA
  return gpu::cuda_executor_check(split, model, world_size);
#else
  no_cuda_build();
#endif
}

void require_executor_device(const ExecutorChoice& c) {
  resolve_precision(c);
  if (c.kind == "cpu") return;
#ifdef IBT_HAVE_CUDA
  gpu::require_cuda_devices("--executor cuda");
#else
  no_cuda_build();
#endif
}

std::unique_ptr<TrainExecutor> make_train_executor(const ExecutorChoice& c, const models::ModelConfig& model,
                                                   const models::ParallelSplit& split, const models::TrainConfig& train,
                                                   const models::DataSource& data, MPI_Comm world) {
  [[maybe_unused]] const std::string precision = resolve_precision(c);
  if (c.kind == "cpu") return std::make_unique<CpuTrainExecutor>(model, split, train, data, world);
#ifdef IBT_HAVE_CUDA
  gpu::CudaExecutorOptions o;
  o.precision = precision;
  o.dp_overlap = c.dp_overlap;
  o.attention = c.cuda_attention;
  return std::make_unique<CudaTrainExecutor>(model, split, train, data, world, o);
#else
  no_cuda_build();
#endif
}

}  // namespace ibt::suites
