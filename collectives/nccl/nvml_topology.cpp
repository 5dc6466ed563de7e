#include "collectives/nccl/nvml_topology.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>

namespace ibt::gpu {
namespace {

// The few NVML declarations used here, as the NVML C ABI defines them (nvml.h is not
// shipped with the toolkit on every machine, and the library is only present where a
// driver is).
using NvmlReturn = int;  // nvmlReturn_t; 0 is NVML_SUCCESS
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr unsigned kNvmlMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS
constexpr int kP2PCapsIndexNvlink = 2;  // NVML_P2P_CAPS_INDEX_NVLINK
constexpr int kP2PStatusOk = 0;         // NVML_P2P_STATUS_OK
constexpr unsigned char kFabricStateCompleted = 3;

struct NvmlPciInfo {  // nvmlPciInfo_t
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
struct NvmlFabricInfoV1 {  // nvmlGpuFabricInfo_t
  unsigned char cluster_uuid[16];
  NvmlReturn status;
  unsigned clique_id;
  unsigned char state;
};

struct Nvml {
  void* lib = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;  // bound only once init succeeded
  const char* (*error_string)(NvmlReturn) = nullptr;
  NvmlReturn (*driver_version)(char*, unsigned) = nullptr;
  NvmlReturn (*handle_by_bus_id)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*nvlink_state)(NvmlDevice, unsigned, int*) = nullptr;
  NvmlReturn (*nvlink_remote_pci)(NvmlDevice, unsigned, NvmlPciInfo*) = nullptr;
  NvmlReturn (*p2p_status)(NvmlDevice, NvmlDevice, int, int*) = nullptr;
  NvmlReturn (*common_ancestor)(NvmlDevice, NvmlDevice, int*) = nullptr;
  NvmlReturn (*fabric_info)(NvmlDevice, NvmlFabricInfoV1*) = nullptr;

  template <typename F>
  bool bind(F& fn, const char* symbol) {
    fn = reinterpret_cast<F>(dlsym(lib, symbol));
    return fn != nullptr;
  }
  ~Nvml() {
    if (shutdown) shutdown();
    if (lib) dlclose(lib);
  }
};

// PCI ids compare by value: CUDA writes a 4-digit domain, NVML an 8-digit one.
struct PciAddress {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  bool operator==(const PciAddress&) const = default;
};
PciAddress parse_pci(const char* text) {
  PciAddress a;
  std::sscanf(text, "%x:%x:%x.%x", &a.domain, &a.bus, &a.device, &a.function);
  return a;
}

// nvmlGpuTopologyLevel_t in the words nvidia-smi uses.
std::string pcie_path_name(int level) {
  switch (level) {
    case 0: return "X";      // NVML_TOPOLOGY_INTERNAL
    case 10: return "PIX";   // one PCIe switch
    case 20: return "PXB";   // several PCIe switches
    case 30: return "PHB";   // through a host bridge
    case 40: return "NODE";  // across host bridges within a NUMA node
    case 50: return "SYS";   // across NUMA nodes
    default: return "L" + std::to_string(level);
  }
}

std::string hex(const unsigned char* bytes, std::size_t n) {
  std::string s;
  char two[3];
  for (std::size_t i = 0; i < n; ++i) {
    std::snprintf(two, sizeof two, "%02x", bytes[i]);
    s += two;
  }
  return s;
}

}  // namespace

NvmlReport probe_nvml(const std::vector<std::string>& bus_ids) {
  NvmlReport report;
  Nvml nvml;
  nvml.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!nvml.lib) {
    const char* err = dlerror();
    report.why_unavailable = std::string("cannot load libnvidia-ml.so.1: ") + (err ? err : "unknown");
    return report;
  }
  if (!nvml.bind(nvml.init, "nvmlInit_v2") || !nvml.bind(nvml.error_string, "nvmlErrorString") ||
      !nvml.bind(nvml.driver_version, "nvmlSystemGetDriverVersion") ||
      !nvml.bind(nvml.handle_by_bus_id, "nvmlDeviceGetHandleByPciBusId_v2") ||
      !nvml.bind(nvml.common_ancestor, "nvmlDeviceGetTopologyCommonAncestor")) {
    report.why_unavailable = "libnvidia-ml.so.1 lacks a required NVML function";
    return report;
  }
  nvml.bind(nvml.nvlink_state, "nvmlDeviceGetNvLinkState");
  nvml.bind(nvml.nvlink_remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  nvml.bind(nvml.p2p_status, "nvmlDeviceGetP2PStatus");
  nvml.bind(nvml.fabric_info, "nvmlDeviceGetGpuFabricInfo");
  if (const NvmlReturn rc = nvml.init(); rc != kNvmlSuccess) {
    report.why_unavailable = std::string("nvmlInit failed: ") + nvml.error_string(rc);
    return report;
  }
  nvml.bind(nvml.shutdown, "nvmlShutdown");

  char version[96] = {};
  if (nvml.driver_version(version, sizeof version) == kNvmlSuccess) report.driver_version = version;

  const std::size_t n = bus_ids.size();
  std::vector<NvmlDevice> devices(n, nullptr);
  std::vector<PciAddress> addresses(n);
  for (std::size_t i = 0; i < n; ++i) {
    addresses[i] = parse_pci(bus_ids[i].c_str());
    if (const NvmlReturn rc = nvml.handle_by_bus_id(bus_ids[i].c_str(), &devices[i]); rc != kNvmlSuccess) {
      report.why_unavailable = "NVML does not know GPU " + bus_ids[i] + ": " + nvml.error_string(rc);
      return report;
    }
  }

  // NVLinks per GPU pair: count each active link of GPU i whose far end is GPU j. Links
  // that end at an NVSwitch count toward every GPU the P2P status says NVLink reaches.
  report.active_nvlinks.assign(n, 0);
  std::vector<std::vector<int>> links(n, std::vector<int>(n, 0));
  std::vector<int> switch_links(n, 0);
  for (std::size_t i = 0; i < n && nvml.nvlink_state; ++i) {
    for (unsigned l = 0; l < kNvmlMaxLinks; ++l) {
      int active = 0;
      if (nvml.nvlink_state(devices[i], l, &active) != kNvmlSuccess || !active) continue;
      ++report.active_nvlinks[i];
      NvmlPciInfo remote{};
      bool to_gpu = false;
      if (nvml.nvlink_remote_pci && nvml.nvlink_remote_pci(devices[i], l, &remote) == kNvmlSuccess) {
        const PciAddress far = parse_pci(remote.bus_id);
        for (std::size_t j = 0; j < n; ++j)
          if (far == addresses[j]) ++links[i][j], to_gpu = true;
      }
      if (!to_gpu) ++switch_links[i];
    }
  }

  report.matrix.assign(n, std::vector<std::string>(n));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) {
        report.matrix[i][j] = "X";
        continue;
      }
      int nvlink_p2p = -1;
      if (nvml.p2p_status) nvml.p2p_status(devices[i], devices[j], kP2PCapsIndexNvlink, &nvlink_p2p);
      const int k = links[i][j] > 0 ? links[i][j] : switch_links[i];
      if (nvlink_p2p == kP2PStatusOk && k > 0) {
        report.matrix[i][j] = "NV" + std::to_string(k);
        continue;
      }
      int level = -1;
      report.matrix[i][j] =
          nvml.common_ancestor(devices[i], devices[j], &level) == kNvmlSuccess ? pcie_path_name(level) : "?";
    }
  }

  report.fabric.assign(n, {});
  for (std::size_t i = 0; i < n && nvml.fabric_info; ++i) {
    NvmlFabricInfoV1 info{};
    if (nvml.fabric_info(devices[i], &info) != kNvmlSuccess) continue;
    if (info.state == kFabricStateCompleted && info.status == kNvmlSuccess) {
      report.fabric[i].complete = true;
      report.fabric[i].cluster_uuid = hex(info.cluster_uuid, sizeof info.cluster_uuid);
      report.fabric[i].clique_id = info.clique_id;
    }
  }
  report.available = true;
  return report;
}

std::string format_matrix(const NvmlReport& report) {
  std::string out;
  for (std::size_t i = 0; i < report.matrix.size(); ++i) {
    if (i) out += ';';
    out += "GPU" + std::to_string(i) + '[';
    for (std::size_t j = 0; j < report.matrix[i].size(); ++j) {
      if (j) out += ' ';
      out += report.matrix[i][j];
    }
    out += ']';
  }
  return out;
}

}  // namespace ibt::gpu
