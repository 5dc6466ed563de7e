// GEMM shape efficiency (topologies/hardware/gemm_shape.hpp) and the pricer's use of it
// (sim_pricer.hpp): tile and wave quantization by hand, and GEMM ops priced per pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "models/plan/model_config.hpp"
#include "models/plan/model_file.hpp"
#include "models/plan/step_program.hpp"
#include "topologies/hardware/gemm_shape.hpp"
#include "topologies/hardware/topology.hpp"
#include "topologies/sim/sim_pricer.hpp"

namespace ibt::topo {
namespace {

using models::OpKind;

// dgx-h100's catalog entry: 132 SMs, 256 x 128 tiles, here with waves priced (the
// quantization arithmetic; Hopper's own entry spreads a partial wave, see the H200 test).
TileGrid h100_grid() {
  const Topology t = load_topology("dgx-h100");
  EXPECT_TRUE(t.device.gemm_tiles.has_value());
  TileGrid grid = t.device.gemm_tiles->grid();
  grid.waves = true;
  return grid;
}

TEST(GemmShape, TilesThatFillTheUnitsRunAtFullRateAndOneMoreTileCostsAWave) {
  const TileGrid h100 = h100_grid();
  ASSERT_EQ(h100.units, 132);
  // 256 x (132 * 128): 132 tiles of 256 x 128 (or 2 x 66 of 128 x 256), one full wave.
  EXPECT_DOUBLE_EQ(tile_efficiency(h100, 256, 132 * 128), 1.0);
  // One more tile of columns: 133 tiles need two waves of 132 units, the second
  // holding one tile: 133 tiles' work in the time of 264.
  EXPECT_DOUBLE_EQ(tile_efficiency(h100, 256, 133 * 128), 133.0 / 264.0);
  // Two full waves again at 264 tiles.
  EXPECT_DOUBLE_EQ(tile_efficiency(h100, 256, 264 * 128), 1.0);
}

TEST(GemmShape, PartialTilesCostWholeTiles) {
  const TileGrid one_unit{1, 4, 2};
  // 5 x 2 needs two 4 x 2 tiles (or three 2 x 4 ones: the 4 x 2 orientation wastes less).
  EXPECT_DOUBLE_EQ(tile_efficiency(one_unit, 5, 2), 10.0 / 16.0);
  // 2 x 5 is the transpose: the 2 x 4 orientation gives the same.
  EXPECT_DOUBLE_EQ(tile_efficiency(one_unit, 2, 5), 10.0 / 16.0);
  // A grouped GEMM: 3 groups of 4 x 2 on 2 units: 3 tiles, 2 waves.
  EXPECT_DOUBLE_EQ(tile_efficiency(TileGrid{2, 4, 2}, 4, 2, 3), 3.0 / 4.0);
}

TEST(GemmShape, HugeGemmsTendToTheLargeGemmRate) {
  const TileGrid h100 = h100_grid();
  // Square outputs that are not whole tiles or whole waves: the waste is at most one
  // partial tile per row and column and one partial wave, a shrinking share.
  EXPECT_LT(tile_efficiency(h100, 1000, 1000), 0.6);
  for (double n : {100000.0, 1000000.0}) {
    EXPECT_LE(tile_efficiency(h100, n, n), 1.0);
    EXPECT_GT(tile_efficiency(h100, n, n), 0.99) << n;
  }
  EXPECT_GT(tile_efficiency(h100, 1 << 20, 1 << 20), 0.999);
  EXPECT_THROW(tile_efficiency(h100, 0, 128), RuntimeError);
  EXPECT_THROW(tile_efficiency(TileGrid{0, 128, 128}, 128, 128), RuntimeError);
}

// A GEMM op of [rows x k] x [k x n], as the step program writes it.
models::Op gemm_op(OpKind kind, double rows, double k, double n, int groups, std::uint8_t passes) {
  models::Op op;
  op.kind = kind;
  const int count = std::popcount(static_cast<unsigned>(passes));
  op.flops = count * 2.0 * rows * k * n;
  op.bytes = count * 2.0 * (rows * k + groups * k * n + rows * n);
  op.gemm = {static_cast<float>(rows / groups), static_cast<float>(k), static_cast<float>(n),
             static_cast<std::uint16_t>(groups), passes};
  return op;
}

TEST(GemmShape, PricerRunsEachPassAtItsOutputsTileEfficiency) {
  Topology t = load_topology("dgx-h100");
  t.model.op_overhead_us.value = 0;
  ASSERT_FALSE(t.device.gemm_tiles->prices_waves());
  t.device.gemm_tiles->wave_quantization.value = 1;  // the wave arithmetic below
  const models::ParallelSplit s;
  const models::StepProgram none;
  TopologyPricer pricer(t, s, "bf16");
  const double rate = 989.5e6 * t.model.gemm_efficiency.get();  // FLOP per us
  // Forward product of 256 x 8192 x (133 * 128): output 256 x 17024 (133 tiles: 2 waves),
  // compute-bound (K = 8192).
  const models::Op fwd = gemm_op(OpKind::mlp_up_gemm, 256, 8192, 133 * 128, 1, models::gemm_product);
  EXPECT_NEAR(pricer.op_us(none, fwd), fwd.flops / (rate * 133.0 / 264.0), 1e-9 * fwd.flops / rate);
  // Its backward: input gradient 256 x 8192 (32 x 2 = 64 tiles of 132 units) and weight
  // gradient 8192 x 17024, K = 256, each half the FLOPs and bytes, each its own roofline.
  const models::Op bwd =
      gemm_op(OpKind::mlp_up_gemm, 256, 8192, 133 * 128, 1, models::gemm_input_grad | models::gemm_weight_grad);
  const double bw = 3350e3 * t.model.memory_efficiency.get();
  const TileGrid h100 = h100_grid();
  const double dgrad = std::max(fwd.flops / (rate * tile_efficiency(h100, 256, 8192)), fwd.bytes / bw);
  const double wgrad = std::max(fwd.flops / (rate * tile_efficiency(h100, 8192, 133 * 128)), fwd.bytes / bw);
  EXPECT_NEAR(tile_efficiency(h100, 256, 8192), 64.0 / 132.0, 1e-12);
  EXPECT_NEAR(pricer.op_us(none, bwd), dgrad + wgrad, 1e-9 * (dgrad + wgrad));
  // Without the device's tiles the same op is priced at the flat rate.
  Topology flat = t;
  flat.device.gemm_tiles.reset();
  TopologyPricer flat_pricer(flat, s, "bf16");
  EXPECT_NEAR(flat_pricer.op_us(none, fwd), fwd.flops / rate, 1e-9 * fwd.flops / rate);
  // Hopper's catalog entry spreads the partial wave: 133 whole tiles cost no more per
  // FLOP than 132, and only partial tiles cost (256 x 8000 pads to 256 x 8064).
  const Topology hopper = load_topology("dgx-h100");
  TopologyPricer spread(hopper, s, "bf16");
  const double hopper_rate = 989.5e6 * hopper.model.gemm_efficiency.get();
  const double overhead = hopper.model.op_overhead_us.get();
  EXPECT_NEAR(spread.op_us(none, fwd), fwd.flops / hopper_rate + overhead, 1e-9 * fwd.flops / hopper_rate);
  const models::Op padded = gemm_op(OpKind::mlp_up_gemm, 256, 8192, 8000, 1, models::gemm_product);
  EXPECT_NEAR(spread.op_us(none, padded), padded.flops / (hopper_rate * 8000.0 / 8064.0) + overhead,
              1e-9 * padded.flops / hopper_rate);
}

// One row of topologies/validation/gemm-shapes-h200.csv.
struct MeasuredGemm {
  int run = 0;
  double m = 0, n = 0, k = 0, tflops = 0;
};

std::vector<MeasuredGemm> h200_sweep() {
  const std::string path = std::string(IBT_TEST_VALIDATION_DIR) + "/gemm-shapes-h200.csv";
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::vector<MeasuredGemm> rows;
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header) {  // run,name,m,n,k,dtype,median_us,min_us,tflops,rel_error,input_sets
      EXPECT_EQ(line.rfind("run,name,m,n,k,dtype,median_us,min_us,tflops,", 0), 0u) << line;
      header = false;
      continue;
    }
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
    EXPECT_EQ(f.size(), 11u) << line;
    if (f.size() != 11 || f[5] != "bf16") continue;
    rows.push_back({std::stoi(f[0]), std::stod(f[2]), std::stod(f[3]), std::stod(f[4]), std::stod(f[8])});
  }
  return rows;
}

// Measured on an H200 (`ibt gemm --shapes`, cuBLASLt 13.1): shapes of n = 4224 (33 tile
// columns), k = 8192, whose 256 x 128 tiles make exactly 1 and 2 waves over 132 SMs
// (m = 1024, 2048) and 1.25 and 2.25 waves (m = 1280, 2304). Priced with waves, the
// partial wave would cost 0.625 and 0.75 of the whole-wave rate; the GPU ran them within
// 1.2% of it. dgx-h200's entry (wave_quantization 0) must predict each pair's measured
// rate ratio within 5%, and the same grid with waves priced must miss it by far: the
// check can fail, and did fail for the model this repository had before the measurement.
TEST(GemmShape, H200SweepRunsPartialWavesAtTheWholeWaveRate) {
  const auto rows = h200_sweep();
  const auto rate = [&](double m) {
    for (const auto& r : rows)
      if (r.run == 2 && r.m == m && r.n == 4224 && r.k == 8192) return r.tflops;
    ADD_FAILURE() << "no measured row " << m << "x4224x8192";
    return 1.0;
  };
  const Topology t = load_topology("dgx-h200");
  ASSERT_TRUE(t.device.gemm_tiles.has_value());
  const TileGrid h200 = t.device.gemm_tiles->grid();
  TileGrid with_waves = h200;
  with_waves.waves = true;
  for (auto [whole, partial] : {std::pair{1024.0, 1280.0}, {2048.0, 2304.0}}) {
    const double measured = rate(partial) / rate(whole);
    const double predicted = tile_efficiency(h200, partial, 4224) / tile_efficiency(h200, whole, 4224);
    const double waves_predicted =
        tile_efficiency(with_waves, partial, 4224) / tile_efficiency(with_waves, whole, 4224);
    EXPECT_NEAR(predicted, measured, 0.05) << partial << " rows against " << whole;
    EXPECT_GT(std::abs(waves_predicted - measured), 0.2) << partial << " rows against " << whole;
  }
}

// DeepSeek-V3's routed experts at EP 8 (32 local experts) with few tokens per expert:
// the grouped GEMM reads 32 weights and runs 32 products, so it is slower per FLOP than
// one dense GEMM of the same rows, K and N (the same FLOPs).
TEST(GemmShape, ExpertGemmsAreSlowerPerFlopThanTheDenseGemmOfTheSameFlops) {
  const models::ModelConfig m = models::load_model("deepseek-v3");
  const Topology t = load_topology("dgx-b200");
  models::ParallelSplit s;
  s.ep = 8;
  s.dp = 8;
  TopologyPricer pricer(t, s, "bf16");
  const models::StepProgram none;
  const int experts = m.num_experts / s.ep;
  for (double per_expert : {16.0, 128.0}) {  // routed rows per local expert
    const double rows = per_expert * experts;
    for (std::uint8_t passes :
         {std::uint8_t{models::gemm_product}, std::uint8_t{models::gemm_input_grad | models::gemm_weight_grad}}) {
      const models::Op expert =
          gemm_op(OpKind::expert_up_gemm, rows, m.hidden, 2.0 * m.expert_ffn_hidden, experts, passes);
      const models::Op dense = gemm_op(OpKind::expert_up_gemm, rows, m.hidden, 2.0 * m.expert_ffn_hidden, 1, passes);
      ASSERT_DOUBLE_EQ(expert.flops, dense.flops);
      EXPECT_GT(pricer.op_us(none, expert), 1.05 * pricer.op_us(none, dense)) << per_expert << " rows per expert";
      // The tiles alone, at the dense GEMM's bytes: 16 rows fill an eighth of a 128-row
      // tile. 128 rows are whole tiles, as many as the dense product's, so the forward
      // costs the same and the weights' bytes are what make the experts slower. (The
      // experts' weight gradients are 32 outputs of K = 128: more tiles, each short,
      // which only their bytes price.)
      models::Op tiles_only = expert;
      tiles_only.bytes = dense.bytes;
      const double dense_us = pricer.op_us(none, dense);
      if (per_expert < 128) {
        EXPECT_GT(pricer.op_us(none, tiles_only), 2 * dense_us);
      } else if (passes == models::gemm_product) {
        EXPECT_NEAR(pricer.op_us(none, tiles_only), dense_us, 1e-9 * dense_us);
      }
    }
  }
}

}  // namespace
}  // namespace ibt::topo
