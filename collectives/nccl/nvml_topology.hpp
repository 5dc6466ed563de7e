#pragma once
// What NVML says about this node's GPUs: the driver version, the NVLink/PCIe topology
// matrix (as `nvidia-smi topo -m` shows it) and the multi-node NVLink fabric (GB200 NVL72
// cluster UUID and clique id). NVML is the driver's library (libnvidia-ml.so.1), so it is
// loaded at run time: the build needs neither its header nor a stub, and a machine whose
// driver lacks it still runs, reporting why the facts are missing.
#include <string>
#include <vector>

namespace ibt::gpu {

struct FabricInfo {
  bool complete = false;     // the GPU finished fabric registration
  std::string cluster_uuid;  // hex, 32 digits
  unsigned clique_id = 0;
};

struct NvmlReport {
  bool available = false;
  std::string why_unavailable;  // set when !available
  std::string driver_version;   // "580.159.04"
  // One row per GPU in `bus_ids` order; cell [i][j] is "X" (itself), "NV<k>" (k active
  // NVLinks between them), or the PCIe path: PIX, PXB, PHB, NODE, SYS.
  std::vector<std::vector<std::string>> matrix;
  std::vector<int> active_nvlinks;  // per GPU
  std::vector<FabricInfo> fabric;   // per GPU
};

// bus_ids: the PCI bus ids of the GPUs to describe (cudaDeviceGetPCIBusId form).
NvmlReport probe_nvml(const std::vector<std::string>& bus_ids);

// The matrix as one line: "GPU0[X NV18];GPU1[NV18 X]".
std::string format_matrix(const NvmlReport& report);

}  // namespace ibt::gpu
