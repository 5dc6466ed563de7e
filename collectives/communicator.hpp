#pragma once
// The communicator interface: what the microbenchmarks and the training engine ask of a
// backend (MPI on CPUs, NCCL on GPUs, sim for projection). Buffers are host memory for
// MPI and device memory for NCCL. Passing the same pointer as send and receive buffer
// asks for the in-place variant where the collective has one.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "collectives/dtype.hpp"
#include "collectives/prepared_call.hpp"

namespace ibt {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Rank of this process in MPI_COMM_WORLD (for naming ranks in messages).
  virtual int world_rank_of(int group_rank) const = 0;

  // count: elements each rank contributes and receives.
  virtual void all_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) = 0;
  // count: elements each rank contributes; recv holds size()*count.
  virtual void all_gather(const void* send, void* recv, std::size_t count, DType t) = 0;
  // count: elements each rank receives; send holds size()*count.
  virtual void reduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) = 0;
  // count: elements sent to (and received from) each peer.
  virtual void all_to_all(const void* send, void* recv, std::size_t count, DType t) = 0;
  // Variable counts and displacements in elements, one entry per peer (MoE dispatch).
  virtual void all_to_allv(const void* send, const std::vector<std::size_t>& send_counts,
                           const std::vector<std::size_t>& send_displs, void* recv,
                           const std::vector<std::size_t>& recv_counts, const std::vector<std::size_t>& recv_displs,
                           DType t) = 0;
  virtual void broadcast(void* buf, std::size_t count, DType t, int root) = 0;
  // Sends to dst and receives from src at once (ring neighbours, pipeline stages).
  virtual void send_recv(const void* send, std::size_t send_count, int dst, void* recv, std::size_t recv_count, int src,
                         DType t) = 0;
  virtual void send(const void* buf, std::size_t count, DType t, int dst) = 0;
  virtual void recv(void* buf, std::size_t count, DType t, int src) = 0;
  virtual void barrier() = 0;

  // Makes the described call through the methods above.
  void call(const CallSpec& c, const void* send, void* recv);
  // The described call ready to be made many times on changing buffers. This default makes
  // it through call(); a backend may resolve its arguments once instead (MPI does).
  virtual std::unique_ptr<PreparedCall> prepare(const CallSpec& c);
  // Completes outstanding work (a device stream for NCCL; a no-op for blocking MPI).
  virtual void synchronize() {}
  // Clock in seconds suitable for timing this backend's operations.
  virtual double now() const = 0;
  virtual std::string backend_name() const = 0;
};

}  // namespace ibt
