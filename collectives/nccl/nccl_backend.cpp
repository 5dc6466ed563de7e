#include "collectives/nccl/nccl_backend.hpp"

#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "collectives/nccl/cuda_device.hpp"
#include "collectives/nccl/nccl_communicator.hpp"
#include "collectives/nccl/nccl_runtime.hpp"
#include "collectives/nccl/nvml_topology.hpp"
#include "core/errors.hpp"

namespace ibt::gpu {
namespace {

constexpr const char* kEntryPoint = "--backend nccl";

void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw RuntimeError(std::string(what) + " failed while setting up NCCL");
}

std::string nccl_version_string(int code) {
  // NCCL_VERSION(X,Y,Z) is X*10000 + Y*100 + Z since 2.9.
  return std::to_string(code / 10000) + "." + std::to_string((code / 100) % 100) + "." + std::to_string(code % 100);
}

std::string host_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  return std::string(name, len);
}

// Every rank's string, in rank order (each at most `width` bytes).
std::vector<std::string> all_gather_strings(MPI_Comm comm, const std::string& mine, std::size_t width = 160) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  std::vector<char> out(width * size), in(width, '\0');
  std::memcpy(in.data(), mine.data(), std::min(mine.size(), width - 1));
  check_mpi(MPI_Allgather(in.data(), int(width), MPI_CHAR, out.data(), int(width), MPI_CHAR, comm), "MPI_Allgather");
  std::vector<std::string> all;
  for (int r = 0; r < size; ++r) all.emplace_back(out.data() + r * width);
  return all;
}

ncclConfig_t nonblocking_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

class CudaEventTimer final : public IterationTimer {
 public:
  CudaEventTimer(NcclRuntime& runtime, int iterations) : runtime_(runtime) {
    if (iterations < 1) throw UsageError("a timer needs at least one iteration");
    starts_.resize(iterations);
    ends_.resize(iterations);
    for (int i = 0; i < iterations; ++i) {
      check_cuda(cudaEventCreate(&starts_[i]), "cudaEventCreate");
      check_cuda(cudaEventCreate(&ends_[i]), "cudaEventCreate");
    }
  }
  ~CudaEventTimer() override {
    for (auto e : starts_) cudaEventDestroy(e);
    for (auto e : ends_) cudaEventDestroy(e);
  }
  void begin(int i) override { check_cuda(cudaEventRecord(starts_.at(i), runtime_.stream()), "cudaEventRecord"); }
  void end(int i) override {
    check_cuda(cudaEventRecord(ends_.at(i), runtime_.stream()), "cudaEventRecord");
    last_ = i;
  }
  std::vector<double> durations() override {
    runtime_.wait_stream();
    std::vector<double> out(last_ + 1);
    for (int i = 0; i <= last_; ++i) out[i] = elapsed(starts_[i], ends_[i]);
    return out;
  }
  double total() override {
    runtime_.wait_stream();
    return elapsed(starts_.front(), ends_.at(last_));
  }

 private:
  static double elapsed(cudaEvent_t from, cudaEvent_t to) {
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, from, to), "cudaEventElapsedTime");
    return ms * 1e-3;
  }
  NcclRuntime& runtime_;
  std::vector<cudaEvent_t> starts_, ends_;
  int last_ = -1;
};

class NcclBackend final : public Backend {
 public:
  NcclBackend(MPI_Comm world, const NcclOptions& options) : options_(options) {
    const int devices = require_cuda_devices(kEntryPoint);
    MPI_Comm_rank(world, &rank_);

    // One GPU per rank: the rank's index among the ranks sharing its host picks the GPU.
    MPI_Comm local = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local), "MPI_Comm_split_type");
    int local_size = 1;
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_size(local, &local_size);
    MPI_Comm_free(&local);
    if (local_size > devices)
      throw UsageError(std::string(kEntryPoint) + ": " + std::to_string(local_size) + " ranks on host " + host_name() +
                       " but only " + std::to_string(devices) + " CUDA device(s); NCCL needs one GPU per rank");
    check_mpi(MPI_Comm_dup(world, &world_mpi_), "MPI_Comm_dup");

    runtime_ = std::make_shared<NcclRuntime>(local_rank_, options_.timeout_s, options_.cuda_graph);
    device_ = describe_device(local_rank_);
    check_nccl(ncclGetVersion(&nccl_runtime_version_), "ncclGetVersion");
    domain_ = compute_scale_up_domain();
    rank_gpus_ = all_gather_strings(world_mpi_, host_name() + ":" + device_.pci_bus_id);

    MPI_Comm world_group = MPI_COMM_NULL;
    check_mpi(MPI_Comm_dup(world_mpi_, &world_group), "MPI_Comm_dup");
    world_ = std::make_unique<NcclCommunicator>(
        runtime_, init_from_unique_id(world_group, "creating the NCCL world communicator"), world_group);
  }

  ~NcclBackend() override {
    world_.reset();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&world_mpi_);
  }

  std::string name() const override { return "nccl"; }
  Communicator& world() override { return *world_; }

  std::unique_ptr<Communicator> split(int color, int key) override {
    // A negative color leaves this rank out, as MPI_UNDEFINED does.
    const bool member = color >= 0;
    MPI_Comm group = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(world_mpi_, member ? color : MPI_UNDEFINED, key, &group), "MPI_Comm_split");
    const std::string what = "creating the NCCL communicator of split color " + std::to_string(color);
    ncclComm_t comm = nullptr;
    if (options_.use_comm_split) {
      comm = split_nonblocking(member ? color : NCCL_SPLIT_NOCOLOR, key, what);
    } else if (member) {
      comm = init_from_unique_id(group, what);
    }
    if (!member) return nullptr;
    return std::make_unique<NcclCommunicator>(runtime_, comm, group);
  }

  bool buffers_on_host() const override { return false; }
  void* allocate(std::size_t bytes) override {
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)),
               "cudaMalloc of " + std::to_string(bytes) + " B on GPU " + std::to_string(device_.index));
    return p;
  }
  void release(void* buffer) override {
    if (!buffer) return;
    // After an abort the stream holds nothing worth waiting for; free regardless.
    if (!runtime_->aborted()) runtime_->wait_stream();
    runtime_->note_release();
    check_cuda(cudaFree(buffer), "cudaFree");
  }
  // Copies go through the communication stream so they are ordered after the ops
  // that produced or will consume the data, and waits run under the watchdog.
  void upload(void* buffer, const void* host, std::size_t bytes) override {
    copy(buffer, host, bytes, cudaMemcpyHostToDevice, "upload");
  }
  void download(void* host, const void* buffer, std::size_t bytes) override {
    copy(host, buffer, bytes, cudaMemcpyDeviceToHost, "download");
  }

  std::unique_ptr<IterationTimer> make_timer(Communicator& comm, int iterations) override {
    auto* nccl = dynamic_cast<NcclCommunicator*>(&comm);
    if (!nccl) throw UsageError("the NCCL backend can only time its own communicators");
    return std::make_unique<CudaEventTimer>(nccl->runtime(), iterations);
  }

  // Stuck NCCL ops are aborted (ncclCommAbort) by the runtime's own timeout.
  bool enforces_timeouts() const override { return true; }

  bool supports(DType t) const override {
    switch (t) {
      case DType::fp8_e4m3:
      case DType::fp8_e5m2:
        // NCCL moves and reduces fp8 from 2.24 on, and only on sm_90 and newer.
        return NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0) && nccl_runtime_version_ >= NCCL_VERSION(2, 24, 0) &&
               device_.cc_major >= 9;
      default: return true;
    }
  }

  std::vector<std::pair<std::string, std::string>> provenance() const override {
    int count = 0;
    cudaGetDeviceCount(&count);
    std::vector<std::string> bus_ids;
    for (int d = 0; d < count; ++d) {
      char id[32] = {};
      if (cudaDeviceGetPCIBusId(id, sizeof id, d) == cudaSuccess) bus_ids.emplace_back(id);
    }
    const NvmlReport nvml = probe_nvml(bus_ids);
    std::string ranks;
    for (std::size_t r = 0; r < rank_gpus_.size(); ++r)
      ranks += (r ? " " : "") + std::to_string(r) + "=" + rank_gpus_[r];
    std::vector<std::pair<std::string, std::string>> facts = {
        {"gpu_name", device_.name},
        {"gpu_compute_capability", std::to_string(device_.cc_major) + "." + std::to_string(device_.cc_minor)},
        {"gpu_multiprocessors", std::to_string(device_.multiprocessors)},
        {"gpu_memory_bytes", std::to_string(device_.memory_bytes)},
        {"gpu_pci_bus_id", device_.pci_bus_id},
        {"cuda_device_index", std::to_string(device_.index)},
        {"cuda_driver_api", cuda_version_string(device_.driver_version)},
        {"cuda_runtime", cuda_version_string(device_.runtime_version)},
        {"nccl_version", nccl_version_string(nccl_runtime_version_)},
        {"nccl_build_version", nccl_version_string(NCCL_VERSION_CODE)},
        {"nccl_cuda_graph", options_.cuda_graph ? "on" : "off"},
        {"nccl_group_creation", options_.use_comm_split ? "ncclCommSplit" : "ncclCommInitRank"},
        {"rank_gpus", ranks},
        {"scale_up_domain", domain_},
    };
    if (nvml.available) {
      facts.emplace_back("nvidia_driver", nvml.driver_version);
      facts.emplace_back("gpu_topology", format_matrix(nvml));
      std::string links;
      for (std::size_t i = 0; i < nvml.active_nvlinks.size(); ++i)
        links += (i ? " " : "") + std::string("GPU") + std::to_string(i) + "=" + std::to_string(nvml.active_nvlinks[i]);
      facts.emplace_back("nvlinks_active", links);
    } else {
      facts.emplace_back("gpu_topology", "unavailable: " + nvml.why_unavailable);
    }
    return facts;
  }

  const std::string& domain() const { return domain_; }

 private:
  // A communicator over `group` from a unique id made by its rank 0 and broadcast over MPI.
  ncclComm_t init_from_unique_id(MPI_Comm group, const std::string& what) {
    int group_rank = 0, group_size = 1;
    MPI_Comm_rank(group, &group_rank);
    MPI_Comm_size(group, &group_size);
    ncclUniqueId id{};
    if (group_rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    check_mpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, group), "MPI_Bcast of the NCCL unique id");
    ncclConfig_t config = nonblocking_config();
    ncclComm_t comm = nullptr;
    runtime_->set_current_op(what);
    const ncclResult_t rc = ncclCommInitRankConfig(&comm, group_size, id, group_rank, &config);
    if (comm) runtime_->add(comm);
    runtime_->finish_call(comm, rc, runtime_->current_op());
    return comm;
  }

  // ncclCommSplit on a non-blocking parent returns before the child exists: NCCL's
  // own thread writes the new handle when it has made it. Wait for the handle (watching
  // the parent for errors), then for the child to finish initialising.
  ncclComm_t split_nonblocking(int color, int key, const std::string& what) {
    runtime_->set_current_op(what);
    ncclConfig_t config = nonblocking_config();
    ncclComm_t comm = nullptr;
    const ncclResult_t rc = ncclCommSplit(world_->handle(), color, key, &comm, &config);
    if (rc != ncclSuccess && rc != ncclInProgress) runtime_->finish_call(world_->handle(), rc, what);
    if (color == NCCL_SPLIT_NOCOLOR) {
      runtime_->finish_call(world_->handle(), rc, what);
      return nullptr;
    }
    std::atomic_ref<ncclComm_t> handle(comm);
    const auto start = std::chrono::steady_clock::now();
    while (!handle.load()) {
      ncclResult_t parent = ncclSuccess;
      ncclCommGetAsyncError(world_->handle(), &parent);
      if (parent != ncclSuccess && parent != ncclInProgress)
        runtime_->abort_all(what + " failed: NCCL reported " + ncclGetErrorString(parent));
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (waited > options_.timeout_s)
        runtime_->abort_all(what + " did not complete within " + std::to_string(int(options_.timeout_s)) + " s");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    const ncclComm_t child = handle.load();
    runtime_->add(child);
    runtime_->finish_call(child, ncclInProgress, what);
    return child;
  }

  void copy(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind, const char* what) {
    runtime_->set_current_op(std::string(what) + " of " + std::to_string(bytes) + " B");
    check_cuda(cudaMemcpyAsync(to, from, bytes, kind, runtime_->stream()), runtime_->current_op());
    runtime_->wait_stream();
  }

  // Collective: a GPU registered with a multi-node NVLink fabric names its domain by
  // the fabric's cluster and clique; others fall back to their host.
  std::string compute_scale_up_domain() const {
    const NvmlReport nvml = probe_nvml({device_.pci_bus_id});
    if (nvml.available && !nvml.fabric.empty() && nvml.fabric[0].complete)
      return "nvlink-fabric:" + nvml.fabric[0].cluster_uuid + ":" + std::to_string(nvml.fabric[0].clique_id);
    return "host:" + host_name();
  }

  NcclOptions options_;
  MPI_Comm world_mpi_ = MPI_COMM_NULL;
  int rank_ = 0;
  int local_rank_ = 0;
  std::shared_ptr<NcclRuntime> runtime_;
  DeviceFacts device_;
  int nccl_runtime_version_ = 0;
  std::string domain_;
  std::vector<std::string> rank_gpus_;
  std::unique_ptr<NcclCommunicator> world_;
};

}  // namespace

std::unique_ptr<Backend> make_nccl_backend(MPI_Comm world, const NcclOptions& options) {
  if (!(options.timeout_s > 0)) throw UsageError("--timeout must be positive");
  return std::make_unique<NcclBackend>(world, options);
}

std::string scale_up_domain(const Backend& backend) {
  const auto* nccl = dynamic_cast<const NcclBackend*>(&backend);
  if (!nccl) throw UsageError("scale_up_domain: not an NCCL backend");
  return nccl->domain();
}

}  // namespace ibt::gpu
