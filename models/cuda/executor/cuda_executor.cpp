#include "models/cuda/executor/cuda_executor.hpp"

#include <cmath>
#include <map>
#include <stdexcept>

#include "collectives/nccl/cuda_device.hpp"
#include "collectives/nccl/nccl_communicator.hpp"
#include "collectives/nccl/nccl_runtime.hpp"
#include "core/errors.hpp"
#include "models/cuda/executor/device_blas.hpp"
#include "models/cuda/executor/device_model.hpp"
#include "models/cuda/executor/nccl_groups.hpp"
#include "models/engine/layers/transformer.hpp"
#include "models/executor/pipeline_walk.hpp"
#include "models/plan/schedule.hpp"

namespace ibt::gpu {

namespace {

using models::TimeBreakdown;

// Norm gains are identical copies on every TP rank: counted once in norms.
bool tp_replicated(const std::string& name) { return name.find("norm.") != std::string::npos; }

// Waits for the compute stream, then reads the clock: each timed region is its own.
double synced_clock(cudaStream_t compute) {
  check_cuda(cudaStreamSynchronize(compute), "cudaStreamSynchronize of the compute stream");
  return MPI_Wtime();
}

// Megatron's TP reductions as NCCL all-reduces, after the compute stream's work
// (exposed time, added to time.tp).
class NcclTpReducer final : public DeviceTpReducer {
 public:
  NcclTpReducer(NcclCommunicator* comm, cudaStream_t compute, double& seconds)
      : comm_(comm), compute_(compute), seconds_(seconds) {}
  void sum(float* data, std::int64_t n) override { reduce(data, n, ReduceOp::sum); }
  void max(float* data, std::int64_t n) override { reduce(data, n, ReduceOp::max); }

 private:
  void reduce(float* data, std::int64_t n, ReduceOp op) {
    if (!comm_ || comm_->size() == 1 || n == 0) return;
    const double t0 = synced_clock(compute_);
    comm_->all_reduce(data, data, static_cast<std::size_t>(n), DType::float32, op);
    comm_->synchronize();
    seconds_ += MPI_Wtime() - t0;
  }
  NcclCommunicator* comm_;
  cudaStream_t compute_;
  double& seconds_;
};

}  // namespace

std::string cuda_executor_check(const models::ParallelSplit& split, const models::ModelConfig& model, int world_size) {
  std::string why = models::check(split, model, world_size);
  if (!why.empty()) return why;
  const std::string prefix = "split " + models::describe(split) + ": the cuda executor does not implement ";
  if (model.is_moe() || split.ep > 1) return prefix + "MoE/expert parallelism yet (model " + model.name + ")";
  if (model.attention != models::Attention::standard) return prefix + "MLA (model " + model.name + ")";
  if (model.parallel_block) return prefix + "parallel attention+MLP blocks (model " + model.name + ")";
  if (model.kv_replicas(split.tp) > 1) return prefix + "KV heads replicated over TP (tp > kv_heads)";
  if (split.zero > 0) return prefix + "ZeRO (stage " + std::to_string(split.zero) + ") yet";
  if (split.cp > 1) return prefix + "context parallelism yet";
  if (split.sequence_parallel) return prefix + "sequence parallelism yet";
  if (split.recompute != models::Recompute::none) return prefix + "activation recompute";
  if (model.tied_embeddings && split.pp > 1) return prefix + "tied embeddings across pipeline stages";
  if (split.schedule == models::ScheduleKind::dualpipev)
    return prefix +
           "dualpipev yet (its W passes need deferred weight-gradient GEMMs, and its paired forward-backward "
           "chunks want two streams to overlap; the cpu executor runs it, the sim prices it)";
  if (models::splits_backward(split.schedule))
    return prefix + "split backwards (schedule " + std::string(models::to_string(split.schedule)) +
           ": W passes) yet; the cpu executor and the sim do";
  return "";
}

struct CudaExecutor::Impl {
  models::ModelConfig model;
  models::ParallelSplit split;
  models::TrainConfig train;
  const models::DataSource& data;
  CudaExecutorOptions options;
  std::unique_ptr<models::ProcessGroups> groups;
  models::PipelineSchedule schedule;
  DeviceFacts device;
  // Runtime 1: TP and PP communicators (their stream follows the compute stream's work).
  // Runtime 2: the DP communicator, on its own stream, overlapping compute.
  std::shared_ptr<NcclRuntime> pipe_runtime, dp_runtime;
  std::unique_ptr<NcclCommunicator> tp, pp, dp;
  cudaStream_t compute = nullptr;
  cudaEvent_t grads_ready = nullptr, dp_done = nullptr;
  std::unique_ptr<DeviceBlas> blas;
  std::vector<std::unique_ptr<models::Transformer>> cpu_chunks;  // the layout the device chunks mirror
  std::vector<std::unique_ptr<DeviceChunk>> chunks;
  std::int64_t step_index = 0;

  Impl(const models::ModelConfig& m, const models::ParallelSplit& s, const models::TrainConfig& t,
       const models::DataSource& d, const CudaExecutorOptions& o)
      : model(m), split(s), train(t), data(d), options(o) {}

  ~Impl() {
    chunks.clear();
    blas.reset();
    if (grads_ready) cudaEventDestroy(grads_ready);
    if (dp_done) cudaEventDestroy(dp_done);
    if (compute) cudaStreamDestroy(compute);
  }

  // The DP all-reduce of a range of one chunk's gradients, queued on the DP stream after
  // the compute stream's work so far (which completes them).
  void reduce_async(std::size_t c, std::size_t offset, std::size_t count) {
    if (!dp || dp->size() == 1 || count == 0) return;
    check_cuda(cudaEventRecord(grads_ready, compute), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(dp_runtime->stream(), grads_ready, 0), "cudaStreamWaitEvent");
    float* g = chunks[c]->params().grads() + offset;
    dp->all_reduce(g, g, count, DType::float32, ReduceOp::sum);
  }
};

namespace {

// The cuda side of walk_pipeline(): device chunks, NCCL pipeline transfers of fp32
// activations [b*seq, hidden].
class CudaPipelineBackend {
 public:
  using Activation = DeviceTensor;
  CudaPipelineBackend(CudaExecutor::Impl& x, const models::Batch& local, float ce_per_token, DeviceTpReducer& tp)
      : x_(x), local_(local), ce_per_token_(ce_per_token), tp_(tp) {}

  double clock() const { return synced_clock(x_.compute); }

  void forward(int microbatch, int chunk, const DeviceTensor* input, DeviceTensor* output) {
    const int b = x_.split.micro_batch_size;
    ce_sum +=
        x_.chunks[chunk]->forward(local_.slice(microbatch * b, b), input, output, caches_[{microbatch, chunk}], tp_);
  }

  void backward(int microbatch, int chunk, const DeviceTensor* d_output, DeviceTensor* d_input) {
    // The chunk's last backward of the step completes its gradients layer by layer: with
    // overlap on, each layer's DP all-reduce starts as soon as its backward is queued.
    const bool last = ++backwards_done_[chunk] == x_.split.microbatches;
    DeviceChunk::GradsFinal reduce;
    if (last && x_.options.dp_overlap)
      reduce = [this, chunk](std::size_t offset, std::size_t count) {
        x_.reduce_async(static_cast<std::size_t>(chunk), offset, count);
      };
    x_.chunks[chunk]->backward(caches_[{microbatch, chunk}], d_output, ce_per_token_, d_input, tp_, reduce);
    caches_.erase({microbatch, chunk});
  }

  void exchange(const DeviceTensor* send, int send_peer, DeviceTensor* recv, int recv_peer) {
    const std::int64_t rows = static_cast<std::int64_t>(x_.split.micro_batch_size) * x_.model.seq_len;
    const std::size_t n = static_cast<std::size_t>(rows * x_.model.hidden);
    if (recv) recv->reset(rows, x_.model.hidden, x_.compute);
    check_cuda(cudaStreamSynchronize(x_.compute), "cudaStreamSynchronize before a pipeline transfer");
    if (send && recv)
      x_.pp->send_recv(send->get(), n, send_peer, recv->get(), n, recv_peer, DType::float32);
    else if (send)
      x_.pp->send(send->get(), n, DType::float32, send_peer);
    else
      x_.pp->recv(recv->get(), n, DType::float32, recv_peer);
    x_.pp->synchronize();
  }

  // Split backwards are refused (cuda_executor_check): never called.
  void weight(int /*microbatch*/, int /*chunk*/) {
    throw std::logic_error("cuda executor: no W pass (split backwards are refused)");
  }

  // Overlap on: already reduced layer by layer (backward above). Off: after the walk.
  void gradients_final(int /*chunk*/) {}

  double ce_sum = 0;

 private:
  CudaExecutor::Impl& x_;
  const models::Batch& local_;
  float ce_per_token_;
  DeviceTpReducer& tp_;
  std::map<std::pair<int, int>, DeviceStageCache> caches_;  // (microbatch, chunk)
  std::map<int, int> backwards_done_;                       // per chunk, this step
};

// This rank's device among its host's GPUs: its index among the host's ranks.
int choose_device(MPI_Comm world) {
  const int count = require_cuda_devices("--executor cuda");
  MPI_Comm local;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int local_rank = 0, local_size = 1;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_size(local, &local_size);
  MPI_Comm_free(&local);
  if (local_size > count)
    throw UsageError("--executor cuda: " + std::to_string(local_size) + " ranks on this host but " +
                     std::to_string(count) + " GPU(s): run one rank per GPU");
  return local_rank;
}

}  // namespace

CudaExecutor::CudaExecutor(const models::ModelConfig& m, const models::ParallelSplit& split,
                           const models::TrainConfig& train, const models::DataSource& data, MPI_Comm world,
                           const CudaExecutorOptions& options)
    : impl_(std::make_unique<Impl>(m, split, train, data, options)) {
  Impl& x = *impl_;
  const MathPrecision precision = parse_math_precision(options.precision);
  const AttentionKernels attention = parse_attention_kernels(options.attention);
  int size = 0;
  MPI_Comm_size(world, &size);
  const std::string why = cuda_executor_check(split, m, size);
  if (!why.empty()) throw UsageError(why);
  // Every rank checks for a device before any collective, so a machine without one
  // fails at once with the CUDA error (exit 2), never in the middle of a step.
  const int device = choose_device(world);
  check_cuda(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
  keep_freed_memory_pooled(device);
  x.device = describe_device(device);
  x.train.microbatches = split.microbatches;
  x.train.micro_batch_size = split.micro_batch_size;
  x.train.data_parallel = split.dp;
  x.groups = std::make_unique<models::ProcessGroups>(split, world);
  x.schedule = models::build_schedule(split);
  check_cuda(cudaStreamCreateWithFlags(&x.compute, cudaStreamNonBlocking), "cudaStreamCreate (compute)");
  check_cuda(cudaEventCreateWithFlags(&x.grads_ready, cudaEventDisableTiming), "cudaEventCreate");
  check_cuda(cudaEventCreateWithFlags(&x.dp_done, cudaEventDisableTiming), "cudaEventCreate");
  x.pipe_runtime = std::make_shared<NcclRuntime>(device, options.timeout_s, false);
  x.dp_runtime = std::make_shared<NcclRuntime>(device, options.timeout_s, false);
  x.tp = make_nccl_group(x.pipe_runtime, x.groups->tp->handle(), "tp group");
  x.pp = make_nccl_group(x.pipe_runtime, x.groups->pp->handle(), "pp group");
  x.dp = make_nccl_group(x.dp_runtime, x.groups->dp->handle(), "dp group");
  x.blas = std::make_unique<DeviceBlas>(precision, x.compute);

  const int vstages = split.pp * split.vpp;
  const models::RankCoord& me = x.groups->coord;
  for (int c = 0; c < split.vpp; ++c) {
    const int vs = x.schedule.virtual_stage(me.pp, c);
    const models::LayerRange layers = models::stage_layers(m, vstages, vs);
    models::ModelPart part;
    part.first_layer = layers.first;
    part.end_layer = layers.end();
    part.has_embedding = vs == 0;
    part.has_head = vs == vstages - 1;
    part.tp = models::Shard{me.tp, split.tp};
    x.cpu_chunks.push_back(std::make_unique<models::Transformer>(m, train.seed, part));
    x.chunks.push_back(std::make_unique<DeviceChunk>(*x.cpu_chunks.back(), *x.blas, x.compute, attention));
  }
  // The host copies served to initialise the device; drop their memory.
  for (auto& c : x.cpu_chunks)
    for (models::Param* p : c->params()) p->value = p->grad = models::Tensor();
}

CudaExecutor::~CudaExecutor() = default;

const models::ProcessGroups& CudaExecutor::groups() const { return *impl_->groups; }
std::string CudaExecutor::device_name() const { return impl_->device.name; }
std::string CudaExecutor::precision() const { return to_string(impl_->blas->precision()); }

double CudaExecutor::model_state_bytes() const {
  double bytes = 0;
  for (const auto& c : impl_->chunks) bytes += c->params().state_bytes();
  return bytes;
}

std::vector<std::pair<std::string, std::vector<float>>> CudaExecutor::download_params(bool grads) const {
  std::vector<std::pair<std::string, std::vector<float>>> out;
  for (const auto& c : impl_->chunks) {
    DeviceParams& p = c->params();
    const std::vector<float> flat = grads ? p.download_grads(impl_->compute) : p.download_master(impl_->compute);
    for (std::size_t i = 0; i < p.size(); ++i)
      out.emplace_back(p.info(i).name, std::vector<float>(flat.begin() + static_cast<std::ptrdiff_t>(p.info(i).offset),
                                                          flat.begin() + static_cast<std::ptrdiff_t>(p.info(i).offset +
                                                                                                     p.info(i).count)));
  }
  return out;
}

models::StepStats CudaExecutor::step(TimeBreakdown* time) {
  Impl& x = *impl_;
  const double start = synced_clock(x.compute);
  TimeBreakdown t;
  const models::RankCoord& me = x.groups->coord;
  const int m = x.split.microbatches, b = x.split.micro_batch_size;
  const models::Batch local = x.data.batch(x.step_index, me.dp * m * b, m * b);
  const int global_sequences = x.split.dp * m * b;
  const float ce_per_token = 1.0f / static_cast<float>(static_cast<std::int64_t>(global_sequences) * x.model.seq_len);

  for (auto& c : x.chunks) c->params().zero_grads(x.compute);
  NcclTpReducer tp(x.tp.get(), x.compute, t.tp);
  CudaPipelineBackend pipe(x, local, ce_per_token, tp);
  models::walk_pipeline(x.schedule, me.pp, pipe, t);

  // DP: wait for the reductions queued during the walk (or run them now), then let the
  // compute stream's AdamW follow them.
  double t0 = synced_clock(x.compute);
  if (x.dp->size() > 1) {
    if (!x.options.dp_overlap)
      for (std::size_t c = 0; c < x.chunks.size(); ++c) x.reduce_async(c, 0, x.chunks[c]->params().total());
    check_cuda(cudaEventRecord(x.dp_done, x.dp_runtime->stream()), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(x.compute, x.dp_done, 0), "cudaStreamWaitEvent");
    x.dp->synchronize();
  }
  t.dp += MPI_Wtime() - t0;

  // Statistics as CpuExecutor::step(): CE from tp rank 0 of the head stage; each
  // weight's square counted once (dp rank 0; replicated norms from tp rank 0).
  t0 = MPI_Wtime();
  auto counted_sum_squares = [&](bool grads) {
    double local_sq = 0;
    if (me.dp != 0) return local_sq;
    for (auto& c : x.chunks) {
      const std::vector<double> each = c->params().sum_squares_each(grads, x.compute);
      for (std::size_t i = 0; i < each.size(); ++i)
        if (!(tp_replicated(c->params().info(i).name) && me.tp != 0)) local_sq += each[i];
    }
    return local_sq;
  };
  double sums[2] = {me.tp == 0 ? pipe.ce_sum : 0.0, counted_sum_squares(true)};
  MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, x.groups->world->handle());
  models::StepStats stats;
  stats.step = x.step_index;
  stats.tokens = static_cast<std::int64_t>(global_sequences) * x.model.seq_len;
  stats.loss = sums[0] / static_cast<double>(stats.tokens);
  stats.grad_norm = std::sqrt(sums[1]);
  t.other += MPI_Wtime() - t0;

  t0 = synced_clock(x.compute);
  AdamWParams adam{x.train.adam.lr, x.train.adam.beta1, x.train.adam.beta2, x.train.adam.eps,
                   x.train.adam.weight_decay};
  for (auto& c : x.chunks) c->params().adamw(x.step_index + 1, adam, x.compute);
  t.compute += synced_clock(x.compute) - t0;

  t0 = MPI_Wtime();
  double param_sq = counted_sum_squares(false);
  MPI_Allreduce(MPI_IN_PLACE, &param_sq, 1, MPI_DOUBLE, MPI_SUM, x.groups->world->handle());
  stats.param_norm = std::sqrt(param_sq);
  t.other += MPI_Wtime() - t0;
  t.total = MPI_Wtime() - start;
  stats.seconds = t.total;
  if (time) *time = t;
  ++x.step_index;
  return stats;
}

}  // namespace ibt::gpu
