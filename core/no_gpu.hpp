#pragma once
// The one wording every GPU entry point uses when a machine has no usable GPU, so that it
// never reads like a driver fault: on a machine with no GPU, CUDA's own text is "CUDA
// driver version is insufficient for CUDA runtime version" (error 35, as no driver is
// loaded; ../shared/platform.md), which sends a user hunting for a driver update.
//   "<entry point>: no CUDA GPU on this machine (<cause>); <what needs it>; <what to use>"
// Plain C++ (no CUDA headers), so the wording is tested in every build.
#include <string>

namespace ibt {

// Why CUDA found no device, from cudaGetDeviceCount's result: `error_text` is
// cudaGetErrorString of its error ("" when it succeeded with 0 devices) and
// `driver_version` cudaDriverGetVersion's value (0: no driver loaded).
std::string no_gpu_cause(const std::string& error_text, int driver_version);

// The whole line for `entry_point` ("--backend nccl", "--executor cuda", "" for ibt gemm).
std::string no_gpu_message(const std::string& entry_point, const std::string& cause);

// The same entry points in a build without CUDA.
std::string built_without_cuda_message(const std::string& entry_point);

}  // namespace ibt
