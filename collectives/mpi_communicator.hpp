#pragma once
// The MPI backend's communicator: each collective maps onto one standard MPI call, so
// any MPI library (MPICH by default, Open MPI with -DIBT_MPI_FLAVOR_OPENMPI=ON) runs it.
#include <mpi.h>

#include <array>
#include <string>

#include "collectives/communicator.hpp"
#include "collectives/op_in_flight.hpp"

namespace ibt {

class MpiCommunicator final : public Communicator {
 public:
  // Takes ownership of comm (freed on destruction) unless it is MPI_COMM_WORLD.
  explicit MpiCommunicator(MPI_Comm comm);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  MPI_Comm handle() const { return comm_; }
  // Names the group in watchdog messages ("tp", "dp", ...): op_in_flight.hpp.
  void set_label(const std::string& label);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int world_rank_of(int group_rank) const override;

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
  std::unique_ptr<PreparedCall> prepare(const CallSpec& c) override;
  double now() const override { return MPI_Wtime(); }
  std::string backend_name() const override { return "mpi"; }

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<int> world_ranks_;
  // One description per MPI call this class makes, published while the call runs.
  enum Site {
    kAllreduce,
    kAllgather,
    kReduceScatter,
    kAlltoall,
    kAlltoallv,
    kBcast,
    kSendrecv,
    kSend,
    kRecv,
    kBarrier,
    kSiteCount
  };
  std::array<OpSite, kSiteCount> sites_;
  // The world rank of a group rank, for naming a call's peer; -1 for none (or out of range).
  int peer_world_rank(int group_rank) const;
  friend class InFlight;
};

}  // namespace ibt
