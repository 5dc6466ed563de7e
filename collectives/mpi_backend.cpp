#include "collectives/mpi_backend.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

#include "core/errors.hpp"

namespace ibt {
namespace {

// Host clock timer: one MPI_Wtime pair per iteration (~tens of ns, negligible against
// the microseconds an MPI collective takes).
class WtimeTimer final : public IterationTimer {
 public:
  explicit WtimeTimer(int iterations) : starts_(iterations), ends_(iterations) {}
  void begin(int i) override { starts_[i] = MPI_Wtime(); }
  void end(int i) override { ends_[i] = MPI_Wtime(); }
  std::vector<double> durations() override {
    std::vector<double> d(starts_.size());
    for (std::size_t i = 0; i < d.size(); ++i) d[i] = ends_[i] - starts_[i];
    return d;
  }
  double total() override { return starts_.empty() ? 0.0 : ends_.back() - starts_.front(); }

 private:
  std::vector<double> starts_, ends_;
};

constexpr std::size_t kAlignment = 4096;  // page-aligned, as device buffers would be

}  // namespace

MpiBackend::MpiBackend() {
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  world_ = std::make_unique<MpiCommunicator>(dup);
}

std::unique_ptr<Communicator> MpiBackend::split(int color, int key) {
  MPI_Comm group;
  MPI_Comm_split(world_->handle(), color, key, &group);
  return std::make_unique<MpiCommunicator>(group);
}

void* MpiBackend::allocate(std::size_t bytes) {
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (!p) throw RuntimeError("out of host memory allocating " + std::to_string(bytes) + " bytes");
  std::memset(p, 0, rounded);  // touch every page now, not inside a timed iteration
  return p;
}

void MpiBackend::release(void* buffer) { std::free(buffer); }

void MpiBackend::upload(void* buffer, const void* host, std::size_t bytes) { std::memcpy(buffer, host, bytes); }

void MpiBackend::download(void* host, const void* buffer, std::size_t bytes) { std::memcpy(host, buffer, bytes); }

std::unique_ptr<IterationTimer> MpiBackend::make_timer(Communicator&, int iterations) {
  return std::make_unique<WtimeTimer>(iterations);
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, len);
  const auto newline = s.find('\n');
  if (newline != std::string::npos) s.resize(newline);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
  return s;
}

std::string mpi_standard_version() {
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<std::pair<std::string, std::string>> MpiBackend::provenance() const {
  return {{"mpi_library", mpi_library_version()}, {"mpi_standard", mpi_standard_version()}};
}

}  // namespace ibt
