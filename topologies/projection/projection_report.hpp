#pragma once
// Projections as text (ibt project, ibt crossover) and as rows of the HDF5 store
// (table "projections" of runs of kind "projection" and "crossover"; the tables
// projection_tables.hpp).
#include <string>
#include <vector>

#include "reports/store/store.hpp"
#include "topologies/projection/projection.hpp"
#include "topologies/projection/projection_tables.hpp"

namespace ibt::topo {

// "dp64 tp8 pp16 ep1 vpp1 m32 b1 1f1b sp zero1 recompute=none" (models::describe).
std::string split_label(const models::ParallelSplit& s);
// "[fsdp tp4 sp] dp512 tp4 ..." : the strategy (models::strategy_label) before the split.
std::string strategy_and_split(const models::ParallelSplit& s);

// A multi-line report of one projection: step time, MFU/HFU, tokens/s, breakdown,
// memory (or the infeasibility reason).
std::string describe_projection(const Projection& p, const std::string& dtype);

// One line per projection, ranked as given: rank, split, step time, MFU, HFU, memory,
// the largest exposed term; `limit` rows at most (0 = all). Rows fit 120 columns with the
// split's compact label (models::compact_label); `wide` adds the strategy column and the
// split's full label (up to ~170 columns).
std::string ranking_table(const std::vector<Projection>& ranked, size_t limit, bool wide = false);

ProjectionRow projection_row(const Projection& p);

// Table "projection_stages": one row per pipeline stage of a feasible projection (its
// compute and exposed parts, which add up to its finish), with bottleneck = 1 on the
// busiest stage (least bubble): reports show that stage's breakdown, the others beside it.
std::vector<ProjectionStageRow> projection_stage_rows(const Projection& p);

}  // namespace ibt::topo

namespace ibt::topo {
// The text of a model file (catalog name or path), to embed in a run's attributes.
std::string model_file_text(const std::string& name_or_path);
}  // namespace ibt::topo
