// The fast walk's per-stage state made ready for a walk (StageWalk::reset), kept per
// thread between walks, and the stages' templates priced and summarised (price_stages).
#include "topologies/sim/stage_walk.hpp"

#include "topologies/sim/stage_prices.hpp"

namespace ibt::topo::fast {

using maxplus::summarise;
using models::ActionTemplate;

void StageWalk::reset(bool detail, bool memoised, size_t actions, size_t slots, size_t final) {
  detailed = detail;
  memo = memoised;
  next = 0;
  free = {0.0, 0.0, 0.0, kNever};
  data_ready = kNever;
  posted.assign(actions, Posted{});
  p2p_free = p2p_done = 0;
  received.assign(slots, kNever);
  ex_ready.clear();
  received_op.clear();
  action_op.clear();
  if (detailed) {
    ex_ready.assign(actions, 0.0);
    received_op.assign(slots, -1);
    action_op.assign(actions, -1);
  }
  ops.clear();
  ready.clear();
  finish.clear();
  dur.clear();
  transfer.clear();
  producer = last_compute = last_grad = -1;
  final_action = final;
  booked = StageTime{};
}

std::vector<StageWalk>& walks_of_this_thread(int stages) {
  thread_local std::vector<StageWalk> walks;
  if (walks.size() < static_cast<size_t>(stages)) walks.resize(stages);
  return walks;
}

PricedStages price_stages(const StepTemplates& templates, OpPricer& pricer) {
  const int P = templates.split().pp;
  PricedStages out;
  out.actions.resize(P);
  out.tails.resize(P);
  for (int s = 0; s < P; ++s) {
    StagePrices prices(pricer, s);
    for (int id = 0; id < templates.templates_per_stage(s); ++id) {
      const ActionTemplate& t = templates.action_template(s, id);
      out.actions[s].push_back(summarise(t.ops, prices(t.ops), t.producer));
    }
    out.tails[s] = summarise(templates.tail(s), prices(templates.tail(s)), -1);
  }
  return out;
}

}  // namespace ibt::topo::fast
