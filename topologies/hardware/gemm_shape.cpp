#include "topologies/hardware/gemm_shape.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/errors.hpp"

namespace ibt::topo {

double tile_efficiency(const TileGrid& grid, double rows, double cols, double groups) {
  if (!(rows > 0 && cols > 0 && groups > 0 && grid.units > 0 && grid.tile_rows > 0 && grid.tile_cols > 0))
    throw RuntimeError("gemm shape: non-positive dimension (rows " + std::to_string(rows) + ", cols " +
                       std::to_string(cols) + ", groups " + std::to_string(groups) + ")");
  const auto efficiency = [&](double tile_rows, double tile_cols) {
    const double tiles = groups * std::ceil(rows / tile_rows) * std::ceil(cols / tile_cols);
    // Without wave quantization the tiles' work is spread evenly over the units (stream-K
    // splits the last wave's K loops), so only the partial tiles' padding is lost.
    const double slots = grid.waves ? std::ceil(tiles / grid.units) * grid.units : tiles;
    return groups * rows * cols / (slots * tile_rows * tile_cols);
  };
  return std::max(efficiency(grid.tile_rows, grid.tile_cols), efficiency(grid.tile_cols, grid.tile_rows));
}

}  // namespace ibt::topo
