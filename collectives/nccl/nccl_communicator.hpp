#pragma once
// The NCCL backend's communicator: each collective is one NCCL call (all-to-all and the
// point-to-point ops are grouped ncclSend/ncclRecv) queued on the rank's communication
// stream. Calls return once queued; synchronize() waits under the watchdog. Buffers are
// device memory. With CUDA graphs on, each distinct call (op, buffers, sizes) is captured
// once and replayed as a graph, as nccl-tests does with -G.
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/nccl/nccl_runtime.hpp"

namespace ibt::gpu {

ncclDataType_t nccl_datatype(DType t);
ncclRedOp_t nccl_op(ReduceOp op);

class NcclCommunicator final : public Communicator {
 public:
  // Takes ownership of comm (already registered with the runtime) and of group (the
  // same ranks as an MPI communicator, for barriers and rank translation).
  NcclCommunicator(std::shared_ptr<NcclRuntime> runtime, ncclComm_t comm, MPI_Comm group);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  ncclComm_t handle() const { return comm_; }
  NcclRuntime& runtime() { return *runtime_; }
  MPI_Comm mpi_group() const { return group_; }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int world_rank_of(int group_rank) const override { return world_ranks_.at(group_rank); }

  void all_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) override;
  void all_gather(const void* send, void* recv, std::size_t count, DType t) override;
  void reduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) override;
  void all_to_all(const void* send, void* recv, std::size_t count, DType t) override;
  void all_to_allv(const void* send, const std::vector<std::size_t>& send_counts,
                   const std::vector<std::size_t>& send_displs, void* recv, const std::vector<std::size_t>& recv_counts,
                   const std::vector<std::size_t>& recv_displs, DType t) override;
  void broadcast(void* buf, std::size_t count, DType t, int root) override;
  void send_recv(const void* send, std::size_t send_count, int dst, void* recv, std::size_t recv_count, int src,
                 DType t) override;
  void send(const void* buf, std::size_t count, DType t, int dst) override;
  void recv(void* buf, std::size_t count, DType t, int src) override;
  void barrier() override;
  void synchronize() override { runtime_->wait_stream(); }
  double now() const override { return MPI_Wtime(); }
  std::string backend_name() const override { return "nccl"; }

 private:
  // Queues one op: `enqueue` issues the NCCL calls; `make_key` names the call exactly
  // (for graph reuse; built only when graphs are on) and `label` names it in errors.
  template <typename MakeKey, typename Enqueue>
  void launch(MakeKey&& make_key, std::string label, Enqueue&& enqueue);
  // One side of a point-to-point transfer with one peer.
  struct Transfer {
    int peer;
    void* buffer;
    std::size_t count;
  };
  // Issues the sends and receives as one NCCL group.
  void grouped(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs, DType t);
  void* scratch(std::size_t bytes);
  void clear_graphs();
  std::string label(const char* op, std::size_t bytes, DType t) const;

  std::shared_ptr<NcclRuntime> runtime_;
  ncclComm_t comm_;
  MPI_Comm group_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<int> world_ranks_;
  std::unordered_map<std::string, cudaGraphExec_t> graphs_;
  unsigned long graphs_generation_ = 0;  // runtime's release generation the graphs belong to
  void* scratch_ = nullptr;              // staging copy for in-place all-to-all
  std::size_t scratch_bytes_ = 0;
};

}  // namespace ibt::gpu
