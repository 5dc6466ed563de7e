#pragma once
// A chunk template's summary (template_summary.hpp) composed part by part, for the
// search bounds (sim_fast.hpp step_lower_bound): a chunk repeats the same dense or MoE
// layer up to dozens of times, a search bounds 10^4-10^5 distinct chunks (each layer
// count, and whether it holds the embedding or the head, is one), and building,
// pricing and summarising all their ops was half of a large MoE search. Its parts
// (models::build_part_template: the embedding, a dense layer, a MoE layer, the head)
// are summarised once each and composed: a few 4x4 max-plus products per layer.
//
// Exactness: the composition is the chunk's summary in exact arithmetic (a part's ops
// wait for its input where the chunk's wait for the op before it; where they are on
// that op's stream the chunk's do not wait, and the stream is as late). The sums are
// associated part by part, so entries may differ from summarise() on the chunk's ops
// by rounding: tests/topologies/sim/chunk_parts_test.cpp holds them within 1e-12.
#include <functional>

#include "models/plan/model_config.hpp"
#include "models/plan/parallel_split.hpp"
#include "models/plan/step_program.hpp"
#include "topologies/sim/stage_prices.hpp"
#include "topologies/sim/template_summary.hpp"

namespace ibt::topo {

// A part's summary, and whether it adds to the action's chain (else its output, the
// [kReceived] row, passes its input on).
struct PartSummary {
  maxplus::Table table{};
  bool chains = false;
};
PartSummary summarise_part(const models::ActionTemplate& part, StagePrices& prices);

// The summary of the `pass` of chunk `chunk` on `stage` (build_action_template's,
// without overlapped reductions; ZeRO-0/1 splits), from its parts: part_of(part, layer)
// gives each (`layer` one of the chunk's, dense or MoE, for ChunkPart::layer; -1 for
// the others). Asked once per distinct part of the chunk.
using PartOf = std::function<PartSummary(models::ChunkPart part, int layer)>;
maxplus::Table summarise_by_parts(const models::ModelConfig& model, const models::ParallelSplit& split, int stage,
                                  int chunk, models::Pass pass, const PartOf& part_of);

}  // namespace ibt::topo
