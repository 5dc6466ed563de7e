#pragma once
// The fraction of a device's large-GEMM rate a GEMM of a given shape reaches: tile and
// wave quantization (NVIDIA, "Matrix Multiplication Background User's Guide",
// https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/,
// sections "Tile Quantization" and "Wave Quantization").
//
// A GEMM kernel cuts its output into tiles of tile_rows x tile_cols; each compute unit
// (SM, MXU) computes one tile at a time, so the tiles run in waves of `units`. A
// partial tile costs a whole one, and the last wave runs on as many units as it has
// tiles while the rest idle. With `groups` independent products of the same shape in
// one launch (a grouped GEMM over experts), their tiles share the waves:
//     tiles = groups * ceil(rows / tile_rows) * ceil(cols / tile_cols)
//     waves = ceil(tiles / units)
//     efficiency = groups * rows * cols / (waves * units * tile_rows * tile_cols)
// 1 when the output is whole tiles filling whole waves; it tends to 1 for large outputs
// of whole tiles. The reduction (K) dimension does not enter: each tile steps through
// it; a short K shows up as a low arithmetic intensity, which the pricer's memory
// roofline already prices.
// The tile is taken in whichever orientation (tile_rows x tile_cols or transposed)
// wastes less: libraries ship both (cuBLAS's 256x128 and 128x256 kernels).
// Where the catalog says a device's library does not quantize waves
// (device.gemm_tiles.wave_quantization 0), the last partial wave is spread over all units
// (stream-K: Osama et al., PPoPP 2023, arXiv:2301.03598; or split-K), so
//     efficiency = groups * rows * cols / (tiles * tile_rows * tile_cols)
// and only partial tiles cost. Measured, not assumed, for Hopper: on an H200 with
// cuBLASLt 13.1 (`ibt gemm --shapes`, topologies/validation/gemm-shapes-h200.csv) a GEMM
// of 1.25 waves of 256x128 tiles ran at the rate of one of exactly 1 wave (810.8 and
// 809.9 TFLOP/s), where wave quantization predicts 0.625 of it;
// tests/topologies/hardware/gemm_shape_test.cpp holds the model to those rows.
// Stated simplifications: one tile shape per device (the libraries pick among several),
// so with waves priced this is the quantization of the kernel the catalog names, an upper
// bound on what a smarter choice loses.

namespace ibt::topo {

struct TileGrid {
  double units = 1;      // compute units a launch spreads its tiles over
  double tile_rows = 1;  // output tile, rows x columns
  double tile_cols = 1;
  bool waves = true;  // false: a partial last wave is spread over all units (stream-K)
};

// The fraction of the units' tile throughput doing useful work, in (0, 1]; throws
// RuntimeError on a non-positive dimension.
double tile_efficiency(const TileGrid& grid, double rows, double cols, double groups = 1);

}  // namespace ibt::topo
