#include "topologies/sim/chunk_parts.hpp"

#include <optional>

#include "models/plan/schedule.hpp"

namespace ibt::topo {

using namespace maxplus;

PartSummary summarise_part(const models::ActionTemplate& part, StagePrices& prices) {
  PartSummary p;
  p.chains = part.producer >= 0;
  p.table = summarise(part.ops, prices(part.ops), p.chains ? part.producer : -1).table;
  if (!p.chains) p.table[kReceived] = unit(kReceived);
  return p;
}

Table summarise_by_parts(const models::ModelConfig& model, const models::ParallelSplit& split, int stage, int chunk,
                         models::Pass pass, const PartOf& part_of) {
  const int V = split.virtual_stages();
  const int vs = split.virtual_stage(stage, chunk);
  const models::LayerRange r = models::stage_layers(model, V, vs);
  Table t;
  for (int k = 0; k < kInputs; ++k) t[k] = unit(k);
  // The action's received input: a forward's activation (but the first virtual
  // stage's), a backward's gradient (but the last's); a W's none.
  const bool receives = pass == models::Pass::forward ? vs > 0 : pass == models::Pass::backward && vs < V - 1;
  if (!receives) t[kReceived].fill(kNever);
  bool chains = false;
  auto then = [&](const PartSummary& p) {
    t = compose(t, p.table);
    chains = chains || p.chains;
  };
  // The chunk's layers: its dense ones, then its MoE ones (model_config.hpp
  // layer_is_moe), each kind's part asked once.
  std::optional<PartSummary> dense, moe;
  auto layer = [&](int l) {
    std::optional<PartSummary>& kind = model.layer_is_moe(l) ? moe : dense;
    if (!kind) kind = part_of(models::ChunkPart::layer, l);
    then(*kind);
  };
  if (pass == models::Pass::forward) {
    if (vs == 0) then(part_of(models::ChunkPart::embedding, -1));
    for (int l = r.first; l < r.end(); ++l) layer(l);
    if (vs == V - 1) then(part_of(models::ChunkPart::head, -1));
  } else {
    if (vs == V - 1) then(part_of(models::ChunkPart::head, -1));
    for (int l = r.end() - 1; l >= r.first; --l) layer(l);
    if (vs == 0 && pass == models::Pass::backward) then(part_of(models::ChunkPart::embedding, -1));
  }
  // What a send carries: nothing from a W, nor from an action none of whose parts
  // adds to the chain (build_action_template's producer -1).
  if (pass == models::Pass::weight || !chains) t[kReceived].fill(kNever);
  return t;
}

}  // namespace ibt::topo
