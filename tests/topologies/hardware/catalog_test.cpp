// Every catalog topology parses and cites a source for every figure; malformed files
// are refused with an error naming the file and the field.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/errors.hpp"
#include "models/plan/model_file.hpp"
#include "topologies/hardware/topology.hpp"

namespace ibt::topo {
namespace {

TEST(Catalog, HasTheRequiredSystems) {
  const auto names = catalog_names();
  const std::set<std::string> have(names.begin(), names.end());
  for (const char* n : {"dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200", "gb200-nvl72", "tpu-v4", "tpu-v5p", "local-cpu",
                        "dgx-h800", "dgx1-v100", "dgx2-v100", "tpu-v3", "tpu-v5p-multislice"})
    EXPECT_TRUE(have.count(n)) << n;
}

// The newer systems, as the catalog states them: H800 is H100 compute behind 400 GB/s
// NVLink; DGX-1 is 8 V100s, DGX-2 16; TPU v3 is one 1,024-chip 2D-torus pod; multi-slice
// v5p is the two-level fabric with the slice as the domain and DCN as the scale-out.
TEST(Catalog, IssueFourteenSystemsMapOntoTheTwoLevelFabric) {
  const Topology h100 = load_topology("dgx-h100"), h800 = load_topology("dgx-h800");
  EXPECT_EQ(h800.device.bf16.get(), h100.device.bf16.get());
  EXPECT_EQ(h800.scale_up.bandwidth_GBps.get(), 200.0);  // 400 GB/s bidirectional
  EXPECT_EQ(h800.scale_out.bandwidth_GBps.get(), 50.0);  // 400 Gb/s per GPU
  EXPECT_EQ(h800.domain_size(), 8);
  EXPECT_EQ(load_topology("dgx1-v100").domain_size(), 8);
  EXPECT_EQ(load_topology("dgx2-v100").domain_size(), 16);
  const Topology v3 = load_topology("tpu-v3");
  EXPECT_EQ(v3.domain_size(), 1024);
  ASSERT_TRUE(v3.scale_up.torus.has_value());
  EXPECT_EQ(v3.scale_up.torus->links_per_chip.get(), 4.0);  // 2D torus
  EXPECT_FALSE(v3.scale_out.present);
  const Topology pod = load_topology("tpu-v5p"), ms = load_topology("tpu-v5p-multislice");
  EXPECT_EQ(ms.domain_size(), 4096);
  EXPECT_EQ(ms.scale_out.bandwidth_GBps.get(), 6.25);  // 50 Gb/s DCN per chip
  EXPECT_EQ(ms.device.bf16.get(), pod.device.bf16.get());
  EXPECT_EQ(ms.scale_up.torus->link_bandwidth_GBps.get(), pod.scale_up.torus->link_bandwidth_GBps.get());
}

TEST(Catalog, EveryFileParsesAndEveryFigureHasASource) {
  for (const auto& name : catalog_names()) {
    SCOPED_TRACE(name);
    const Topology t = load_topology(name);
    EXPECT_EQ(t.name, name);
    for (const auto& [path, fig] : t.figures()) {
      const Source* s = t.find_source(fig->source);
      ASSERT_NE(s, nullptr) << path;
      EXPECT_FALSE(s->ref.empty()) << path;
      if (s->kind == SourceKind::public_ref) {
        EXPECT_EQ(s->ref.rfind("http", 0), 0u) << path;
      }
      if (!fig->known()) {
        EXPECT_FALSE(fig->note.empty()) << path << " is unknown without a note";
      }
    }
    EXPECT_GE(t.domain_size(), 1);
    EXPECT_TRUE(t.device.bf16.known() || t.device.fp32.known());
  }
}

TEST(Catalog, LocalCpuFiguresAreMeasuredNotDatasheet) {
  const Topology t = load_topology("local-cpu");
  for (const auto& [path, fig] : t.figures()) {
    const Source* s = t.find_source(fig->source);
    ASSERT_NE(s, nullptr);
    EXPECT_NE(s->kind, SourceKind::public_ref) << path;
  }
}

// Every accelerator prices GEMMs by shape (sim_pricer.hpp); the measured CPU does not.
TEST(Catalog, EveryAcceleratorGivesItsGemmTiles) {
  for (const auto& name : catalog_names()) {
    const Topology t = load_topology(name);
    EXPECT_EQ(t.device.gemm_tiles.has_value(), name != "local-cpu") << name;
  }
  EXPECT_EQ(load_topology("dgx-a100").device.gemm_tiles->compute_units.get(), 108);
  EXPECT_EQ(load_topology("dgx-h100").device.gemm_tiles->compute_units.get(), 132);
  EXPECT_EQ(load_topology("dgx-b200").device.gemm_tiles->compute_units.get(), 148);
  EXPECT_EQ(load_topology("tpu-v5p").device.gemm_tiles->tile_rows.get(), 128);
}

TEST(Catalog, RoundTripsThroughJson) {
  for (const auto& name : catalog_names()) {
    const Topology a = load_topology(name);
    const Topology b = parse_topology(to_json(a), "roundtrip");
    EXPECT_EQ(to_json(a), to_json(b)) << name;
  }
}

// A minimal valid topology, edited by each malformed case below.
std::string minimal(const std::string& extra_device = "", const std::string& bw_source = "s") {
  return R"({"name": "x", "description": "d", "sources": {"s": {"kind": "public", "ref": "https://example.org"}},
    "device": {"name": "dev", "peak_tflops": {
      "fp32": {"value": 1, "unit": "TFLOP/s", "source": "s"}, "tf32": {"value": null, "unit": "TFLOP/s", "source": "s", "note": "n"},
      "bf16": {"value": 2, "unit": "TFLOP/s", "source": "s"}, "fp8": {"value": null, "unit": "TFLOP/s", "source": "s", "note": "n"}},
      "memory_GB": {"value": 10, "unit": "GB", "source": "s"}, )" +
         extra_device + R"(
      "memory_bandwidth_GBps": {"value": 100, "unit": "GB/s", "source": "s"}},
    "scale_up": {"name": "u", "devices_per_domain": {"value": 8, "unit": "devices", "source": "s"},
      "bandwidth_GBps": {"value": 100, "unit": "GB/s", "source": ")" +
         bw_source + R"("},
      "latency_us": {"value": 1, "unit": "us", "source": "s"}, "algorithms": ["ring"]},
    "model": {"collective_launch_us": {"value": 1, "unit": "us", "source": "s"},
      "gemm_efficiency": {"value": 0.5, "unit": "", "source": "s"}, "memory_efficiency": {"value": 0.5, "unit": "", "source": "s"},
      "op_overhead_us": {"value": 1, "unit": "us", "source": "s"}, "scale_up_efficiency": {"value": 1, "unit": "", "source": "s"},
      "scale_out_efficiency": {"value": 1, "unit": "", "source": "s"}}})";
}

std::string error_of(const std::string& text) {
  try {
    parse_topology(text, "bad.json");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(Catalog, MinimalFileParses) { EXPECT_NO_THROW(parse_topology(minimal(), "ok.json")); }

TEST(Catalog, MalformedFilesNameTheField) {
  std::string e = error_of(minimal(R"("colour": 3,)"));
  EXPECT_NE(e.find("bad.json"), std::string::npos) << e;
  EXPECT_NE(e.find("device.colour"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown field"), std::string::npos) << e;

  e = error_of(minimal("", "nowhere"));
  EXPECT_NE(e.find("scale_up.bandwidth_GBps.source"), std::string::npos) << e;

  std::string text = minimal();
  text.replace(text.find(R"("value": 10,)"), 12, R"("value": "ten",)");
  e = error_of(text);
  EXPECT_NE(e.find("device.memory_GB.value"), std::string::npos) << e;

  text = minimal();
  text.replace(text.find(R"("source": "s", "note": "n"})"), 27, R"("source": "s"})");
  e = error_of(text);
  EXPECT_NE(e.find("device.peak_tflops.tf32.note"), std::string::npos) << e;

  e = error_of("{not json");
  EXPECT_NE(e.find("not valid JSON"), std::string::npos) << e;

  // GEMM tiles: whole numbers, every figure present.
  const auto tiles = [](const std::string& units) {
    return R"("gemm_tiles": {"compute_units": {"value": )" + units + R"(, "unit": "units", "source": "s"},
      "tile_rows": {"value": 128, "unit": "elements", "source": "s"},
      "tile_cols": {"value": 128, "unit": "elements", "source": "s"}},)";
  };
  EXPECT_NO_THROW(parse_topology(minimal(tiles("132")), "bad.json"));
  e = error_of(minimal(tiles("1.5")));
  EXPECT_NE(e.find("device.gemm_tiles.compute_units.value"), std::string::npos) << e;
  EXPECT_NE(e.find("whole number"), std::string::npos) << e;
  e = error_of(minimal(R"("gemm_tiles": {"compute_units": {"value": 4, "unit": "units", "source": "s"}},)"));
  EXPECT_NE(e.find("device.gemm_tiles.tile_rows"), std::string::npos) << e;
}

TEST(Catalog, UnknownTopologyListsTheCatalog) {
  try {
    load_topology("dgx-z900");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("dgx-h100"), std::string::npos) << e.what();
  }
}

TEST(Catalog, MalformedModelFileNamesTheField) {
  try {
    models::parse_model(R"({"name": "m", "source": "s", "layers": 2, "hidden": 64, "heads": 4, "vocab": 10,
                            "seq_len": 8, "ffn_hidden": 128, "wings": 2})",
                        "m.json");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("wings"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("m.json"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ibt::topo
