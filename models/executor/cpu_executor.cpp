// The cpu executor (cpu_executor.hpp): one training step over MPI ranks with fp32 math,
// the MPI side of TP, EP and CP (timed reducers and exchanges), the pipeline backend
// walk_pipeline() drives, and the gradient reduction and ZeRO-1 update after the walk.
// Checkpoint state: cpu_executor_checkpoint.cpp.
#include "models/executor/cpu_executor.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/errors.hpp"
#include "models/engine/deferred_weight_grads.hpp"
#include "models/executor/kv_replica_grads.hpp"
#include "models/executor/param_roles.hpp"
#include "models/executor/pipeline_walk.hpp"

namespace ibt::models {

namespace {

// A row-split tensor's rows gathered from, or summed and scattered back over, `comm`:
// TP's sequence-parallel activations and CP's K/V (and dK/dV). Timed into `seconds`.
// Every element of the output is written, so it is resized without zero-filling.
void all_gather_rows(Communicator& comm, double& seconds, const Tensor& local, Tensor& full) {
  const double start = MPI_Wtime();
  full.resize({local.rows() * comm.size(), local.row_size()});
  comm.all_gather(local.ptr(), full.ptr(), static_cast<size_t>(local.numel()), DType::float32);
  seconds += MPI_Wtime() - start;
}
void reduce_scatter_rows(Communicator& comm, double& seconds, const Tensor& full, Tensor& local) {
  const double start = MPI_Wtime();
  if (full.rows() % comm.size() != 0) throw std::logic_error("reduce_scatter_rows: rows not divisible by the group");
  local.resize({full.rows() / comm.size(), full.row_size()});
  comm.reduce_scatter(full.ptr(), local.ptr(), static_cast<size_t>(local.numel()), DType::float32, ReduceOp::sum);
  seconds += MPI_Wtime() - start;
}

// Megatron's TP reductions as MPI all-reduces, timed.
class MpiTpReducer final : public TpReducer {
 public:
  MpiTpReducer(Communicator& comm, bool sequence_parallel, double& seconds)
      : comm_(comm), sp_(sequence_parallel), seconds_(seconds) {}
  bool sequence_parallel() const override { return sp_; }
  void all_gather_rows(const Tensor& local, Tensor& full) override {
    ibt::models::all_gather_rows(comm_, seconds_, local, full);
  }
  void reduce_scatter_rows(const Tensor& full, Tensor& local) override {
    ibt::models::reduce_scatter_rows(comm_, seconds_, full, local);
  }
  void sum(Tensor& t) override { reduce(t.ptr(), t.numel(), ReduceOp::sum); }
  void sum(std::vector<float>& v) override { reduce(v.data(), static_cast<int64_t>(v.size()), ReduceOp::sum); }
  void max(std::vector<float>& v) override { reduce(v.data(), static_cast<int64_t>(v.size()), ReduceOp::max); }

 private:
  void reduce(float* data, int64_t n, ReduceOp op) {
    if (comm_.size() == 1 || n == 0) return;
    const double start = MPI_Wtime();
    comm_.all_reduce(data, data, static_cast<size_t>(n), DType::float32, op);
    seconds_ += MPI_Wtime() - start;
  }
  Communicator& comm_;
  bool sp_;
  double& seconds_;
};

// The EP all-to-alls on the ep communicator, timed.
class MpiExpertExchange final : public ExpertExchange {
 public:
  MpiExpertExchange(Communicator& comm, double& seconds) : comm_(comm), seconds_(seconds) {}
  int size() const override { return comm_.size(); }
  void exchange_counts(const std::vector<int64_t>& send, std::vector<int64_t>& recv) override {
    const double start = MPI_Wtime();
    std::vector<double> s(send.begin(), send.end()), r(send.size());
    comm_.all_to_all(s.data(), r.data(), send.size() / comm_.size(), DType::float64);
    recv.assign(r.begin(), r.end());
    seconds_ += MPI_Wtime() - start;
  }
  void exchange_rows(const Tensor& send, const std::vector<int64_t>& send_rows, Tensor& recv,
                     const std::vector<int64_t>& recv_rows) override {
    const double start = MPI_Wtime();
    const int64_t h = send.row_size() > 0 ? send.row_size() : recv.row_size();
    const int n = comm_.size();
    std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
    int64_t total = 0;
    for (int j = 0; j < n; ++j) {
      sc[j] = static_cast<size_t>(send_rows[j] * h);
      rc[j] = static_cast<size_t>(recv_rows[j] * h);
      if (j > 0) sd[j] = sd[j - 1] + sc[j - 1], rd[j] = rd[j - 1] + rc[j - 1];
      total += recv_rows[j];
    }
    recv.reset({total, h});
    comm_.all_to_allv(send.ptr(), sc, sd, recv.ptr(), rc, rd, DType::float32);
    seconds_ += MPI_Wtime() - start;
  }

 private:
  Communicator& comm_;
  double& seconds_;
};

// The CP group's K/V all-gather and dK/dV reduce-scatter, or the ring's K/V and dK/dV
// passes (MPI_Isend to the next CP rank, MPI_Irecv from the previous one), on the cp
// communicator, timed: a pass counts the time spent starting it and waiting for it,
// so what the compute between them hid is not counted.
class MpiContextExchange final : public ContextExchange {
 public:
  MpiContextExchange(MpiCommunicator& comm, bool ring, double& seconds) : comm_(comm), ring_(ring), seconds_(seconds) {}
  ~MpiContextExchange() override {
    for (auto& [id, req] : passes_) MPI_Waitall(2, req.data(), MPI_STATUSES_IGNORE);
  }
  int size() const override { return comm_.size(); }
  int rank() const override { return comm_.rank(); }
  void all_gather_rows(const Tensor& local, Tensor& full) override {
    ibt::models::all_gather_rows(comm_, seconds_, local, full);
  }
  void reduce_scatter_rows(const Tensor& full, Tensor& local) override {
    ibt::models::reduce_scatter_rows(comm_, seconds_, full, local);
  }
  bool ring() const override { return ring_; }
  int start_ring(const float* send, float* recv, size_t n) override {
    if (n > static_cast<size_t>(std::numeric_limits<int>::max()))
      throw std::logic_error("ring pass of " + std::to_string(n) + " floats exceeds one MPI message");
    const double start = MPI_Wtime();
    const int next = (rank() + 1) % size(), prev = (rank() + size() - 1) % size();
    // Every member starts the same passes in the same order, so the pass count is a
    // tag both ends agree on (bounded: MPI guarantees tags up to 32767).
    const int id = next_id_++;
    const int tag = id % 32768;
    std::array<MPI_Request, 2>& req = passes_[id];
    MPI_Irecv(recv, static_cast<int>(n), MPI_FLOAT, prev, tag, comm_.handle(), &req[0]);
    MPI_Isend(send, static_cast<int>(n), MPI_FLOAT, next, tag, comm_.handle(), &req[1]);
    seconds_ += MPI_Wtime() - start;
    return id;
  }
  void finish_ring(int id) override {
    const double start = MPI_Wtime();
    auto it = passes_.find(id);
    if (it == passes_.end()) throw std::logic_error("finish_ring: no pass " + std::to_string(id) + " in flight");
    MPI_Waitall(2, it->second.data(), MPI_STATUSES_IGNORE);
    passes_.erase(it);
    seconds_ += MPI_Wtime() - start;
  }

 private:
  MpiCommunicator& comm_;
  bool ring_;
  double& seconds_;
  int next_id_ = 0;
  std::map<int, std::array<MPI_Request, 2>> passes_;
};

// The cpu side of walk_pipeline(): fp32 Transformer chunks, MPI pipeline transfers.
// Activations between stages are [b*seq, hidden] (this rank's 1/tp of the rows with SP).
class CpuPipelineBackend {
 public:
  using Activation = Tensor;
  // spare_caches: caches of earlier steps, whose buffers a new microbatch reuses (no
  // allocation, no page faults); every cache goes back there after its backward.
  CpuPipelineBackend(std::vector<std::unique_ptr<Transformer>>& chunks, const Batch& local, const LossScale& scale,
                     Communicator& pp, MpiTpReducer& tp, MpiExpertExchange& ep, MpiContextExchange* cp,
                     int micro_batch_size, int64_t act_rows, int64_t hidden, std::vector<StageCache>& spare_caches,
                     ZeroUnits* zero, bool split_backward)
      : chunks_(chunks),
        local_(local),
        scale_(scale),
        pp_(pp),
        tp_(tp),
        ep_(ep),
        cp_(cp),
        b_(micro_batch_size),
        act_rows_(act_rows),
        hidden_(hidden),
        zero_(zero),
        split_backward_(split_backward),
        spare_(spare_caches) {
    loads.resize(chunks.size());
  }

  double clock() const { return MPI_Wtime(); }

  void forward(int microbatch, int chunk, const Tensor* input, Tensor* output) {
    const Batch mb = local_.slice(microbatch * b_, b_);
    Tensor out;
    StageCache& cache = caches_[{microbatch, chunk}];
    if (!spare_.empty()) {
      cache = std::move(spare_.back());
      spare_.pop_back();
    }
    const MicrobatchLoss l =
        chunks_[chunk]->forward(mb, input, out, cache, tp_, &ep_, cp_, zero_ ? zero_->hooks(chunk) : nullptr);
    ce_sum += l.ce_sum;
    balance_sum += l.balance_sum;
    auto& acc = loads[chunk];
    if (acc.empty())
      acc = l.moe_load;
    else
      for (size_t i = 0; i < acc.size(); ++i)
        for (size_t e = 0; e < acc[i].size(); ++e) acc[i][e] += l.moe_load[i][e];
    if (output) *output = std::move(out);
  }

  void backward(int microbatch, int chunk, const Tensor* d_output, Tensor* d_input) {
    Tensor d_in;
    const auto key = std::make_pair(microbatch, chunk);
    {
      // A split backward (zb-h1): the weight-gradient GEMMs wait in the queue for W.
      std::optional<DeferWeightGrads> defer;
      if (split_backward_) defer.emplace(deferred_[key]);
      chunks_[chunk]->backward(caches_[key], d_output, scale_, d_in, tp_, &ep_, cp_,
                               zero_ ? zero_->hooks(chunk) : nullptr);
    }
    spare_.push_back(std::move(caches_[key]));
    caches_.erase(key);
    if (d_input) *d_input = std::move(d_in);
  }

  // W: the weight gradients the microbatch's B queued (deferred_weight_grads.hpp).
  void weight(int microbatch, int chunk) {
    const auto it = deferred_.find({microbatch, chunk});
    if (it == deferred_.end()) throw std::logic_error("pipeline: weight pass before its backward");
    it->second.run();
    deferred_.erase(it);
  }

  void exchange(const Tensor* send, int send_peer, Tensor* recv, int recv_peer) {
    const size_t n = static_cast<size_t>(act_rows_ * hidden_);
    if (recv) recv->reset({act_rows_, hidden_});
    if (send && recv)
      pp_.send_recv(send->ptr(), n, send_peer, recv->ptr(), n, recv_peer, DType::float32);
    else if (send)
      pp_.send(send->ptr(), n, DType::float32, send_peer);
    else
      pp_.recv(recv->ptr(), n, DType::float32, recv_peer);
  }

  // Gradients are reduced after the walk, in one flat all-reduce per bucket.
  void gradients_final(int /*chunk*/) {}

  double ce_sum = 0, balance_sum = 0;
  std::vector<std::vector<std::vector<int64_t>>> loads;  // [chunk][moe layer][expert]

 private:
  std::vector<std::unique_ptr<Transformer>>& chunks_;
  const Batch& local_;
  const LossScale& scale_;
  Communicator& pp_;
  MpiTpReducer& tp_;
  MpiExpertExchange& ep_;
  MpiContextExchange* cp_;  // nullptr without context parallelism
  int b_;
  int64_t act_rows_, hidden_;
  ZeroUnits* zero_;
  std::map<std::pair<int, int>, StageCache> caches_;  // (microbatch, chunk)
  bool split_backward_ = false;
  std::map<std::pair<int, int>, WeightGradQueue> deferred_;  // (microbatch, chunk): B done, W not
  std::vector<StageCache>& spare_;
};

}  // namespace

std::string cpu_executor_check(const ParallelSplit& split, const ModelConfig& model, int world_size) {
  std::string why = check(split, model, world_size);
  if (!why.empty()) return why;
  const std::string prefix = "split " + describe(split) + ": ";
  if (split.recompute != Recompute::none) return prefix + "the cpu executor does not implement recompute";
  if (model.tied_embeddings && split.pp > 1)
    return prefix + "tied embeddings across pipeline stages are not implemented in the cpu executor";
  if (split.cp > 1 && model.is_moe() && model.balance == RoutingBalance::aux_loss)
    return prefix +
           "the per-sequence MoE aux loss with cp > 1 is not implemented in the cpu executor "
           "(each CP rank sees part of every sequence)";
  return "";
}

CpuExecutor::CpuExecutor(const ModelConfig& m, const ParallelSplit& split, const TrainConfig& train,
                         const DataSource& data, MPI_Comm world)
    : model_(m), split_(split), train_(train), data_(data) {
  int size = 0;
  MPI_Comm_size(world, &size);
  const std::string why = cpu_executor_check(split, m, size);
  if (!why.empty()) throw UsageError(why);
  train_.microbatches = split.microbatches;
  train_.micro_batch_size = split.micro_batch_size;
  train_.data_parallel = split.dp;
  groups_ = std::make_unique<ProcessGroups>(split, world, m.kv_replicas(split.tp));
  schedule_ = build_schedule(split);
  const int vstages = split.pp * split.vpp;
  const RankCoord& me = groups_->coord;
  for (int c = 0; c < split.vpp; ++c) {
    const int vs = schedule_.virtual_stage(me.pp, c);
    const LayerRange layers = stage_layers(m, vstages, vs);
    ModelPart part;
    part.first_layer = layers.first;
    part.end_layer = layers.end();
    part.has_embedding = vs == 0;
    part.has_head = vs == vstages - 1;
    part.tp = Shard{me.tp, split.tp};
    part.ep = Shard{me.ep, split.ep};
    chunks_.push_back(std::make_unique<Transformer>(m, train.seed, part));
  }
  if (split.zero >= 2) {
    ZeroUnits::Comms comms;
    comms.shard = groups_->dp_shard.get();
    comms.replica = groups_->dp_replica.get();
    comms.expert_shard = groups_->expert_dp_shard.get();  // (expert_dp_cp without a shard group)
    comms.tp = groups_->tp.get();
    comms.tp_kv = groups_->tp_kv.get();
    comms.sequence_parallel = split.sequence_parallel;
    zero_ = std::make_unique<ZeroUnits>(split.zero, chunks_, comms);
    return;
  }
  Bucket dense, experts;
  // CP ranks hold the same weights: they reduce gradients (and shard ZeRO-1 states)
  // with the DP replicas. dp_shard is dp_cp without a shard group; with one, ZeRO-1
  // shards inside it (g x cp ranks) and all-reduces the shard over the replicas.
  dense.comm = split.zero >= 1 ? groups_->dp_shard.get() : groups_->dp_cp.get();
  dense.replica = split.shard_group > 0 ? groups_->dp_replica.get() : nullptr;
  experts.comm = split.zero >= 1 ? groups_->expert_dp_shard.get() : groups_->expert_dp_cp.get();
  experts.replica = dense.replica;
  for (Param* p : params()) (is_expert(*p) ? experts : dense).params.push_back(p);
  for (Bucket* b : {&dense, &experts}) {
    if (b->params.empty()) continue;
    for (Param* p : b->params) b->total += p->value.data.size();
    const size_t d = static_cast<size_t>(b->comm->size());
    b->shard = (b->total + d - 1) / d;
    if (split.zero >= 1) {
      b->m.assign(b->shard, 0.0f);
      b->v.assign(b->shard, 0.0f);
    }
    buckets_.push_back(std::move(*b));
  }
  if (split.zero == 0) optimizer_ = std::make_unique<AdamW>(train.adam, params());
}

double CpuExecutor::zero1_reduce_and_update(double& dp_seconds, double& compute_seconds) {
  const RankCoord& me = groups_->coord;
  double sum_sq = 0;
  for (Bucket& b : buckets_) {
    const size_t d = static_cast<size_t>(b.comm->size());
    const size_t rank = static_cast<size_t>(b.comm->rank());
    const size_t lo = rank * b.shard, hi = std::min(lo + b.shard, b.total);
    double t0 = MPI_Wtime();
    std::vector<float> flat(b.shard * d, 0.0f);
    size_t at = 0;
    for (Param* p : b.params) {
      std::copy(p->grad.data.begin(), p->grad.data.end(), flat.begin() + at);
      at += p->grad.data.size();
    }
    b.grad_shard.assign(b.shard, 0.0f);
    b.comm->reduce_scatter(flat.data(), b.grad_shard.data(), b.shard, DType::float32, ReduceOp::sum);
    // HSDP: the shard group's sum, summed over its replicas.
    const bool replicated = b.replica && b.replica->size() > 1;
    if (replicated)
      b.replica->all_reduce(b.grad_shard.data(), b.grad_shard.data(), b.shard, DType::float32, ReduceOp::sum);
    dp_seconds += MPI_Wtime() - t0;

    // Update the slice [lo, hi) of the flat weights, param by param (decay differs).
    t0 = MPI_Wtime();
    std::vector<float> values(b.shard * d, 0.0f);
    at = 0;
    for (Param* p : b.params) {
      const size_t n = p->value.data.size();
      const size_t a = std::max(at, lo), e = std::min(at + n, hi);
      if (a < e) {
        float* g = b.grad_shard.data() + (a - lo);
        if (!(tp_replicated(*p) && me.tp != 0) && !(replicated && b.replica->rank() != 0) &&
            kv_copy_counted(*p, *groups_->tp_kv)) {
          double sq = 0;
          for (size_t i = 0; i < e - a; ++i) sq += static_cast<double>(g[i]) * g[i];
          sum_sq += sq;
          if (per_tensor_sums_) zero_grad_sums_[p->name] += sq;
        }
        if (tensor_copies_)
          copies_.push_back(copy_of(*p, true, static_cast<int64_t>(a - at), g, static_cast<int64_t>(e - a)));
        adamw_update(p->value.ptr() + (a - at), g, b.m.data() + (a - lo), b.v.data() + (a - lo),
                     static_cast<int64_t>(e - a), step_ + 1, train_.adam, p->decay);
        std::copy_n(p->value.ptr() + (a - at), e - a, values.begin() + a);
      }
      at += n;
    }
    compute_seconds += MPI_Wtime() - t0;
    t0 = MPI_Wtime();
    std::vector<float> gathered(b.shard * d);
    b.comm->all_gather(values.data() + lo, gathered.data(), b.shard, DType::float32);
    at = 0;
    for (Param* p : b.params) {
      std::copy_n(gathered.begin() + at, p->value.data.size(), p->value.data.begin());
      at += p->value.data.size();
    }
    dp_seconds += MPI_Wtime() - t0;
  }
  return sum_sq;
}

std::vector<Param*> CpuExecutor::params() {
  std::vector<Param*> out;
  for (auto& c : chunks_)
    for (Param* p : c->params()) out.push_back(p);
  return out;
}

double CpuExecutor::model_state_bytes() {
  if (zero_) return zero_->state_bytes();
  double elements = 0;
  for (Param* p : params()) elements += static_cast<double>(p->value.numel());
  double adam_elements = elements;  // m and v for every weight, or a 1/d slice with ZeRO-1
  if (split_.zero >= 1) {
    adam_elements = 0;
    for (const Bucket& b : buckets_) adam_elements += static_cast<double>(b.shard);
  }
  return elements * 4.0 * 2.0 + adam_elements * 4.0 * 2.0;  // fp32 value, grad, Adam m, v
}

void CpuExecutor::reduce_gradients(double& dp_seconds) {
  if (split_.grad_replicas() == 1) return;
  const double start = MPI_Wtime();
  for (Bucket& b : buckets_)
    if (b.comm->size() > 1) all_reduce_grads(b.params, *b.comm);
  dp_seconds += MPI_Wtime() - start;
}

void CpuExecutor::all_reduce_grads(const std::vector<Param*>& ps, Communicator& comm) {
  if (ps.empty()) return;
  // One flat buffer: a single all-reduce instead of one per tensor.
  size_t total = 0;
  for (Param* p : ps) total += p->grad.data.size();
  std::vector<float> flat(total);
  size_t at = 0;
  for (Param* p : ps) {
    std::copy(p->grad.data.begin(), p->grad.data.end(), flat.begin() + at);
    at += p->grad.data.size();
  }
  comm.all_reduce(flat.data(), flat.data(), flat.size(), DType::float32, ReduceOp::sum);
  at = 0;
  for (Param* p : ps) {
    std::copy_n(flat.begin() + at, p->grad.data.size(), p->grad.data.begin());
    at += p->grad.data.size();
  }
}

double CpuExecutor::global_sum_squares(bool grads) {
  double local = 0;
  for (Param* p : params())
    if (counted_in_norms(*p, groups_->coord, *groups_->tp_kv)) local += sum_squares(grads ? p->grad : p->value);
  groups_->world->all_reduce(&local, &local, 1, DType::float64, ReduceOp::sum);
  return local;
}

StepStats CpuExecutor::step(TimeBreakdown* time) {
  const double start = MPI_Wtime();
  TimeBreakdown t;
  const RankCoord& me = groups_->coord;
  const int m = split_.microbatches, b = split_.micro_batch_size;
  // This DP replica's sequences; with CP, this CP rank's chunks of each of them.
  const Batch local = cp_local_batch(data_.batch(step_, me.dp * m * b, m * b), split_.cp, me.cp);
  const int global_sequences = split_.dp * m * b;
  LossScale scale;
  scale.ce_per_token = 1.0f / static_cast<float>(static_cast<int64_t>(global_sequences) * model_.seq_len);
  scale.aux_per_sequence = model_.aux_loss_coeff / global_sequences;

  MpiTpReducer tp(*groups_->tp, split_.sequence_parallel, t.tp);
  MpiExpertExchange ep(*groups_->ep, t.ep);
  MpiContextExchange cp(*groups_->cp, split_.cp_comm == CpComm::ring, t.cp);
  // The gradients accumulate over microbatches from zero: AdamW's pass cleared them at
  // the end of the previous step (below) unless this executor has no optimizer.
  if (!grads_clear_)
    for (Param* p : params()) p->grad.zero();
  grads_clear_ = false;
  CpuPipelineBackend pipe(chunks_, local, scale, *groups_->pp, tp, ep, split_.cp > 1 ? &cp : nullptr, b,
                          static_cast<int64_t>(b) * local.seq_len / (split_.sequence_parallel ? split_.tp : 1),
                          model_.hidden, spare_caches_, zero_.get(), schedule_.split_backward());
  if (zero_) zero_->set_timer(&t.dp);
  walk_pipeline(schedule_, me.pp, pipe, t);
  const double ce_sum = pipe.ce_sum, balance_sum = pipe.balance_sum;
  const auto& loads = pipe.loads;

  if (!zero_) {  // replicated KV heads: their shares summed (ZeRO-2/3: in each unit's backward)
    const double t0 = MPI_Wtime();
    sum_kv_replica_grads(params(), *groups_->tp_kv);
    t.tp += MPI_Wtime() - t0;
  }
  if (split_.sequence_parallel && !zero_) {  // (ZeRO-2/3 sum them in each unit's backward)
    // Norm weights saw only this rank's rows: their gradients are partial over TP.
    const double t0 = MPI_Wtime();
    for (Param* p : params())
      if (p->name.find("norm.") != std::string::npos)
        groups_->tp->all_reduce(p->grad.ptr(), p->grad.ptr(), p->grad.data.size(), DType::float32, ReduceOp::sum);
    t.tp += MPI_Wtime() - t0;
  }
  apply_grad_fault();
  zero_grad_sums_.clear();
  copies_.clear();
  double zero1_grad_sq = 0;
  if (zero_) {
    zero1_grad_sq = zero_->finish_gradients(per_tensor_sums_ ? &zero_grad_sums_ : nullptr);
    take_grad_copies();                                // (the update clears the shards' gradients)
    zero_->update(step_ + 1, train_.adam, t.compute);  // (ZeRO-2's weight gather counts as dp)
  } else if (split_.zero >= 1) {
    zero1_grad_sq = zero1_reduce_and_update(t.dp, t.compute);  // also updates the weights
  } else {
    reduce_gradients(t.dp);
    take_grad_copies();
  }

  // Step statistics, identical on every rank. Loss terms: the head's CE once per
  // (dp, pp-last) rank, i.e. from tp rank 0; balance terms likewise from tp rank 0.
  const double t_other = MPI_Wtime();
  double sums[2] = {me.tp == 0 ? ce_sum : 0.0, me.tp == 0 ? balance_sum : 0.0};
  groups_->world->all_reduce(sums, sums, 2, DType::float64, ReduceOp::sum);
  StepStats stats;
  stats.step = step_;
  stats.tokens = static_cast<int64_t>(global_sequences) * model_.seq_len;
  stats.loss = sums[0] / static_cast<double>(stats.tokens);
  stats.aux_loss = scale.aux_per_sequence * sums[1];
  if (split_.zero >= 1) {
    groups_->world->all_reduce(&zero1_grad_sq, &zero1_grad_sq, 1, DType::float64, ReduceOp::sum);
    stats.grad_norm = std::sqrt(zero1_grad_sq);
  }
  t.other += MPI_Wtime() - t_other;

  const double t_opt = MPI_Wtime();
  // Without ZeRO both norms come out of AdamW's pass over the weights (SquareSums).
  std::vector<SquareSums> update_sums;
  if (optimizer_) {
    optimizer_->step(&update_sums, /*clear_grads=*/true);  // nothing reads the gradients after it
    grads_clear_ = true;
  }
  // Aux-loss-free balancing: the load over the whole global batch (sum over dp and cp;
  // TP peers route identically and are not summed).
  for (size_t c = 0; c < chunks_.size(); ++c) {
    std::vector<MoeLayer*> moe = chunks_[c]->moe_layers();
    for (size_t i = 0; i < moe.size(); ++i) {
      std::vector<double> l(loads[c][i].begin(), loads[c][i].end());
      groups_->dp_cp->all_reduce(l.data(), l.data(), l.size(), DType::float64, ReduceOp::sum);
      std::vector<int64_t> total(l.begin(), l.end());
      moe[i]->update_bias(total);
    }
  }
  t.compute += MPI_Wtime() - t_opt;
  const double t_norm = MPI_Wtime();
  if (zero_) {
    double sq = zero_->weight_sum_squares();
    groups_->world->all_reduce(&sq, &sq, 1, DType::float64, ReduceOp::sum);
    stats.param_norm = std::sqrt(sq);
  } else if (optimizer_) {
    // The counted weights' sums in params() order (the optimizer's), as global_sum_squares adds them.
    const std::vector<Param*> ps = params();
    double sq[2] = {0.0, 0.0};  // gradients, values
    for (size_t i = 0; i < ps.size(); ++i)
      if (counted_in_norms(*ps[i], me, *groups_->tp_kv)) {
        sq[0] += update_sums[i].grad;
        sq[1] += update_sums[i].value;
      }
    groups_->world->all_reduce(sq, sq, 2, DType::float64, ReduceOp::sum);
    stats.grad_norm = std::sqrt(sq[0]);
    stats.param_norm = std::sqrt(sq[1]);
  } else {
    stats.param_norm = std::sqrt(global_sum_squares(false));
  }
  if (per_tensor_sums_) stats.tensors = tensor_sums(update_sums);
  take_value_copies();
  stats.copies = std::move(copies_);
  copies_.clear();
  t.other += MPI_Wtime() - t_norm;
  t.total = MPI_Wtime() - start;
  stats.seconds = t.total;
  if (time) *time = t;
  ++step_;
  return stats;
}

}  // namespace ibt::models
