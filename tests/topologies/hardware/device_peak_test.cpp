// GPU names as CUDA reports them map to the catalog system whose peak MFU is computed
// against; parts the catalog does not describe (H100 PCIe/NVL) map to nothing.
#include <gtest/gtest.h>

#include "topologies/hardware/device_peak.hpp"

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

#include <unistd.h>

#include <cstdio>

#include "core/errors.hpp"
#include "reports/store/store.hpp"
#include "topologies/calibration/gemm_peak.hpp"

namespace ibt::topo {
namespace {

// A results file as `ibt gemm` writes it (run attributes and the gemm table's columns).
void write_gemm_run(const std::string& path, const std::string& gpu, const std::vector<store::Row>& rows,
                    store::RunStatus status = store::RunStatus::complete) {
  auto s = store::open_for_append(path);
  auto run = s->begin_run("gemm");
  run->set_attr("gpu_name", gpu);
  using store::ColumnType;
  const std::vector<store::Column> cols = {{"name", ColumnType::str},
                                           {"dtype", ColumnType::str},
                                           {"tflops", ColumnType::f64, "TFLOP/s"},
                                           {"rel_error", ColumnType::f64, ""}};
  store::Table& t = run->table("gemm", cols);
  for (const auto& r : rows) t.append(r);
  run->finish(status);
}

class GemmPeakFile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "gemm_peak_" + std::to_string(::getpid()) + ".h5";
    std::remove(path_.c_str());
  }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string path_;
};

TEST_F(GemmPeakFile, BestCorrectProductOfTheNewestRunOnThatGpu) {
  write_gemm_run(path_, "NVIDIA H100 80GB HBM3", {{std::string("old"), std::string("bf16"), 500.0, 1e-3}});
  write_gemm_run(path_, "NVIDIA H100 80GB HBM3",
                 {{std::string("a"), std::string("bf16"), 700.0, 2e-3},
                  {std::string("wrong"), std::string("bf16"), 900.0, 0.5},  // fails the check: not a peak
                  {std::string("b"), std::string("bf16"), 790.5, 2e-3},
                  {std::string("f8"), std::string("fp8_e4m3"), 1400.0, 5e-3}});
  write_gemm_run(path_, "NVIDIA A100-SXM4-80GB", {{std::string("x"), std::string("bf16"), 280.0, 2e-3}});
  const MeasuredGemmPeak p = measured_gemm_peak(path_, "NVIDIA H100 80GB HBM3", "bf16");
  EXPECT_DOUBLE_EQ(p.tflops, 790.5);
  EXPECT_EQ(p.shape, "b");
  EXPECT_EQ(p.run_id, "000002");
}

TEST_F(GemmPeakFile, NamesTheGpusItHasWhenNoneMatches) {
  write_gemm_run(path_, "NVIDIA A100-SXM4-80GB", {{std::string("x"), std::string("bf16"), 280.0, 2e-3}});
  try {
    measured_gemm_peak(path_, "NVIDIA H100 80GB HBM3", "bf16");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("no complete `ibt gemm` run on NVIDIA H100 80GB HBM3"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("NVIDIA A100-SXM4-80GB"), std::string::npos) << e.what();
  }
  EXPECT_THROW(measured_gemm_peak(path_, "NVIDIA A100-SXM4-80GB", "fp32"), UsageError);
}

}  // namespace
}  // namespace ibt::topo
