// GPU names as CUDA reports them map to the catalog system whose peak MFU is computed
// against; parts the catalog does not describe (H100 PCIe/NVL) map to nothing.
#include <gtest/gtest.h>

#include "topologies/device_peak.hpp"

namespace ibt::topo {
namespace {

TEST(DevicePeak, MapsCudaDeviceNamesToCatalogSystems) {
  EXPECT_EQ(catalog_topology_for_gpu("NVIDIA H100 80GB HBM3"), "dgx-h100");
  EXPECT_EQ(catalog_topology_for_gpu("NVIDIA H200"), "dgx-h200");
  EXPECT_EQ(catalog_topology_for_gpu("NVIDIA A100-SXM4-80GB"), "dgx-a100");
  EXPECT_EQ(catalog_topology_for_gpu("NVIDIA B200"), "dgx-b200");
  EXPECT_EQ(catalog_topology_for_gpu("NVIDIA GB200"), "gb200-nvl72");
  EXPECT_EQ(catalog_topology_for_gpu("NVIDIA H100 PCIe"), "");
  EXPECT_EQ(catalog_topology_for_gpu("NVIDIA H100 NVL"), "");
  EXPECT_EQ(catalog_topology_for_gpu("NVIDIA GeForce RTX 4090"), "");
}

TEST(DevicePeak, ReadsTheCitedBf16PeakFromTheCatalog) {
  const auto h100 = catalog_peak_for_gpu("NVIDIA H100 80GB HBM3", "bf16");
  ASSERT_TRUE(h100.has_value());
  EXPECT_EQ(h100->topology, "dgx-h100");
  EXPECT_DOUBLE_EQ(h100->tflops, 989.5);
  EXPECT_NE(h100->source.find("h100-product"), std::string::npos) << h100->source;
  const auto a100 = catalog_peak_for_gpu("NVIDIA A100-SXM4-40GB", "bf16");
  ASSERT_TRUE(a100.has_value());
  EXPECT_DOUBLE_EQ(a100->tflops, 312);
  EXPECT_FALSE(catalog_peak_for_gpu("Tesla T4", "bf16").has_value());
}

}  // namespace
}  // namespace ibt::topo
