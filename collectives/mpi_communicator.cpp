#include "collectives/mpi_communicator.hpp"

#include <climits>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

#include "collectives/mpi_types.hpp"
#include "core/errors.hpp"

namespace ibt {
namespace {

// The refusals are out of line and the checks inline, so a call that passes them (every
// timed one) pays a compare, not a function call: a few ns of an 8-byte MPI call's 300.
[[noreturn]] void refuse_count(std::size_t count) {
  throw UsageError("element count " + std::to_string(count) +
                   " exceeds the MPI int count limit (2^31-1); use a larger dtype or smaller size");
}

[[noreturn]] void refuse_call(int rc, const char* what) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw RuntimeError(std::string(what) + " failed: " + std::string(text, len));
}

// MPI counts are int: refuse what does not fit rather than truncate silently.
inline int checked_count(std::size_t count) {
  if (count > static_cast<std::size_t>(INT_MAX)) [[unlikely]]
    refuse_count(count);
  return static_cast<int>(count);
}

inline void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) [[unlikely]]
    refuse_call(rc, what);
}

std::vector<int> to_int_vector(const std::vector<std::size_t>& v) {
  std::vector<int> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = checked_count(v[i]);
  return out;
}

constexpr int kPointToPointTag = 7001;

constexpr const char* kSiteCalls[] = {"MPI_Allreduce", "MPI_Allgather", "MPI_Reduce_scatter_block",
                                      "MPI_Alltoall",  "MPI_Alltoallv", "MPI_Bcast",
                                      "MPI_Sendrecv",  "MPI_Send",      "MPI_Recv",
                                      "MPI_Barrier"};

}  // namespace

// Publishes the call in flight for the watchdog (op_in_flight.hpp) while it runs.
class InFlight {
 public:
  InFlight(const MpiCommunicator& c, int site, int peer_group_rank = -1) {
    set_op_in_flight(&c.sites_[static_cast<std::size_t>(site)], c.peer_world_rank(peer_group_rank));
  }
  ~InFlight() { clear_op_in_flight(); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
};

MpiCommunicator::MpiCommunicator(MPI_Comm comm) : comm_(comm) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  // Errors come back as codes (turned into exceptions) rather than aborting the job,
  // so a failure can be recorded before the job ends.
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Group group, world_group;
  MPI_Comm_group(comm_, &group);
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  std::vector<int> mine(size_);
  std::iota(mine.begin(), mine.end(), 0);
  world_ranks_.resize(size_);
  MPI_Group_translate_ranks(group, size_, mine.data(), world_group, world_ranks_.data());
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  set_label("");
}

void MpiCommunicator::set_label(const std::string& label) {
  std::string members;
  for (std::size_t i = 0; i < world_ranks_.size() && i < 16; ++i)
    members += (i ? ", " : "") + std::to_string(world_ranks_[i]);
  if (world_ranks_.size() > 16) members += ", ... (" + std::to_string(world_ranks_.size()) + " ranks)";
  const std::string group = (label.empty() ? "a group" : "the " + label + " group") + " (world ranks " + members + ")";
  for (int i = 0; i < kSiteCount; ++i)
    sites_[static_cast<std::size_t>(i)].text = std::string(kSiteCalls[i]) + " on " + group;
}

MpiCommunicator::~MpiCommunicator() {
  if (comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_NULL) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
}

int MpiCommunicator::world_rank_of(int group_rank) const { return world_ranks_.at(group_rank); }

int MpiCommunicator::peer_world_rank(int group_rank) const {
  return group_rank >= 0 && group_rank < size_ ? world_ranks_[static_cast<std::size_t>(group_rank)] : -1;
}

namespace {

// The MPI call behind each single-call collective, its arguments resolved (in its
// constructor, the one place each is): a method builds one for each call it makes,
// prepare() one for a measurement's many.
struct AllreduceCall {
  AllreduceCall(MPI_Comm group, std::size_t elements, DType t, ReduceOp reduce_op)
      : comm(group), count(checked_count(elements)), type(mpi_datatype(t)), op(mpi_op(t, reduce_op)) {}
  MPI_Comm comm;
  int count;
  MPI_Datatype type;
  MPI_Op op;
  void operator()(const void* send, void* recv) const {
    const void* in = send == recv ? MPI_IN_PLACE : send;
    check(MPI_Allreduce(in, recv, count, type, op, comm), "MPI_Allreduce");
  }
};

struct AllgatherCall {
  AllgatherCall(MPI_Comm group, int rank, std::size_t elements, DType t)
      : comm(group), count(checked_count(elements)), type(mpi_datatype(t)), slot_offset(rank * elements * size_of(t)) {}
  MPI_Comm comm;
  int count;
  MPI_Datatype type;
  std::size_t slot_offset;  // this rank's block of the output, in bytes
  void operator()(const void* send, void* recv) const {
    // In place as NCCL defines it: this rank's contribution already sits at its slot.
    const void* in = send == static_cast<const char*>(recv) + slot_offset ? MPI_IN_PLACE : send;
    check(MPI_Allgather(in, count, type, recv, count, type, comm), "MPI_Allgather");
  }
};

struct ReduceScatterCall {
  ReduceScatterCall(MPI_Comm group, int rank, std::size_t elements, DType t, ReduceOp reduce_op)
      : comm(group),
        count(checked_count(elements)),
        type(mpi_datatype(t)),
        op(mpi_op(t, reduce_op)),
        slot_offset(rank * elements * size_of(t)),
        bytes(elements * size_of(t)) {}
  MPI_Comm comm;
  int count;
  MPI_Datatype type;
  MPI_Op op;
  std::size_t slot_offset;  // this rank's block of the input, in bytes
  std::size_t bytes;        // one block
  void operator()(const void* send, void* recv) const {
    if (recv == static_cast<const char*>(send) + slot_offset) {
      // NCCL's in-place reduce-scatter leaves the result in this rank's slot of the input;
      // MPI's leaves it at the start of the buffer, so move it (part of the timed op).
      check(MPI_Reduce_scatter_block(MPI_IN_PLACE, const_cast<void*>(send), count, type, op, comm),
            "MPI_Reduce_scatter_block");
      if (slot_offset != 0) std::memmove(recv, send, bytes);
      return;
    }
    check(MPI_Reduce_scatter_block(send, recv, count, type, op, comm), "MPI_Reduce_scatter_block");
  }
};

struct AlltoallCall {
  AlltoallCall(MPI_Comm group, std::size_t elements, DType t)
      : comm(group), count(checked_count(elements)), type(mpi_datatype(t)) {}
  MPI_Comm comm;
  int count;
  MPI_Datatype type;
  void operator()(const void* send, void* recv) const {
    const void* in = send == recv ? MPI_IN_PLACE : send;
    check(MPI_Alltoall(in, count, type, recv, count, type, comm), "MPI_Alltoall");
  }
};

struct BcastCall {
  BcastCall(MPI_Comm group, std::size_t elements, DType t, int root_rank)
      : comm(group), count(checked_count(elements)), type(mpi_datatype(t)), root(root_rank) {}
  MPI_Comm comm;
  int count;
  MPI_Datatype type;
  int root;
  void operator()(const void*, void* buf) const { check(MPI_Bcast(buf, count, type, root, comm), "MPI_Bcast"); }
};

struct SendrecvCall {
  SendrecvCall(MPI_Comm group, std::size_t send_elements, int to, std::size_t recv_elements, int from, DType t)
      : comm(group),
        send_count(checked_count(send_elements)),
        dst(to),
        recv_count(checked_count(recv_elements)),
        src(from),
        type(mpi_datatype(t)) {}
  MPI_Comm comm;
  int send_count, dst, recv_count, src;
  MPI_Datatype type;
  void operator()(const void* send, void* recv) const {
    check(MPI_Sendrecv(send, send_count, type, dst, kPointToPointTag, recv, recv_count, type, src, kPointToPointTag,
                       comm, MPI_STATUS_IGNORE),
          "MPI_Sendrecv");
  }
};

}  // namespace

void MpiCommunicator::all_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) {
  InFlight in_flight(*this, kAllreduce);
  AllreduceCall(comm_, count, t, op)(send, recv);
}

void MpiCommunicator::all_gather(const void* send, void* recv, std::size_t count, DType t) {
  InFlight in_flight(*this, kAllgather);
  AllgatherCall(comm_, rank_, count, t)(send, recv);
}

void MpiCommunicator::reduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) {
  InFlight in_flight(*this, kReduceScatter);
  ReduceScatterCall(comm_, rank_, count, t, op)(send, recv);
}

void MpiCommunicator::all_to_all(const void* send, void* recv, std::size_t count, DType t) {
  InFlight in_flight(*this, kAlltoall);
  AlltoallCall(comm_, count, t)(send, recv);
}

void MpiCommunicator::all_to_allv(const void* send, const std::vector<std::size_t>& send_counts,
                                  const std::vector<std::size_t>& send_displs, void* recv,
                                  const std::vector<std::size_t>& recv_counts,
                                  const std::vector<std::size_t>& recv_displs, DType t) {
  InFlight in_flight(*this, kAlltoallv);
  const auto sc = to_int_vector(send_counts), sd = to_int_vector(send_displs);
  const auto rc = to_int_vector(recv_counts), rd = to_int_vector(recv_displs);
  check(MPI_Alltoallv(send, sc.data(), sd.data(), mpi_datatype(t), recv, rc.data(), rd.data(), mpi_datatype(t), comm_),
        "MPI_Alltoallv");
}

void MpiCommunicator::broadcast(void* buf, std::size_t count, DType t, int root) {
  InFlight in_flight(*this, kBcast);
  BcastCall(comm_, count, t, root)(nullptr, buf);
}

void MpiCommunicator::send_recv(const void* send, std::size_t send_count, int dst, void* recv, std::size_t recv_count,
                                int src, DType t) {
  InFlight in_flight(*this, kSendrecv, src);
  SendrecvCall(comm_, send_count, dst, recv_count, src, t)(send, recv);
}

void MpiCommunicator::send(const void* buf, std::size_t count, DType t, int dst) {
  InFlight in_flight(*this, kSend, dst);
  check(MPI_Send(buf, checked_count(count), mpi_datatype(t), dst, kPointToPointTag, comm_), "MPI_Send");
}

void MpiCommunicator::recv(void* buf, std::size_t count, DType t, int src) {
  InFlight in_flight(*this, kRecv, src);
  check(MPI_Recv(buf, checked_count(count), mpi_datatype(t), src, kPointToPointTag, comm_, MPI_STATUS_IGNORE),
        "MPI_Recv");
}

void MpiCommunicator::barrier() {
  InFlight in_flight(*this, kBarrier);
  check(MPI_Barrier(comm_), "MPI_Barrier");
}

namespace {

// An MPI call resolved once, published for the watchdog while it runs as the methods'
// calls are (op_in_flight.hpp).
template <class Call>
class PreparedMpiCall final : public PreparedCall {
 public:
  PreparedMpiCall(const OpSite* site, int peer_world_rank, Call call)
      : site_(site), peer_(peer_world_rank), call_(call) {}
  void operator()(const void* send, void* recv) override {
    set_op_in_flight(site_, peer_);
    call_(send, recv);
    clear_op_in_flight();
  }

 private:
  const OpSite* site_;
  int peer_;
  Call call_;
};

}  // namespace

std::unique_ptr<PreparedCall> MpiCommunicator::prepare(const CallSpec& c) {
  auto made = [&](Site site, auto call, int peer_group_rank = -1) -> std::unique_ptr<PreparedCall> {
    return std::make_unique<PreparedMpiCall<decltype(call)>>(&sites_[static_cast<std::size_t>(site)],
                                                             peer_world_rank(peer_group_rank), call);
  };
  switch (c.kind) {
    case CallSpec::Kind::all_reduce: return made(kAllreduce, AllreduceCall(comm_, c.count, c.dtype, c.op));
    case CallSpec::Kind::all_gather: return made(kAllgather, AllgatherCall(comm_, rank_, c.count, c.dtype));
    case CallSpec::Kind::reduce_scatter:
      return made(kReduceScatter, ReduceScatterCall(comm_, rank_, c.count, c.dtype, c.op));
    case CallSpec::Kind::all_to_all: return made(kAlltoall, AlltoallCall(comm_, c.count, c.dtype));
    case CallSpec::Kind::broadcast: return made(kBcast, BcastCall(comm_, c.count, c.dtype, c.root));
    case CallSpec::Kind::send_recv:
      return made(kSendrecv, SendrecvCall(comm_, c.count, c.dst, c.count, c.src, c.dtype), c.src);
  }
  throw std::logic_error("MpiCommunicator::prepare: unknown call kind");
}

}  // namespace ibt
