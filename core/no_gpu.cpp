#include "core/no_gpu.hpp"

namespace ibt {
namespace {

// What needs the GPU and what works without one, per entry point.
std::string advice(const std::string& entry_point) {
  if (entry_point == "--backend nccl") return "the nccl backend needs one; use --backend mpi";
  if (entry_point == "--executor cuda") return "the cuda executor needs one; use --executor cpu";
  return "it measures one";
}

std::string prefixed(const std::string& entry_point, const std::string& text) {
  return entry_point.empty() ? text : entry_point + ": " + text;
}

}  // namespace

std::string no_gpu_cause(const std::string& error_text, int driver_version) {
  if (driver_version == 0)
    return error_text.empty() ? "no NVIDIA driver is loaded" : "no NVIDIA driver is loaded; CUDA says: " + error_text;
  if (error_text.empty()) return "the NVIDIA driver lists no device";
  return "CUDA says: " + error_text;
}

std::string no_gpu_message(const std::string& entry_point, const std::string& cause) {
  return prefixed(entry_point, "no CUDA GPU on this machine (" + cause + "); " + advice(entry_point));
}

std::string built_without_cuda_message(const std::string& entry_point) {
  return prefixed(entry_point, "this ibt was built without CUDA; " + advice(entry_point) +
                                   " (or rebuild with -DIBT_WITH_CUDA=ON where the CUDA toolkit and NCCL are found)");
}

}  // namespace ibt
