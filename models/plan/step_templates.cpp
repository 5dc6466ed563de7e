// The simulator's templates (topologies/sim): one forward, backward or W action of a
// chunk for any microbatch (build_action_template, build_chunk_ops), one part of a
// chunk (build_part_template), the gradient tail (build_tail_template,
// build_gradient_ops): the ops build_step_program would emit there, with markers for
// the waits that reach outside the list (step_program.hpp).
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "models/plan/step_builder.hpp"

namespace ibt::models {
namespace detail {

// One forward or backward of `chunk` for any microbatch (build_action_template):
// the wait on the received input is kWaitReceived.
ActionTemplate StepBuilder::chunk_ops(int chunk, Pass pass, bool reduce_grads) {
  if (pass == Pass::weight && !split_backward_)
    throw UsageError("step program: schedule " + std::string(to_string(split_.schedule)) +
                     " has no separate weight-gradient (W) pass");
  microbatch_ = -1;
  action_ = -1;
  chunk_ = chunk;
  if (pass == Pass::forward)
    forward_chunk();
  else if (pass == Pass::backward)
    backward_chunk(reduce_grads);
  else
    weight_chunk(reduce_grads);
  ActionTemplate t;
  // A W sends nothing.
  t.producer = producer_ >= 0 && pass != Pass::weight ? producer_ : -1;
  t.ops = std::move(program_.ops);
  return t;
}

// One part of a chunk template (build_part_template), its input kWaitReceived.
ActionTemplate StepBuilder::part_ops(Pass pass, ChunkPart part, int layer) {
  microbatch_ = -1;
  action_ = -1;
  chunk_ = -1;
  phase_ = pass == Pass::forward ? Phase::forward : Phase::backward;
  pass_ = pass;
  producer_ = kWaitReceived;
  switch (part) {
    case ChunkPart::embedding:
      if (pass == Pass::forward)
        embedding_fwd();
      else if (pass == Pass::backward)
        embedding_bwd();
      break;
    case ChunkPart::layer:
      if (pass == Pass::forward)
        layer_fwd(layer);
      else
        layer_bwd(layer);
      break;
    case ChunkPart::head:
      if (pass == Pass::forward)
        head_fwd();
      else
        head_bwd();
      break;
  }
  layer_ = kNoLayer;
  ActionTemplate t;
  t.producer = producer_;
  t.ops = std::move(program_.ops);
  return t;
}

// The gradient reduction and optimizer tail (build_tail_template), as it follows
// the schedule's last action: the first compute op before it is kWaitLastCompute.
std::vector<Op> StepBuilder::gradient_ops() {
  last_compute_ = kWaitLastCompute;
  all_grad_buckets();
  optimizer_step();
  return std::move(program_.ops);
}

// The tail with overlapped gradient reduction: the buckets were reduced in the
// chunks' last backwards (in `chunk_order`), so only the optimizer (waiting for the
// last of those reductions, kWaitLastGrad) and what follows it remain.
std::vector<Op> StepBuilder::overlapped_tail_ops(const std::vector<int>& chunk_order) {
  last_compute_ = kWaitLastCompute;
  for (int chunk : chunk_order) {
    chunk_ = chunk;
    const int vs = vstage();
    const LayerRange r = stage_layers(model_, virtual_stages_, vs);
    if (vs == virtual_stages_ - 1) grad_buckets(model_.layers);
    for (int l = r.end() - 1; l >= r.first; --l) grad_buckets(l);
    if (vs == 0) grad_buckets(kEmbeddingLayer);
  }
  chunk_ = -1;
  const bool reduced = !program_.ops.empty();
  program_.ops.clear();
  last_grad_ = reduced ? kWaitLastGrad : -1;
  optimizer_step();
  return std::move(program_.ops);
}

}  // namespace detail

namespace {
// The rank (0, 0, stage) stands for its stage; the schedule is not consulted by the
// template builders, so an empty one with the split's shape is enough.
PipelineSchedule shape_only(const ParallelSplit& split) {
  PipelineSchedule s;
  s.kind = split.schedule;
  s.stages = split.pp;
  s.chunks = split.vpp;
  s.microbatches = split.microbatches;
  s.per_stage.resize(split.pp);
  return s;
}
}  // namespace

ActionTemplate build_action_template(const ModelConfig& model, const ParallelSplit& split, int stage, int chunk,
                                     Pass pass, bool reduce_grads, const StepProgramOptions& options) {
  validate(split, model, split.world_size());
  if (stage < 0 || stage >= split.pp || chunk < 0 || chunk >= split.vpp)
    throw UsageError("step program: no stage " + std::to_string(stage) + " chunk " + std::to_string(chunk) +
                     " in split " + describe(split));
  const PipelineSchedule shape = shape_only(split);
  const int rank = RankLayout(split).rank_of({0, 0, stage, 0, 0});
  const Pass completes = splits_backward(split.schedule) ? Pass::weight : Pass::backward;
  return detail::StepBuilder(model, split, shape, rank, options)
      .chunk_ops(chunk, pass, reduce_grads && pass == completes);
}

ActionTemplate build_part_template(const ModelConfig& model, const ParallelSplit& split, int stage, Pass pass,
                                   ChunkPart part, int layer, const StepProgramOptions& options) {
  validate(split, model, split.world_size());
  if (split.zero >= 2) throw std::logic_error("step program: ZeRO-2/3 chunks are not built part by part");
  if (stage < 0 || stage >= split.pp)
    throw UsageError("step program: no stage " + std::to_string(stage) + " in split " + describe(split));
  if (pass == Pass::weight && !splits_backward(split.schedule))
    throw UsageError("step program: schedule " + std::string(to_string(split.schedule)) +
                     " has no separate weight-gradient (W) pass");
  if (part == ChunkPart::layer && (layer < 0 || layer >= model.layers))
    throw std::logic_error("step program: no layer " + std::to_string(layer));
  const PipelineSchedule shape = shape_only(split);
  const int rank = RankLayout(split).rank_of({0, 0, stage, 0, 0});
  return detail::StepBuilder(model, split, shape, rank, options).part_ops(pass, part, layer);
}

std::vector<Op> build_tail_template(const ModelConfig& model, const ParallelSplit& split, int stage,
                                    const std::vector<int>& chunk_order, const StepProgramOptions& options) {
  validate(split, model, split.world_size());
  const PipelineSchedule shape = shape_only(split);
  const int rank = RankLayout(split).rank_of({0, 0, stage, 0, 0});
  detail::StepBuilder b(model, split, shape, rank, options);
  return options.overlap_grad_reduce ? b.overlapped_tail_ops(chunk_order) : b.gradient_ops();
}

namespace {
// The template builders' markers mean nothing outside the fast sim: as documented,
// build_chunk_ops and build_gradient_ops leave those waits out.
std::vector<Op> without_markers(std::vector<Op> ops) {
  for (Op& op : ops)
    for (int& w : op.waits)
      if (w < -1) w = -1;
  return ops;
}
}  // namespace

std::vector<Op> build_chunk_ops(const ModelConfig& model, const ParallelSplit& split, int stage, int chunk, Pass pass,
                                const StepProgramOptions& options) {
  validate(split, model, split.world_size());
  if (stage < 0 || stage >= split.pp || chunk < 0 || chunk >= split.vpp)
    throw UsageError("step program: no stage " + std::to_string(stage) + " chunk " + std::to_string(chunk) +
                     " in split " + describe(split));
  const PipelineSchedule shape = shape_only(split);
  const int rank = RankLayout(split).rank_of({0, 0, stage, 0, 0});
  return without_markers(detail::StepBuilder(model, split, shape, rank, options).chunk_ops(chunk, pass, false).ops);
}

std::vector<Op> build_gradient_ops(const ModelConfig& model, const ParallelSplit& split, int stage,
                                   const StepProgramOptions& options) {
  validate(split, model, split.world_size());
  const PipelineSchedule shape = shape_only(split);
  const int rank = RankLayout(split).rank_of({0, 0, stage, 0, 0});
  return without_markers(detail::StepBuilder(model, split, shape, rank, options).gradient_ops());
}

}  // namespace ibt::models
