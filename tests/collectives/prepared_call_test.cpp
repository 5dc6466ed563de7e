// Collective::prepare and Communicator::prepare make the call run() makes. A communicator
// that records its calls stands in for MPI and NCCL here; the mpiexec tests
// (collectives_all_ops_*, collectives_scopes_*) check MPI's prepared calls' results.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectives/collective.hpp"

namespace ibt {
namespace {

struct Recorded {
  std::string method;
  const void* send;
  const void* recv;
  std::size_t count;
  DType dtype;
  ReduceOp op;
  int peer;  // root, dst or -1
  int src;   // send_recv's source, or -1
  bool operator==(const Recorded&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Recorded& r) {
  return os << r.method << "(count " << r.count << ", peer " << r.peer << ", src " << r.src << ")";
}

// Rank 1 of 4; records every method call and prepares nothing itself (the default).
class RecordingCommunicator final : public Communicator {
 public:
  int rank() const override { return 1; }
  int size() const override { return 4; }
  int world_rank_of(int group_rank) const override { return group_rank; }
  void all_reduce(const void* s, void* r, std::size_t n, DType t, ReduceOp op) override {
    calls.push_back({"all_reduce", s, r, n, t, op, -1, -1});
  }
  void all_gather(const void* s, void* r, std::size_t n, DType t) override {
    calls.push_back({"all_gather", s, r, n, t, ReduceOp::sum, -1, -1});
  }
  void reduce_scatter(const void* s, void* r, std::size_t n, DType t, ReduceOp op) override {
    calls.push_back({"reduce_scatter", s, r, n, t, op, -1, -1});
  }
  void all_to_all(const void* s, void* r, std::size_t n, DType t) override {
    calls.push_back({"all_to_all", s, r, n, t, ReduceOp::sum, -1, -1});
  }
  void all_to_allv(const void*, const std::vector<std::size_t>&, const std::vector<std::size_t>&, void*,
                   const std::vector<std::size_t>&, const std::vector<std::size_t>&, DType) override {
    calls.push_back({"all_to_allv", nullptr, nullptr, 0, DType::float32, ReduceOp::sum, -1, -1});
  }
  void broadcast(void* b, std::size_t n, DType t, int root) override {
    calls.push_back({"broadcast", nullptr, b, n, t, ReduceOp::sum, root, -1});
  }
  void send_recv(const void* s, std::size_t n, int dst, void* r, std::size_t m, int src, DType t) override {
    EXPECT_EQ(n, m);
    calls.push_back({"send_recv", s, r, n, t, ReduceOp::sum, dst, src});
  }
  void send(const void* b, std::size_t n, DType t, int dst) override {
    calls.push_back({"send", b, nullptr, n, t, ReduceOp::sum, dst, -1});
  }
  void recv(void* b, std::size_t n, DType t, int src) override {
    calls.push_back({"recv", nullptr, b, n, t, ReduceOp::sum, -1, src});
  }
  void barrier() override {}
  double now() const override { return 0; }
  std::string backend_name() const override { return "recording"; }

  std::vector<Recorded> calls;
};

TEST(PreparedCall, EveryCollectiveMakesTheCallsItsRunMakes) {
  char send[64], recv[64];
  for (const auto& op : all_collectives()) {
    SCOPED_TRACE(std::string(op->name()));
    RecordingCommunicator by_run, by_prepared;
    const OpShape shape = op->shape(64, 4, 4);
    op->run(by_run, send, recv, shape, DType::float32, ReduceOp::max, 2);
    const auto call = op->prepare(by_prepared, shape, DType::float32, ReduceOp::max, 2);
    EXPECT_TRUE(by_prepared.calls.empty()) << "prepare() makes no call";
    (*call)(send, recv);
    (*call)(send, recv);  // and makes it again each time
    ASSERT_FALSE(by_run.calls.empty());
    std::vector<Recorded> twice = by_run.calls;
    twice.insert(twice.end(), by_run.calls.begin(), by_run.calls.end());
    EXPECT_EQ(by_prepared.calls, twice);
  }
}

TEST(PreparedCall, SingleCallsDescribeTheMethodAndItsArguments) {
  RecordingCommunicator comm;
  char send[64], recv[64];
  const OpShape shape = find_collective("send_recv").shape(64, 4, 4);
  find_collective("send_recv").run(comm, send, recv, shape, DType::float32, ReduceOp::sum, 0);
  // Rank 1 of 4 sends to 2 and receives from 0.
  EXPECT_EQ(comm.calls.at(0), (Recorded{"send_recv", send, recv, 16, DType::float32, ReduceOp::sum, 2, 0}));
  comm.calls.clear();
  find_collective("broadcast").run(comm, send, recv, shape, DType::float32, ReduceOp::sum, 3);
  EXPECT_EQ(comm.calls.at(0), (Recorded{"broadcast", nullptr, recv, 16, DType::float32, ReduceOp::sum, 3, -1}));
  // ping_pong makes two calls that depend on the rank, so it has no single call.
  EXPECT_FALSE(find_collective("ping_pong").single_call(comm, shape, DType::float32, ReduceOp::sum, 0));
}

}  // namespace
}  // namespace ibt
