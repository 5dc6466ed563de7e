#include "collectives/nccl/nccl_communicator.hpp"

#include <chrono>
#include <numeric>
#include <sstream>
#include <thread>

#include "collectives/nccl/cuda_device.hpp"
#include "core/errors.hpp"

namespace ibt::gpu {
namespace {

// A captured graph replays fixed pointers and sizes; past this many distinct calls the
// cache is dropped rather than grown without bound (sweeps touch each size only a few
// times).
constexpr std::size_t kMaxCachedGraphs = 256;

// Everything that makes two calls the same call, as one string.
template <typename... Args>
std::string call_key(const char* op, const Args&... args) {
  std::ostringstream key;
  key << op;
  ((key << '|' << args), ...);
  return key.str();
}

std::string join(const std::vector<std::size_t>& v) {
  std::string s;
  for (std::size_t x : v) s += std::to_string(x) + ',';
  return s;
}

std::size_t sum(const std::vector<std::size_t>& v) { return std::accumulate(v.begin(), v.end(), std::size_t{0}); }

}  // namespace

ncclDataType_t nccl_datatype(DType t) {
  switch (t) {
    case DType::float32: return ncclFloat32;
    case DType::float64: return ncclFloat64;
    case DType::int32: return ncclInt32;
    case DType::bfloat16: return ncclBfloat16;
    case DType::float16: return ncclFloat16;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
    case DType::fp8_e4m3: return ncclFloat8e4m3;
    case DType::fp8_e5m2: return ncclFloat8e5m2;
#endif
    default: break;
  }
  throw UsageError("dtype " + std::string(to_string(t)) + " is not supported by this NCCL build");
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
    case ReduceOp::prod: return ncclProd;
    case ReduceOp::avg: return ncclAvg;
  }
  throw UsageError("unknown reduction op");
}

NcclCommunicator::NcclCommunicator(std::shared_ptr<NcclRuntime> runtime, ncclComm_t comm, MPI_Comm group)
    : runtime_(std::move(runtime)), comm_(comm), group_(group) {
  check_nccl(ncclCommUserRank(comm_, &rank_), "ncclCommUserRank", comm_);
  check_nccl(ncclCommCount(comm_, &size_), "ncclCommCount", comm_);
  int mpi_rank = 0, mpi_size = 0;
  MPI_Comm_rank(group_, &mpi_rank);
  MPI_Comm_size(group_, &mpi_size);
  if (mpi_rank != rank_ || mpi_size != size_)
    throw RuntimeError("NCCL communicator (rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                       ") does not match its MPI group (rank " + std::to_string(mpi_rank) + " of " +
                       std::to_string(mpi_size) + ")");
  MPI_Group mine, world;
  MPI_Comm_group(group_, &mine);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  std::vector<int> ranks(size_);
  std::iota(ranks.begin(), ranks.end(), 0);
  world_ranks_.resize(size_);
  MPI_Group_translate_ranks(mine, size_, ranks.data(), world, world_ranks_.data());
  MPI_Group_free(&mine);
  MPI_Group_free(&world);
}

NcclCommunicator::~NcclCommunicator() {
  // Let queued work finish before graphs and the staging buffer go away; the wait is
  // the watchdog's, so a destructor run while unwinding from an error cannot hang (on
  // timeout it aborts every communicator, and there is nothing left to finalize).
  if (!runtime_->aborted()) {
    try {
      runtime_->wait_stream();
    } catch (const std::exception&) {
    }
  }
  clear_graphs();
  if (!runtime_->aborted()) {
    runtime_->remove(comm_);
    // Non-blocking finalize, polled for at most the timeout; a communicator that cannot
    // finalize (a peer is gone) is aborted instead of hanging the destructor.
    ncclResult_t state = ncclCommFinalize(comm_);
    const auto start = std::chrono::steady_clock::now();
    while (state == ncclInProgress &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < runtime_->timeout_s()) {
      std::this_thread::yield();
      ncclCommGetAsyncError(comm_, &state);
    }
    if (state == ncclSuccess)
      ncclCommDestroy(comm_);
    else
      ncclCommAbort(comm_);
  }
  if (scratch_) cudaFree(scratch_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && group_ != MPI_COMM_NULL) MPI_Comm_free(&group_);
}

std::string NcclCommunicator::label(const char* op, std::size_t bytes, DType t) const {
  return std::string(op) + " of " + std::to_string(bytes) + " B (" + std::string(to_string(t)) + ") on a group of " +
         std::to_string(size_) + " rank(s)";
}

void NcclCommunicator::clear_graphs() {
  // Every graph was launched on the one stream, and memory is released only after the
  // stream drained, so none of them is still running here.
  for (auto& [key, exec] : graphs_) cudaGraphExecDestroy(exec);
  graphs_.clear();
}

template <typename MakeKey, typename Enqueue>
void NcclCommunicator::launch(MakeKey&& make_key, std::string what, Enqueue&& enqueue) {
  runtime_->set_current_op(std::move(what));
  const cudaStream_t stream = runtime_->stream();
  if (!runtime_->cuda_graph()) {
    enqueue();
    return;
  }
  if (graphs_generation_ != runtime_->release_generation()) {
    clear_graphs();
    graphs_generation_ = runtime_->release_generation();
  }
  const std::string key = make_key();
  auto found = graphs_.find(key);
  if (found == graphs_.end()) {
    if (graphs_.size() >= kMaxCachedGraphs) {
      runtime_->wait_stream();
      clear_graphs();
    }
    check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    cudaGraph_t graph = nullptr;
    try {
      enqueue();
    } catch (...) {
      cudaStreamEndCapture(stream, &graph);
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    check_cuda(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture (" + runtime_->current_op() + ")");
    cudaGraphExec_t exec = nullptr;
    const cudaError_t rc = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    check_cuda(rc, "cudaGraphInstantiate (" + runtime_->current_op() + ")");
    found = graphs_.emplace(key, exec).first;
  }
  check_cuda(cudaGraphLaunch(found->second, stream), "cudaGraphLaunch (" + runtime_->current_op() + ")");
}

void* NcclCommunicator::scratch(std::size_t bytes) {
  if (bytes <= scratch_bytes_) return scratch_;
  // Growing frees the old buffer, which cached graphs may point at: drain and drop them.
  runtime_->wait_stream();
  clear_graphs();
  if (scratch_) check_cuda(cudaFree(scratch_), "cudaFree");
  scratch_ = nullptr;
  scratch_bytes_ = 0;
  check_cuda(cudaMalloc(&scratch_, bytes), "cudaMalloc of " + std::to_string(bytes) + " B staging buffer");
  scratch_bytes_ = bytes;
  return scratch_;
}

void NcclCommunicator::grouped(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs, DType t) {
  const ncclDataType_t dt = nccl_datatype(t);
  const cudaStream_t stream = runtime_->stream();
  // Every call between GroupStart and GroupEnd only queues; GroupEnd must run even when
  // one of them refused its arguments, so remember the first failure.
  ncclResult_t first_error = ncclGroupStart();
  for (const Transfer& s : sends) {
    if (s.count == 0) continue;
    const ncclResult_t rc = ncclSend(s.buffer, s.count, dt, s.peer, comm_, stream);
    if (first_error == ncclSuccess) first_error = rc;
  }
  for (const Transfer& r : recvs) {
    if (r.count == 0) continue;
    const ncclResult_t rc = ncclRecv(r.buffer, r.count, dt, r.peer, comm_, stream);
    if (first_error == ncclSuccess) first_error = rc;
  }
  const ncclResult_t end = ncclGroupEnd();
  check_nccl(first_error, runtime_->current_op(), comm_);
  runtime_->finish_call(comm_, end, runtime_->current_op());
}

void NcclCommunicator::all_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) {
  launch([&] { return call_key("all_reduce", send, recv, count, int(t), int(op)); },
         label("all_reduce", count * size_of(t), t),
         [&] {
           runtime_->finish_call(
               comm_, ncclAllReduce(send, recv, count, nccl_datatype(t), nccl_op(op), comm_, runtime_->stream()),
               runtime_->current_op());
         });
}

void NcclCommunicator::all_gather(const void* send, void* recv, std::size_t count, DType t) {
  // In place when send is this rank's slot of recv; NCCL detects that itself.
  launch([&] { return call_key("all_gather", send, recv, count, int(t)); },
         label("all_gather", size_ * count * size_of(t), t),
         [&] {
           runtime_->finish_call(comm_, ncclAllGather(send, recv, count, nccl_datatype(t), comm_, runtime_->stream()),
                                 runtime_->current_op());
         });
}

void NcclCommunicator::reduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) {
  launch([&] { return call_key("reduce_scatter", send, recv, count, int(t), int(op)); },
         label("reduce_scatter", size_ * count * size_of(t), t),
         [&] {
           runtime_->finish_call(
               comm_, ncclReduceScatter(send, recv, count, nccl_datatype(t), nccl_op(op), comm_, runtime_->stream()),
               runtime_->current_op());
         });
}

void NcclCommunicator::all_to_all(const void* send, void* recv, std::size_t count, DType t) {
  const std::size_t block = count * size_of(t);
  const std::size_t total = block * size_;
  // NCCL has no in-place all-to-all: stage the input in a scratch buffer first. The copy
  // is part of the timed op, as the MPI backend's in-place move is.
  const bool in_place = send == recv;
  const char* source = in_place ? static_cast<const char*>(scratch(total)) : static_cast<const char*>(send);
  launch([&] { return call_key("all_to_all", send, recv, count, int(t), static_cast<const void*>(source)); },
         label("all_to_all", total, t),
         [&] {
           if (in_place)
             check_cuda(
                 cudaMemcpyAsync(const_cast<char*>(source), recv, total, cudaMemcpyDeviceToDevice, runtime_->stream()),
                 "cudaMemcpyAsync (in-place all_to_all staging)");
           std::vector<Transfer> sends, recvs;
           for (int p = 0; p < size_; ++p) {
             sends.push_back({p, const_cast<char*>(source) + p * block, count});
             recvs.push_back({p, static_cast<char*>(recv) + p * block, count});
           }
           grouped(sends, recvs, t);
         });
}

void NcclCommunicator::all_to_allv(const void* send, const std::vector<std::size_t>& send_counts,
                                   const std::vector<std::size_t>& send_displs, void* recv,
                                   const std::vector<std::size_t>& recv_counts,
                                   const std::vector<std::size_t>& recv_displs, DType t) {
  const auto n = static_cast<std::size_t>(size_);
  if (send_counts.size() != n || send_displs.size() != n || recv_counts.size() != n || recv_displs.size() != n)
    throw UsageError("all_to_allv needs one count and displacement per rank (" + std::to_string(n) + ")");
  if (send == recv) throw UsageError("all_to_allv has no in-place variant");
  const std::size_t es = size_of(t);
  launch(
      [&] {
        return call_key("all_to_allv", send, recv, int(t), join(send_counts), join(send_displs), join(recv_counts),
                        join(recv_displs));
      },
      label("all_to_allv", sum(send_counts) * es, t),
      [&] {
        std::vector<Transfer> sends, recvs;
        for (int p = 0; p < size_; ++p) {
          sends.push_back({p, const_cast<char*>(static_cast<const char*>(send)) + send_displs[p] * es, send_counts[p]});
          recvs.push_back({p, static_cast<char*>(recv) + recv_displs[p] * es, recv_counts[p]});
        }
        grouped(sends, recvs, t);
      });
}

void NcclCommunicator::broadcast(void* buf, std::size_t count, DType t, int root) {
  launch([&] { return call_key("broadcast", buf, count, int(t), root); }, label("broadcast", count * size_of(t), t),
         [&] {
           runtime_->finish_call(comm_,
                                 ncclBroadcast(buf, buf, count, nccl_datatype(t), root, comm_, runtime_->stream()),
                                 runtime_->current_op());
         });
}

void NcclCommunicator::send_recv(const void* send, std::size_t send_count, int dst, void* recv, std::size_t recv_count,
                                 int src, DType t) {
  launch([&] { return call_key("send_recv", send, send_count, dst, recv, recv_count, src, int(t)); },
         label("send_recv", send_count * size_of(t), t),
         [&] {
           grouped({{dst, const_cast<void*>(send), send_count}}, {{src, recv, recv_count}}, t);
         });
}

void NcclCommunicator::send(const void* buf, std::size_t count, DType t, int dst) {
  launch([&] { return call_key("send", buf, count, int(t), dst); }, label("send", count * size_of(t), t),
         [&] {
           grouped({{dst, const_cast<void*>(buf), count}}, {}, t);
         });
}

void NcclCommunicator::recv(void* buf, std::size_t count, DType t, int src) {
  launch([&] { return call_key("recv", buf, count, int(t), src); }, label("recv", count * size_of(t), t),
         [&] {
           grouped({}, {{src, buf, count}}, t);
         });
}

void NcclCommunicator::barrier() {
  runtime_->wait_stream();
  if (const int rc = MPI_Barrier(group_); rc != MPI_SUCCESS) throw RuntimeError("MPI_Barrier failed");
}

}  // namespace ibt::gpu
