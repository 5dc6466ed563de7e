#include "topologies/hardware/device_peak.hpp"

#include <algorithm>
#include <cctype>

#include "topologies/hardware/topology.hpp"

namespace ibt::topo {

namespace {
std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}
bool has(const std::string& haystack, const char* needle) { return haystack.find(needle) != std::string::npos; }
}  // namespace

std::string catalog_topology_for_gpu(const std::string& gpu_name) {
  const std::string n = upper(gpu_name);
  // Most specific first: "GB200" contains "B200".
  if (has(n, "GB200")) return "gb200-nvl72";
  if (has(n, "B200")) return "dgx-b200";
  if (has(n, "H200")) return "dgx-h200";
  if (has(n, "H100")) return has(n, "PCIE") || has(n, "NVL") ? "" : "dgx-h100";
  if (has(n, "A100")) return "dgx-a100";  // bf16 dense 312 TFLOP/s on SXM4 and PCIe alike
  return "";
}

std::optional<DevicePeak> catalog_peak_for_gpu(const std::string& gpu_name, const std::string& dtype) {
  const std::string name = catalog_topology_for_gpu(gpu_name);
  if (name.empty()) return std::nullopt;
  const Topology t = load_topology(name);
  const Figure& f = t.device.peak(dtype);
  if (!f.known()) return std::nullopt;
  DevicePeak p;
  p.topology = name;
  p.device = t.device.name;
  p.tflops = f.get();
  p.source = f.source;
  for (const Source& s : t.sources)
    if (s.id == f.source) p.source += ": " + s.ref;
  return p;
}

}  // namespace ibt::topo
