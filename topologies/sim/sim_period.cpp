#include "topologies/sim/sim_period.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/plan/schedule.hpp"
#include "topologies/sim/stage_prices.hpp"

namespace ibt::topo {
namespace {

using models::Op;
using models::StepProgram;

// M, the short program's microbatches: the first block differs (nothing to prefetch
// behind), the period shows from block 1 or 2 on in every split the tests walk, and
// blocks j, j+1 must both lie before the last block. Searches need no more.
constexpr int kShortMicrobatches = 8;
// The shift a period must show, as a fraction of the short step's time (steady_state.hpp's
// kJumpTolerance, for the same reason: durations added in different orders).
constexpr double kPeriodTolerance = 1e-10;

// Two ops of different blocks are the same op when everything but their microbatch and
// action agrees and each wait points `shift` ops further on (or nowhere in both).
bool same_op(const Op& a, const Op& b, size_t shift) {
  if (a.kind != b.kind || a.phase != b.phase || a.group != b.group || a.stream != b.stream ||
      a.tp_sharded != b.tp_sharded || a.expert != b.expert || a.layer != b.layer || a.chunk != b.chunk ||
      a.flops != b.flops || a.bytes != b.bytes || !(a.gemm == b.gemm))
    return false;
  for (size_t w = 0; w < a.waits.size(); ++w) {
    if ((a.waits[w] < 0) != (b.waits[w] < 0)) return false;
    if (a.waits[w] >= 0 && static_cast<size_t>(b.waits[w]) != static_cast<size_t>(a.waits[w]) + shift) return false;
  }
  return true;
}

// Whether ops [a, a + n) and [b, b + n) are the same ops, b - a further on.
bool same_ops(const std::vector<Op>& ops_a, size_t a, const std::vector<Op>& ops_b, size_t b, size_t n) {
  if (b < a) return false;
  for (size_t i = 0; i < n; ++i)
    if (!same_op(ops_a[a + i], ops_b[b + i], b - a)) return false;
  return true;
}

// Where each microbatch's block begins (and, last, where the tail begins), or an empty
// list when the ops do not run microbatch after microbatch, or an op waits further back
// than the block before its own.
std::vector<size_t> find_blocks(const StepProgram& prog, int microbatches) {
  std::vector<size_t> begin;
  int current = 0;
  begin.push_back(0);
  for (size_t i = 0; i < prog.ops.size(); ++i) {
    const Op& op = prog.ops[i];
    if (op.kind == models::OpKind::pp_exchange) return {};
    const int block = op.action < 0 ? microbatches : prog.actions.at(op.action).microbatch;
    if (block < current || block > current + 1) return {};
    if (block == current + 1) {
      begin.push_back(i);
      current = block;
    }
    const size_t earliest = begin[std::max(0, current - 1)];
    for (int w : op.waits)
      if (w >= 0 && static_cast<size_t>(w) < earliest) return {};
  }
  if (current != microbatches) return {};  // no tail, or a microbatch without ops
  return begin;
}

// simulate()'s arithmetic for a program without pipeline exchanges: an op starts when
// its stream is free and the ops it waits for have ended. Also each stream's free time
// at each block's end.
struct Walked {
  std::vector<double> ready, finish, dur;
  std::vector<std::array<double, models::kNumStreams>> free_at_end;  // [block]
};

// prices: the stage's memo, shared by both short programs (the same few dozen ops).
Walked walk(const StepProgram& prog, const std::vector<size_t>& block_begin, StagePrices& prices) {
  Walked w;
  const size_t n = prog.ops.size();
  w.dur = prices(prog.ops);
  w.ready.assign(n, 0.0);
  w.finish.assign(n, 0.0);
  std::array<double, models::kNumStreams> free{};
  size_t block = 0;
  for (size_t i = 0; i < n; ++i) {
    while (block + 1 < block_begin.size() && i == block_begin[block + 1]) {
      w.free_at_end.push_back(free);
      ++block;
    }
    const Op& op = prog.ops[i];
    double start = free[static_cast<int>(op.stream)];
    for (int k : op.waits)
      if (k >= 0) start = std::max(start, w.finish[k]);
    w.ready[i] = start;
    w.finish[i] = start + w.dur[i];
    free[static_cast<int>(op.stream)] = w.finish[i];
  }
  w.free_at_end.push_back(free);
  return w;
}

// The first middle block j (1 <= j, j + 1 before the last block) whose successor is
// itself shifted by d, with every stream either shifted by d at the blocks' ends or
// idle through them and not what holds up its next op. -1 when there is none.
int find_period(const StepProgram& prog, const std::vector<size_t>& begin, const Walked& w, double tolerance,
                double& d) {
  const int M = static_cast<int>(begin.size()) - 1;
  const size_t L = begin[2] - begin[1];
  for (int j = 1; j + 1 <= M - 2; ++j) {
    const size_t a = begin[j], b = begin[j + 1];
    d = w.ready[b] - w.ready[a];
    bool shifted = true;
    for (size_t i = 0; i < L && shifted; ++i)
      shifted = std::abs(w.ready[b + i] - w.ready[a + i] - d) <= tolerance &&
                std::abs(w.finish[b + i] - w.finish[a + i] - d) <= tolerance;
    for (int s = 0; s < models::kNumStreams && shifted; ++s) {
      const double before = w.free_at_end[j][s], after = w.free_at_end[j + 1][s];
      if (std::abs(after - before - d) <= tolerance) continue;
      if (after != before) {
        shifted = false;
        break;
      }
      // Idle through the middle blocks: its next op must start on a wait, later than
      // the stream frees, so that it moves with the blocks in a longer program.
      for (size_t i = begin[j + 2]; i < prog.ops.size(); ++i) {
        if (static_cast<int>(prog.ops[i].stream) != s) continue;
        shifted = w.ready[i] > after + tolerance;
        break;
      }
    }
    if (shifted) return j;
  }
  return -1;
}

// The breakdown of a walked short program (no exchanges: no transfer times).
StageTime breakdown(const StepProgram& prog, const Walked& w) {
  return stage_breakdown(prog.stage, prog.ops, w.ready, w.finish, w.dur, std::vector<double>(prog.ops.size(), 0.0));
}

StageTime extrapolate(const StageTime& a, const StageTime& b, double n) {
  StageTime out = a;
  out.finish_us = a.finish_us + n * (b.finish_us - a.finish_us);
  out.compute_us = a.compute_us + n * (b.compute_us - a.compute_us);
  for (size_t e = 0; e < out.exposed_us.size(); ++e)
    out.exposed_us[e] = a.exposed_us[e] + n * (b.exposed_us[e] - a.exposed_us[e]);
  for (size_t k = 0; k < out.op_us.size(); ++k) out.op_us[k] = a.op_us[k] + n * (b.op_us[k] - a.op_us[k]);
  return out;
}

}  // namespace

bool PeriodStep::applies(const models::ParallelSplit& split) {
  const bool in_turn =
      split.schedule == models::ScheduleKind::one_f_one_b || split.schedule == models::ScheduleKind::zb_h1;
  return split.pp == 1 && split.vpp == 1 && in_turn && split.microbatches > kShortMicrobatches + 1;
}

PeriodStep::PeriodStep(const models::ModelConfig& model, const models::ParallelSplit& split,
                       const models::StepProgramOptions& options)
    : microbatches_(split.microbatches) {
  if (!applies(split)) return;
  for (int m : {kShortMicrobatches, kShortMicrobatches + 1}) {
    models::ParallelSplit s = split;
    s.microbatches = m;
    Short sh;
    sh.program = models::build_step_program(model, s, 0, options);
    sh.block_begin = find_blocks(sh.program, m);
    if (sh.block_begin.empty()) return;
    shorts_.push_back(std::move(sh));
  }
  // The middle blocks of both programs are one block's ops, and the longer program's
  // last block and tail are the shorter's, one block further on: what a program of
  // split.microbatches then holds too.
  const Short& a = shorts_[0];
  const Short& b = shorts_[1];
  const size_t L = a.block_begin[2] - a.block_begin[1];
  for (const Short* s : {&a, &b}) {
    const int M = static_cast<int>(s->block_begin.size()) - 1;
    for (int k = 1; k <= M - 2; ++k)
      if (s->block_begin[k + 1] - s->block_begin[k] != L ||
          !same_ops(a.program.ops, a.block_begin[1], s->program.ops, s->block_begin[k], L))
        return;
  }
  const size_t last_a = a.block_begin[kShortMicrobatches - 1];
  const size_t last_b = b.block_begin[kShortMicrobatches];
  if (b.program.ops.size() - last_b != a.program.ops.size() - last_a ||
      !same_ops(a.program.ops, last_a, b.program.ops, last_b, a.program.ops.size() - last_a) ||
      !same_ops(a.program.ops, 0, b.program.ops, 0, a.block_begin[1]))
    return;
  valid_ = true;
}

std::optional<SimResult> PeriodStep::simulate(OpPricer& pricer) const {
  if (!valid_) return std::nullopt;
  const Short& a = shorts_[0];
  const Short& b = shorts_[1];
  StagePrices prices(pricer, a.program.stage);
  const Walked wa = walk(a.program, a.block_begin, prices);
  const double scale = *std::max_element(wa.finish.begin(), wa.finish.end());
  const double tolerance = kPeriodTolerance * scale;
  double d = 0;
  if (find_period(a.program, a.block_begin, wa, tolerance, d) < 0) return std::nullopt;
  const Walked wb = walk(b.program, b.block_begin, prices);
  const StageTime sa = breakdown(a.program, wa);
  const StageTime sb = breakdown(b.program, wb);
  // One more middle block adds d to the step (what the period says); anything else
  // means the step's end is not where the period carries it.
  if (std::abs(sb.finish_us - sa.finish_us - d) > tolerance) return std::nullopt;
  SimResult result;
  result.stages.push_back(extrapolate(sa, sb, microbatches_ - kShortMicrobatches));
  result.step_us = result.stages.front().finish_us;
  result.jumped_repetitions = microbatches_ - kShortMicrobatches - 1;
  return result;
}

}  // namespace ibt::topo
