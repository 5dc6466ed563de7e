// topologies/sim/chunk_parts.hpp: a chunk's summary composed part by part is the summary of
// its ops (template_summary.hpp summarise) up to rounding -- the same entries where no
// path exists (kNever), the others within 1e-12 -- priced on two fabrics, over dense and
// MoE layers, CP (ring, all-gather), recompute, SP, EP, interleaving, zb-h1's B and W,
// the parallel block and a single-stage chunk; and the tolerance catches layers 1e-10 off.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "models/plan/model_file.hpp"
#include "models/plan/step_program.hpp"
#include "topologies/hardware/topology.hpp"
#include "topologies/sim/chunk_parts.hpp"
#include "topologies/sim/sim_pricer.hpp"
#include "topologies/sim/stage_prices.hpp"
#include "topologies/sim/template_summary.hpp"

namespace ibt::topo {
namespace {

using namespace maxplus;

struct Case {
  std::string model;
  models::ParallelSplit split;
};

std::vector<Case> cases() {
  using enum models::ScheduleKind;
  using models::CpComm;
  using models::Recompute;
  return {
      {"deepseek-v3", models::ParallelSplit{.dp = 4,
                                            .tp = 2,
                                            .pp = 4,
                                            .ep = 2,
                                            .vpp = 2,
                                            .microbatches = 8,
                                            .schedule = interleaved,
                                            .sequence_parallel = true,
                                            .recompute = Recompute::none,
                                            .cp = 2,
                                            .cp_comm = CpComm::ring}},
      {"deepseek-v3", models::ParallelSplit{.dp = 2,
                                            .pp = 2,
                                            .ep = 2,
                                            .microbatches = 4,
                                            .micro_batch_size = 2,
                                            .schedule = zb_h1,
                                            .recompute = Recompute::selective,
                                            .cp_comm = CpComm::all_gather}},
      {"mixtral-8x7b", models::ParallelSplit{.dp = 2,
                                             .tp = 2,
                                             .pp = 2,
                                             .ep = 2,
                                             .microbatches = 4,
                                             .schedule = zb_h1,
                                             .sequence_parallel = true,
                                             .recompute = Recompute::full,
                                             .cp = 2,
                                             .cp_comm = CpComm::ring}},
      {"llama3-8b", models::ParallelSplit{.dp = 2,
                                          .tp = 4,
                                          .pp = 4,
                                          .vpp = 2,
                                          .microbatches = 8,
                                          .schedule = interleaved,
                                          .sequence_parallel = true,
                                          .recompute = Recompute::full,
                                          .cp = 2,
                                          .cp_comm = CpComm::ring}},
      {"gpt-j-6b", models::ParallelSplit{.tp = 2,
                                         .pp = 2,
                                         .microbatches = 4,
                                         .schedule = one_f_one_b,
                                         .recompute = Recompute::selective,
                                         .cp = 2,
                                         .cp_comm = CpComm::all_gather}},
      {"tiny-moe", models::ParallelSplit{.dp = 2,
                                         .tp = 2,
                                         .ep = 2,
                                         .microbatches = 2,
                                         .schedule = one_f_one_b,
                                         .sequence_parallel = true,
                                         .recompute = Recompute::none,
                                         .cp_comm = CpComm::all_gather}},
  };
}

// Whether two summaries agree: kNever in the same entries, the others within `tolerance`.
bool agree(const Table& a, const Table& b, double tolerance) {
  for (int k = 0; k < kInputs; ++k)
    for (int j = 0; j < kInputs; ++j) {
      if ((a[k][j] == kNever) != (b[k][j] == kNever)) return false;
      if (a[k][j] != kNever && std::abs(a[k][j] - b[k][j]) > tolerance * std::max(1.0, std::abs(b[k][j]))) return false;
    }
  return true;
}

// The chunk's summary by parts, each part built for it (`fault`: the layers' entries
// off by that fraction, as a wrong association or a lost op would leave them).
Table by_parts(const models::ModelConfig& model, const models::ParallelSplit& split, int stage, int chunk,
               models::Pass pass, StagePrices& prices, double fault = 0) {
  return summarise_by_parts(model, split, stage, chunk, pass, [&](models::ChunkPart part, int layer) {
    PartSummary p = summarise_part(models::build_part_template(model, split, stage, pass, part, layer), prices);
    if (part == models::ChunkPart::layer)
      for (Times& row : p.table)
        for (double& v : row) v *= 1 + fault;
    return p;
  });
}

TEST(ChunkParts, ComposedSummaryIsTheSummaryOfTheChunksOps) {
  size_t chunks = 0;
  for (const std::string fabric : {"dgx-h100", "tpu-v5p"}) {
    const Topology topology = load_topology(fabric);
    for (const Case& c : cases()) {
      const models::ModelConfig model = models::load_model(c.model);
      const models::ParallelSplit& split = c.split;
      TopologyPricer pricer(topology, split, "bf16");
      std::vector<models::Pass> passes{models::Pass::forward, models::Pass::backward};
      if (models::splits_backward(split.schedule)) passes.push_back(models::Pass::weight);
      for (int stage = 0; stage < split.pp; ++stage) {
        StagePrices prices(pricer, stage);
        for (int chunk = 0; chunk < split.vpp; ++chunk)
          for (models::Pass pass : passes) {
            const models::ActionTemplate whole = models::build_action_template(model, split, stage, chunk, pass, false);
            const Table ops = summarise(whole.ops, prices(whole.ops), whole.producer).table;
            EXPECT_TRUE(agree(by_parts(model, split, stage, chunk, pass, prices), ops, 1e-12))
                << fabric << " " << c.model << " " << models::describe(split) << " stage " << stage << " chunk "
                << chunk << " pass " << static_cast<int>(pass);
            ++chunks;
          }
      }
    }
  }
  EXPECT_GE(chunks, 100u);
}

TEST(ChunkParts, TheToleranceCatchesLayersOffByOnePartIn1e10) {
  const Topology topology = load_topology("dgx-h100");
  const models::ModelConfig model = models::load_model("deepseek-v3");
  const models::ParallelSplit split = models::ParallelSplit{.dp = 2,
                                                            .pp = 2,
                                                            .ep = 2,
                                                            .microbatches = 4,
                                                            .micro_batch_size = 2,
                                                            .schedule = models::ScheduleKind::zb_h1,
                                                            .recompute = models::Recompute::selective,
                                                            .cp_comm = models::CpComm::all_gather};
  TopologyPricer pricer(topology, split, "bf16");
  StagePrices prices(pricer, 1);
  const models::ActionTemplate whole = models::build_action_template(model, split, 1, 0, models::Pass::forward, false);
  const Table ops = summarise(whole.ops, prices(whole.ops), whole.producer).table;
  ASSERT_TRUE(agree(by_parts(model, split, 1, 0, models::Pass::forward, prices), ops, 1e-12));
  EXPECT_FALSE(agree(by_parts(model, split, 1, 0, models::Pass::forward, prices, 1e-10), ops, 1e-12));
}

}  // namespace
}  // namespace ibt::topo
