// How many calls of the measured op the harness makes before the first timed one. imb
// timing runs IMB-MPI1's untimed pass of -n calls and then the -w warm-ups, as IMB does
// for every benchmark and size (the first calls of a new size take page faults inside
// the MPI library; without that pass imb read 1.5-3x IMB at 128 B-4 KiB); loop timing
// (nccl-tests') runs the warm-ups only. Runs under mpiexec on one rank, with the real
// MPI backend and ops, each wrapped to count.
#include <gtest/gtest.h>
#include <mpi.h>

#include "collectives/arrival_gate.hpp"
#include "collectives/collective.hpp"
#include "collectives/domains.hpp"
#include "collectives/harness.hpp"
#include "collectives/mpi_backend.hpp"

namespace ibt {
namespace {

// A real op that counts its calls.
class CountingOp final : public Collective {
 public:
  explicit CountingOp(const Collective& real) : real_(real) {}
  std::string_view name() const override { return real_.name(); }
  bool reduces() const override { return real_.reduces(); }
  bool supports(Placement p) const override { return real_.supports(p); }
  int required_group_size() const override { return real_.required_group_size(); }
  OpShape shape(std::size_t bytes, int n, std::size_t elem) const override { return real_.shape(bytes, n, elem); }
  double bus_factor(int n) const override { return real_.bus_factor(n); }
  double time_divisor() const override { return real_.time_divisor(); }
  void run(Communicator& comm, const void* send, void* recv, const OpShape& s, DType t, ReduceOp op,
           int root) const override {
    ++calls;
    real_.run(comm, send, recv, s, t, op, root);
  }
  double expected(int rank, std::size_t i, int n, const OpShape& s, ReduceOp op, int root) const override {
    return real_.expected(rank, i, n, s, op, root);
  }
  mutable int calls = 0;
  int calls_before_timing = -1;  // op calls when a timer first began

 private:
  const Collective& real_;
};

// The backend's timer, noting the op's call count at the first begin() of any timer.
class SpyTimer final : public IterationTimer {
 public:
  SpyTimer(std::unique_ptr<IterationTimer> real, CountingOp& op) : real_(std::move(real)), op_(op) {}
  void begin(int i) override {
    if (op_.calls_before_timing < 0) op_.calls_before_timing = op_.calls;
    real_->begin(i);
  }
  void end(int i) override { real_->end(i); }
  std::vector<double> durations() override { return real_->durations(); }
  double total() override { return real_->total(); }

 private:
  std::unique_ptr<IterationTimer> real_;
  CountingOp& op_;
};

class SpyBackend final : public Backend {
 public:
  explicit SpyBackend(CountingOp& op) : op_(op) {}
  std::string name() const override { return real_.name(); }
  Communicator& world() override { return real_.world(); }
  std::unique_ptr<Communicator> split(int color, int key) override { return real_.split(color, key); }
  void* allocate(std::size_t bytes) override { return real_.allocate(bytes); }
  void release(void* buffer) override { real_.release(buffer); }
  void upload(void* buffer, const void* host, std::size_t bytes) override { real_.upload(buffer, host, bytes); }
  void download(void* host, const void* buffer, std::size_t bytes) override { real_.download(host, buffer, bytes); }
  std::unique_ptr<IterationTimer> make_timer(Communicator& comm, int iterations) override {
    return std::make_unique<SpyTimer>(real_.make_timer(comm, iterations), op_);
  }
  bool supports(DType t) const override { return real_.supports(t); }
  std::vector<std::pair<std::string, std::string>> provenance() const override { return real_.provenance(); }

 private:
  MpiBackend real_;
  CountingOp& op_;
};

// One measurement of `op_name` (64 B, float32, out of place, one buffer reused) with
// -n iters -w warmups: the op's calls before the first timed one.
int calls_before_timing(std::string_view op_name, TimingMode timing, int iters, int warmups) {
  CountingOp op(find_collective(op_name));
  SpyBackend backend(op);
  HarnessOptions opt;
  opt.ops = {&op};
  opt.scopes = {Scope::world};
  opt.dtypes = {DType::float32};
  opt.sizes = {64};
  opt.placements = {Placement::out_of_place};
  opt.iters = iters;
  opt.warmup_iters = warmups;
  opt.check = false;
  opt.check_iters = 0;
  opt.timing = timing;
  opt.rotate_bytes = 0;
  opt.aggregation = RankAggregation::avg;
  const DomainLayout layout = detect_domains(MPI_COMM_WORLD, 0);
  ArrivalGate gate(MPI_COMM_WORLD);
  run_harness(backend, MPI_COMM_WORLD, layout, opt, gate, nullptr, {});
  return op.calls_before_timing;
}

TEST(HarnessSchedule, ImbRunsAnUntimedPassOfItersCallsBeforeTheWarmUp) {
  // all_reduce is timed call by call behind barriers, send_recv as a loop (as IMB's
  // Allreduce and Sendrecv): both get the pass.
  EXPECT_EQ(calls_before_timing("all_reduce", TimingMode::imb, 8, 2), 8 + 2);
  EXPECT_EQ(calls_before_timing("send_recv", TimingMode::imb, 8, 2), 8 + 2);
  EXPECT_EQ(calls_before_timing("all_reduce", TimingMode::imb, 30, 3), 30 + 3);
}

TEST(HarnessSchedule, ImbRunsThePassEvenWithoutWarmUp) {
  // IMB's pass is not its warm-up: -warm_up off leaves it in place.
  EXPECT_EQ(calls_before_timing("all_reduce", TimingMode::imb, 8, 0), 8);
}

TEST(HarnessSchedule, LoopRunsOnlyTheWarmUp) {
  EXPECT_EQ(calls_before_timing("all_reduce", TimingMode::loop, 8, 2), 2);
  EXPECT_EQ(calls_before_timing("send_recv", TimingMode::loop, 8, 3), 3);
}

}  // namespace
}  // namespace ibt

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int failed = RUN_ALL_TESTS();
  MPI_Finalize();
  return failed;
}
