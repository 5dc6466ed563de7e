#pragma once
// Private to topologies/sim: nothing outside this folder may include it (the public
// names are in sim_fast.hpp). What the fast walk's files share about a stage's action
// templates: their ids (StepTemplates, step_templates.cpp), which the walk
// (sim_fast.cpp) and the search bounds (search_bounds.cpp) read too.
#include "models/plan/schedule.hpp"
#include "models/plan/step_program.hpp"
#include "topologies/sim/sim_fast.hpp"

namespace ibt::topo::fast {

// Templates per chunk: forward, backward, backward with the overlapped gradient ops,
// and with a split backward (zb-h1) W, W with the overlapped gradient ops (the
// backward is then B and never reduces).
constexpr int kVariants = 5;
inline int template_id(int chunk, int variant) { return chunk * kVariants + variant; }
inline bool reduces_gradients(int id) { return id % kVariants == 2 || id % kVariants == 4; }
inline models::Pass pass_of(int id) {
  const int variant = id % kVariants;
  return variant == 0 ? models::Pass::forward : variant <= 2 ? models::Pass::backward : models::Pass::weight;
}
// The template of a forward, backward or W action.
inline int template_for(const ScheduleIndex& ix, int stage, int action, bool overlap_grad_reduce) {
  const auto& a = ix.action(stage, action);
  const bool reduce = overlap_grad_reduce && ix.last_grads[stage][a.chunk] == action;
  if (a.kind == models::ActionKind::forward) return template_id(a.chunk, 0);
  if (a.kind == models::ActionKind::weight) return template_id(a.chunk, reduce ? 4 : 3);
  return template_id(a.chunk, reduce ? 2 : 1);
}

}  // namespace ibt::topo::fast
