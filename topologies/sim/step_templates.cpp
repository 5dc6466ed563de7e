// StepTemplates (sim_fast.hpp): the fabric-independent half of a split's fast walk, its
// schedule index and the action templates of each stage (forward, backward, W, with and
// without the overlapped gradient ops) and its step-end tail, built once per split and
// priced on any number of topologies.
#include "topologies/sim/sim_fast.hpp"

#include "core/errors.hpp"
#include "topologies/sim/sim_fast_internal.hpp"

namespace ibt::topo {

using models::ActionKind;
using namespace fast;

StepTemplates::StepTemplates(const models::ModelConfig& model, const models::ParallelSplit& split,
                             const models::StepProgramOptions& options)
    : split_(split), index_(schedule_index(split)) {
  models::validate(split, model, split.world_size());
  if (split.schedule == models::ScheduleKind::dualpipev)
    throw UsageError(
        "the fast walk cannot price dualpipev (its paired forward-backward actions interleave "
        "their ops; sim_fast.hpp fast_walk_prices): price it with simulate() on the step programs");
  exchange_bytes_ = models::pipeline_message_bytes(model, split, options);
  const int P = split.pp, V = split.vpp;
  templates_.resize(P);
  action_template_.resize(P);
  tails_.resize(P);
  for (int s = 0; s < P; ++s) {
    templates_[s].resize(static_cast<size_t>(V) * kVariants);
    for (int c = 0; c < V; ++c) {
      templates_[s][template_id(c, 0)] =
          models::build_action_template(model, split, s, c, models::Pass::forward, false, options);
      templates_[s][template_id(c, 1)] =
          models::build_action_template(model, split, s, c, models::Pass::backward, false, options);
      const bool split_backward = index_->schedule.split_backward();
      if (options.overlap_grad_reduce && !split_backward)
        templates_[s][template_id(c, 2)] =
            models::build_action_template(model, split, s, c, models::Pass::backward, true, options);
      if (split_backward) {
        templates_[s][template_id(c, 3)] =
            models::build_action_template(model, split, s, c, models::Pass::weight, false, options);
        if (options.overlap_grad_reduce)
          templates_[s][template_id(c, 4)] =
              models::build_action_template(model, split, s, c, models::Pass::weight, true, options);
      }
    }
    const auto& actions = index_->schedule.per_stage[s];
    action_template_[s].assign(actions.size(), -1);
    for (int i = 0; i < static_cast<int>(actions.size()); ++i)
      if (actions[i].kind != ActionKind::exchange)
        action_template_[s][i] = template_for(*index_, s, i, options.overlap_grad_reduce);
    tails_[s] = models::build_tail_template(model, split, s, index_->chunk_order[s], options);
  }
}

double StepTemplates::op_walk_bytes(bool all_stages) const {
  double ops = 0;
  const int stages = all_stages ? split_.pp : 1;
  for (int s = 0; s < stages; ++s) {
    for (size_t i = 0; i < action_template_[s].size(); ++i) {
      const int id = action_template_[s][i];  // walked each time it runs
      ops += models::runs(index_->schedule, s, static_cast<int>(i)) *
             (id < 0 ? 1.0 : static_cast<double>(templates_[s][id].ops.size()));
    }
    ops += static_cast<double>(tails_[s].size());
  }
  return 2.0 * ops * (sizeof(models::Op) + 4 * sizeof(double));
}

}  // namespace ibt::topo
