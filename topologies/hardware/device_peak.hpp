#pragma once
// Which catalog system a GPU belongs to, by the name CUDA reports for it, so `ibt train
// --executor cuda` can compute MFU against the catalog's cited dense peak for that
// device. Only names whose peak the catalog states are matched: an H100 PCIe or NVL
// (lower clocks and power than the SXM part dgx-h100 describes) matches nothing, and the
// caller then asks for --peak-tflops.
#include <optional>
#include <string>

namespace ibt::topo {

// "dgx-h100" for "NVIDIA H100 80GB HBM3", "" when no catalog system describes the GPU.
std::string catalog_topology_for_gpu(const std::string& gpu_name);

struct DevicePeak {
  std::string topology;  // catalog name
  std::string device;    // the catalog's device name
  double tflops = 0;     // dense peak for the dtype
  std::string source;    // the figure's cited source id and reference
};

// The catalog peak of `dtype` (bf16, fp32, ...) for the GPU, or nullopt when the GPU is
// not in the catalog or the catalog does not know that figure.
std::optional<DevicePeak> catalog_peak_for_gpu(const std::string& gpu_name, const std::string& dtype);

}  // namespace ibt::topo
