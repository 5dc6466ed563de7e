// The NCCL backend on one GPU (one rank: NCCL refuses two ranks on one GPU). Every op
// and placement through the Backend/Communicator interfaces the harness uses, with
// results copied back and compared element by element. Skips without a GPU.
#include "collectives/nccl/nccl_backend.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <vector>

#include "collectives/nccl/nccl_communicator.hpp"
#include "core/errors.hpp"
#include "gpu_test_support.hpp"

namespace ibt {
namespace {

// Small integers are exact in every type, fp8 e5m2 included.
double value_at(std::size_t i) { return double(int(i % 7) - 3); }

class NcclOneRank : public ::testing::TestWithParam<bool> {  // parameter: CUDA graphs on
 protected:
  void SetUp() override {
    IBT_REQUIRE_GPU();
    gpu::NcclOptions options;
    options.timeout_s = 60;
    options.cuda_graph = GetParam();
    backend_ = gpu::make_nccl_backend(MPI_COMM_WORLD, options);
  }

  std::vector<DType> dtypes() const {
    std::vector<DType> out;
    for (DType t : {DType::float32, DType::float64, DType::int32, DType::bfloat16, DType::float16, DType::fp8_e4m3,
                    DType::fp8_e5m2})
      if (backend_->supports(t)) out.push_back(t);
    return out;
  }

  // A device buffer holding value_at(offset + i) for i < count.
  void* filled(std::size_t count, DType t, std::size_t offset = 0) {
    std::vector<unsigned char> host(count * size_of(t));
    for (std::size_t i = 0; i < count; ++i) store_element(host.data(), i, t, value_at(offset + i));
    void* d = backend_->allocate(host.size());
    backend_->upload(d, host.data(), host.size());
    buffers_.push_back(d);
    return d;
  }
  void* poisoned(std::size_t count, DType t) {
    std::vector<unsigned char> host(count * size_of(t), 0x7b);
    void* d = backend_->allocate(host.size());
    backend_->upload(d, host.data(), host.size());
    buffers_.push_back(d);
    return d;
  }
  // Number of elements of `d` that differ from value_at(offset + i).
  std::size_t wrong(const void* d, std::size_t count, DType t, std::size_t offset = 0) {
    std::vector<unsigned char> host(count * size_of(t));
    backend_->download(host.data(), d, host.size());
    std::size_t bad = 0;
    for (std::size_t i = 0; i < count; ++i)
      if (load_element(host.data(), i, t) != value_at(offset + i)) ++bad;
    return bad;
  }

  void TearDown() override {
    for (void* b : buffers_) backend_->release(b);
  }

  std::unique_ptr<Backend> backend_;
  std::vector<void*> buffers_;
};

TEST_P(NcclOneRank, WorldIsOneRankAndFp8FollowsTheDevice) {
  Communicator& world = backend_->world();
  EXPECT_EQ(world.size(), 1);
  EXPECT_EQ(world.rank(), 0);
  EXPECT_EQ(world.world_rank_of(0), 0);
  EXPECT_EQ(world.backend_name(), "nccl");
  EXPECT_TRUE(backend_->supports(DType::bfloat16));
  // NCCL reduces fp8 on sm_90 and newer only.
  bool fp8_device = false;
  for (const auto& [key, value] : backend_->provenance())
    if (key == "gpu_compute_capability") fp8_device = std::stod(value) >= 9.0;
  EXPECT_EQ(backend_->supports(DType::fp8_e4m3), fp8_device);
}

TEST_P(NcclOneRank, EveryOpOutOfPlaceAndInPlace) {
  Communicator& c = backend_->world();
  constexpr std::size_t n = 1000;
  for (DType t : dtypes()) {
    SCOPED_TRACE(std::string(to_string(t)));
    for (int pass = 0; pass < 2; ++pass) {  // the second pass replays cached graphs
      void* src = filled(n, t);
      void* dst = poisoned(n, t);
      c.all_reduce(src, dst, n, t, ReduceOp::sum);
      EXPECT_EQ(wrong(dst, n, t), 0u) << "all_reduce out of place";
      void* inout = filled(n, t);
      c.all_reduce(inout, inout, n, t, ReduceOp::max);
      EXPECT_EQ(wrong(inout, n, t), 0u) << "all_reduce in place";

      dst = poisoned(n, t);
      c.all_gather(src, dst, n, t);
      EXPECT_EQ(wrong(dst, n, t), 0u) << "all_gather";
      inout = filled(n, t);
      c.all_gather(inout, inout, n, t);  // rank 0's slot is the start of the buffer
      EXPECT_EQ(wrong(inout, n, t), 0u) << "all_gather in place";

      dst = poisoned(n, t);
      c.reduce_scatter(src, dst, n, t, ReduceOp::sum);
      EXPECT_EQ(wrong(dst, n, t), 0u) << "reduce_scatter";
      inout = filled(n, t);
      c.reduce_scatter(inout, inout, n, t, ReduceOp::min);
      EXPECT_EQ(wrong(inout, n, t), 0u) << "reduce_scatter in place";

      dst = poisoned(n, t);
      c.all_to_all(src, dst, n, t);
      EXPECT_EQ(wrong(dst, n, t), 0u) << "all_to_all";
      inout = filled(n, t);
      c.all_to_all(inout, inout, n, t);
      EXPECT_EQ(wrong(inout, n, t), 0u) << "all_to_all in place";

      dst = poisoned(n, t);
      c.all_to_allv(src, {n}, {0}, dst, {n}, {0}, t);
      EXPECT_EQ(wrong(dst, n, t), 0u) << "all_to_allv";

      inout = filled(n, t);
      c.broadcast(inout, n, t, 0);
      EXPECT_EQ(wrong(inout, n, t), 0u) << "broadcast";

      dst = poisoned(n, t);
      c.send_recv(src, n, 0, dst, n, 0, t);
      EXPECT_EQ(wrong(dst, n, t), 0u) << "send_recv to itself";
      c.barrier();
    }
  }
}

TEST_P(NcclOneRank, SplitGivesAGroupOfOne) {
  auto group = backend_->split(0, 0);
  ASSERT_NE(group, nullptr);
  EXPECT_EQ(group->size(), 1);
  constexpr std::size_t n = 4096;
  void* src = filled(n, DType::float32);
  void* dst = poisoned(n, DType::float32);
  group->all_reduce(src, dst, n, DType::float32, ReduceOp::sum);
  group->synchronize();
  EXPECT_EQ(wrong(dst, n, DType::float32), 0u);
  EXPECT_EQ(backend_->split(-1, 0), nullptr) << "a negative color leaves the rank out";
}

TEST_P(NcclOneRank, TimerGivesOneDurationPerIteration) {
  Communicator& c = backend_->world();
  constexpr std::size_t n = 1 << 20;
  void* src = filled(n, DType::float32);
  void* dst = poisoned(n, DType::float32);
  auto timer = backend_->make_timer(c, 10);
  for (int i = 0; i < 10; ++i) {
    timer->begin(i);
    c.all_reduce(src, dst, n, DType::float32, ReduceOp::sum);
    timer->end(i);
  }
  const auto d = timer->durations();
  ASSERT_EQ(d.size(), 10u);
  for (double s : d) {
    EXPECT_GT(s, 0.0);
    EXPECT_LT(s, 1.0);
  }
  EXPECT_GE(timer->total(), std::accumulate(d.begin(), d.end(), 0.0) * 0.999);

  // The same call once more into a re-poisoned buffer (with graphs on: a replay of the
  // graph captured in the loop) must produce the result again.
  std::vector<unsigned char> poison(n * 4, 0x7b);
  backend_->upload(dst, poison.data(), poison.size());
  c.all_reduce(src, dst, n, DType::float32, ReduceOp::sum);
  EXPECT_EQ(wrong(dst, n, DType::float32), 0u);
}

TEST_P(NcclOneRank, ProvenanceNamesGpuDriverAndLibraries) {
  std::map<std::string, std::string> facts;
  for (const auto& [k, v] : backend_->provenance()) facts[k] = v;
  for (const char* key : {"gpu_name", "gpu_pci_bus_id", "cuda_runtime", "cuda_driver_api", "nccl_version",
                          "gpu_topology", "scale_up_domain", "rank_gpus"}) {
    ASSERT_TRUE(facts.count(key)) << key;
    EXPECT_FALSE(facts[key].empty()) << key;
  }
  EXPECT_EQ(facts["nccl_version"].substr(0, 2), "2.");
  EXPECT_EQ(facts["gpu_topology"].substr(0, 6), "GPU0[X") << facts["gpu_topology"];
}

INSTANTIATE_TEST_SUITE_P(GraphsOffAndOn, NcclOneRank, ::testing::Bool(),
                         [](const auto& param_info) { return param_info.param ? "cuda_graph" : "direct"; });

TEST(NcclSplit, FreshInitFromAUniqueIdAlsoWorks) {
  IBT_REQUIRE_GPU();
  gpu::NcclOptions options;
  options.use_comm_split = false;
  auto backend = gpu::make_nccl_backend(MPI_COMM_WORLD, options);
  auto group = backend->split(3, 0);
  ASSERT_NE(group, nullptr);
  EXPECT_EQ(group->size(), 1);
  constexpr std::size_t n = 256;
  std::vector<float> host(n), back(n, -1.0f);
  std::iota(host.begin(), host.end(), 1.0f);
  void* src = backend->allocate(n * 4);
  void* dst = backend->allocate(n * 4);
  backend->upload(src, host.data(), n * 4);
  group->all_reduce(src, dst, n, DType::float32, ReduceOp::sum);
  backend->download(back.data(), dst, n * 4);
  EXPECT_EQ(back, host);
  EXPECT_EQ(backend->split(-1, 0), nullptr);
  backend->release(src);
  backend->release(dst);
}

// A send to itself that nobody receives: NCCL refuses it, and the error must name the op.
TEST(NcclWatchdog, UnmatchedSendFailsNamingTheOp) {
  IBT_REQUIRE_GPU();
  gpu::NcclOptions options;
  options.timeout_s = 2;
  auto backend = gpu::make_nccl_backend(MPI_COMM_WORLD, options);
  constexpr std::size_t n = 1 << 16;
  void* buf = backend->allocate(n * 4);
  std::string message;
  try {
    backend->world().send(buf, n, DType::float32, 0);
    backend->world().synchronize();
  } catch (const RuntimeError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("send of 262144 B (float32)"), std::string::npos) << message;
  EXPECT_NE(message.find("aborted every NCCL communicator"), std::string::npos) << message;
  backend->release(buf);
}

// Work that outlives --timeout (here a kernel spinning for 6 s against a 2 s timeout):
// the wait gives up, aborts NCCL and names the op that was queued last.
TEST(NcclWatchdog, StalledStreamTimesOutNamingTheOp) {
  IBT_REQUIRE_GPU();
  gpu::NcclOptions options;
  options.timeout_s = 2;
  auto backend = gpu::make_nccl_backend(MPI_COMM_WORLD, options);
  auto* world = dynamic_cast<gpu::NcclCommunicator*>(&backend->world());
  ASSERT_NE(world, nullptr);
  constexpr std::size_t n = 1024;
  void* buf = backend->allocate(n * 2);
  testing_gpu::spin_on_stream(6.0, world->runtime().stream());
  world->all_reduce(buf, buf, n, DType::bfloat16, ReduceOp::sum);
  std::string message;
  try {
    world->synchronize();
  } catch (const RuntimeError& e) {
    message = e.what();
  }
  EXPECT_EQ(message,
            "all_reduce of 2048 B (bfloat16) on a group of 1 rank(s) did not complete within 2 s; "
            "aborted every NCCL communicator of this rank");
  cudaDeviceSynchronize();  // let the spinning kernel end before the buffer goes
  backend->release(buf);
}

}  // namespace
}  // namespace ibt
