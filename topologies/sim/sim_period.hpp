#pragma once
// The full walk of a one-stage step (pp == 1) by its microbatch period, for the splits
// the fast walk cannot price (sim_fast.hpp fast_walk_prices): ZeRO-2/3, FSDP and HSDP
// without pipeline parallelism, the no-PP splits a search weighs against PP.
//
// Why it is exact. With one stage the step program is the blocks of microbatches
// 0..m-1 in turn (each forward followed by its backward, the ZeRO-3 gathers and the
// per-unit reduce-scatters inside them), then the step's tail (gradient reductions,
// optimizer, gathers). The blocks of microbatches 1..m-2 hold the same ops; only the
// first and the last differ. simulate() times an op as max(its stream's free time, the
// ends of the ops it waits for) + its duration: shifting every input of a block by d
// shifts each of its times by d. So once block j+1's times are block j's shifted by d
// (every op, and every stream's free time at the block's end), and no op waits further
// back than the block before its own, every later middle block is block j+1 shifted by
// one more d, and the last block and the tail are those of any shorter program with
// the same j, shifted: step(m) = step(M) + (m - M) d. The walk builds the programs of
// M and M + 1 microbatches (M small), checks that shift in the first (to 1e-10 of the
// step time: the times add durations in one order, and floating point rounds), and
// extrapolates every additive figure of the breakdown from their difference. Where the
// check fails (no period within M microbatches, a stream that is idle through the
// middle blocks and then starts unbound, a wait reaching two blocks back) it says so
// and the caller walks the full program. tests/topologies/sim/sim_period_test.cpp holds it
// to the full walk on ZeRO-2/3, HSDP, MoE, context-parallel and recompute splits.
#include <memory>
#include <optional>

#include "models/plan/model_config.hpp"
#include "models/plan/parallel_split.hpp"
#include "models/plan/step_program.hpp"
#include "topologies/sim/sim_executor.hpp"
#include "topologies/sim/sim_pricer.hpp"

namespace ibt::topo {

class PeriodStep {
 public:
  // Whether the split has one stage, a schedule whose microbatches run one after the
  // other (1F1B or ZB-H1) and more microbatches than the short programs hold.
  static bool applies(const models::ParallelSplit& split);

  // Builds the short programs (fabric-independent; price them on any topology).
  PeriodStep(const models::ModelConfig& model, const models::ParallelSplit& split,
             const models::StepProgramOptions& options);

  // The step of split.microbatches priced by `pricer`, or nullopt when the short
  // programs do not show the period (then walk the full program).
  std::optional<SimResult> simulate(OpPricer& pricer) const;

 private:
  struct Short {
    models::StepProgram program;
    std::vector<size_t> block_begin;  // op index where microbatch b's block begins; back() = the tail
  };
  int microbatches_ = 0;
  std::vector<Short> shorts_;  // M and M + 1 microbatches
  bool valid_ = false;         // the blocks are contiguous and the middle ones alike
};

}  // namespace ibt::topo
