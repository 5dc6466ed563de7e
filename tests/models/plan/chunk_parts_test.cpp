// build_part_template: a chunk's parts, in the chunk's order, are its action template
// (build_action_template) -- the same ops, with each part's input (kWaitReceived) the
// op the chunk's waits for, or no wait where the chunk's op is on that op's stream --
// over dense and MoE layers, CP (ring and all-gather), recompute, SP, EP, interleaving,
// zb-h1's B and W, the parallel block and a single-stage chunk holding both ends.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/plan/model_file.hpp"
#include "models/plan/schedule.hpp"
#include "models/plan/step_program.hpp"

namespace ibt::models {
namespace {

struct Case {
  std::string model;
  ParallelSplit split;
};

std::vector<Case> cases() {
  using enum ScheduleKind;
  return {
      {"deepseek-v3", ParallelSplit{.dp = 4,
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
      {"deepseek-v3", ParallelSplit{.dp = 2,
                                    .pp = 2,
                                    .ep = 2,
                                    .microbatches = 4,
                                    .micro_batch_size = 2,
                                    .schedule = zb_h1,
                                    .recompute = Recompute::selective,
                                    .cp_comm = CpComm::all_gather}},
      {"mixtral-8x7b", ParallelSplit{.dp = 2,
                                     .tp = 2,
                                     .pp = 2,
                                     .ep = 2,
                                     .microbatches = 4,
                                     .schedule = zb_h1,
                                     .sequence_parallel = true,
                                     .recompute = Recompute::full,
                                     .cp = 2,
                                     .cp_comm = CpComm::ring}},
      {"llama3-8b", ParallelSplit{.dp = 2,
                                  .tp = 4,
                                  .pp = 4,
                                  .vpp = 2,
                                  .microbatches = 8,
                                  .schedule = interleaved,
                                  .sequence_parallel = true,
                                  .recompute = Recompute::full,
                                  .cp = 2,
                                  .cp_comm = CpComm::ring}},
      {"gpt-j-6b", ParallelSplit{.tp = 2,
                                 .pp = 2,
                                 .microbatches = 4,
                                 .schedule = one_f_one_b,
                                 .recompute = Recompute::selective,
                                 .cp = 2,
                                 .cp_comm = CpComm::all_gather}},
      {"tiny-moe", ParallelSplit{.dp = 2,
                                 .tp = 2,
                                 .ep = 2,
                                 .microbatches = 2,
                                 .schedule = one_f_one_b,
                                 .sequence_parallel = true,
                                 .recompute = Recompute::none,
                                 .cp_comm = CpComm::all_gather}},
  };
}

// The chunk's template rebuilt from its parts, as the chunk's Builder chains them.
ActionTemplate from_parts(const ModelConfig& model, const ParallelSplit& split, int stage, int chunk, Pass pass) {
  const int V = split.virtual_stages(), vs = split.virtual_stage(stage, chunk);
  const bool receives = pass == Pass::forward ? vs > 0 : pass == Pass::backward && vs < V - 1;
  ActionTemplate t;
  int producer = receives ? kWaitReceived : -1;  // what the next op of the chain waits for
  auto then = [&](ChunkPart part, int layer) {
    const ActionTemplate p = build_part_template(model, split, stage, pass, part, layer);
    const int offset = static_cast<int>(t.ops.size());
    for (Op op : p.ops) {
      for (int& w : op.waits) {
        if (w >= 0)
          w += offset;
        else if (w == kWaitReceived)
          w = producer >= 0 ? (t.ops[producer].stream != op.stream ? producer : -1) : producer;
      }
      op.chunk = chunk;
      t.ops.push_back(op);
    }
    if (p.producer >= 0) producer = p.producer + offset;
  };
  const LayerRange r = stage_layers(model, V, vs);
  if (pass == Pass::forward) {
    if (vs == 0) then(ChunkPart::embedding, -1);
    for (int l = r.first; l < r.end(); ++l) then(ChunkPart::layer, l);
    if (vs == V - 1) then(ChunkPart::head, -1);
  } else {
    if (vs == V - 1) then(ChunkPart::head, -1);
    for (int l = r.end() - 1; l >= r.first; --l) then(ChunkPart::layer, l);
    if (vs == 0) then(ChunkPart::embedding, -1);
  }
  t.producer = producer >= 0 && pass != Pass::weight ? producer : -1;
  return t;
}

TEST(PlanChunkParts, APartsChainIsItsChunksTemplate) {
  size_t chunks = 0;
  for (const Case& c : cases()) {
    const ModelConfig model = load_model(c.model);
    const ParallelSplit& split = c.split;
    std::vector<Pass> passes{Pass::forward, Pass::backward};
    if (splits_backward(split.schedule)) passes.push_back(Pass::weight);
    for (int stage = 0; stage < split.pp; ++stage)
      for (int chunk = 0; chunk < split.vpp; ++chunk)
        for (Pass pass : passes) {
          const ActionTemplate whole = build_action_template(model, split, stage, chunk, pass, false);
          const ActionTemplate parts = from_parts(model, split, stage, chunk, pass);
          const std::string where = c.model + " " + describe(split) + " stage " + std::to_string(stage) + " chunk " +
                                    std::to_string(chunk) + " pass " + std::to_string(static_cast<int>(pass));
          ASSERT_EQ(parts.ops.size(), whole.ops.size()) << where;
          EXPECT_EQ(parts.producer, whole.producer) << where;
          for (size_t i = 0; i < whole.ops.size(); ++i) {
            const Op &a = parts.ops[i], &b = whole.ops[i];
            ASSERT_EQ(describe(a, static_cast<int>(i)), describe(b, static_cast<int>(i))) << where;
            ASSERT_EQ(a.waits, b.waits) << where << " op " << i;
            ASSERT_EQ(a.flops, b.flops) << where << " op " << i;
            ASSERT_EQ(a.bytes, b.bytes) << where << " op " << i;
            ASSERT_EQ(a.gemm, b.gemm) << where << " op " << i;
            ASSERT_EQ(a.tp_sharded, b.tp_sharded) << where << " op " << i;
            ASSERT_EQ(a.layer, b.layer) << where << " op " << i;
          }
          ++chunks;
        }
  }
  EXPECT_GE(chunks, 50u);
}

TEST(PlanChunkParts, ZeroTwoAndThreeAreRefused) {
  const ModelConfig model = load_model("tiny-moe");
  ParallelSplit split = ParallelSplit{.dp = 2,
                                      .microbatches = 2,
                                      .schedule = ScheduleKind::one_f_one_b,
                                      .recompute = Recompute::none,
                                      .cp_comm = CpComm::all_gather};
  split.zero = 3;
  EXPECT_THROW(build_part_template(model, split, 0, Pass::forward, ChunkPart::layer, 0), std::logic_error);
}

}  // namespace
}  // namespace ibt::models
