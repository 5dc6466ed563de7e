// simulate_fast() (sim_fast.hpp): one step of a split priced on one pricer by walking
// every stage action by action from the split's templates (StepTemplates): a summary
// applied per action, or the ops walked with simulate()'s arithmetic where a stage's
// breakdown is wanted; the exchanges paired between stages as simulate() pairs them; a
// compact schedule's period walked as often as it repeats, or jumped over once its state
// repeats (SteadyState); and each stage's step-end tail. The stage state and its steps
// are in stage_walk.hpp.
#include "topologies/sim/sim_fast.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "topologies/sim/sim_fast_internal.hpp"
#include "topologies/sim/stage_walk.hpp"
#include "topologies/sim/steady_state.hpp"
#include "topologies/sim/template_summary.hpp"

namespace ibt::topo {

using models::ActionKind;
using models::ActionTemplate;
using models::Group;
using models::Op;
using models::OpKind;
using models::Stream;

using namespace maxplus;
using namespace fast;

namespace {

// One simulate_fast(): the split's templates priced, a walk per stage (this thread's,
// made ready), and how the walks advance together, exchanges pairing the stages.
class FastWalk {
 public:
  FastWalk(const StepTemplates& templates, OpPricer& pricer, StageDetail detail);
  SimResult run();

 private:
  double half_us(int stage, int peer);
  void total_templates();
  void book_action(StageWalk& w, int s, int action, int id, long long in);
  void walk_compute(StageWalk& w, int s, size_t i, int slot);
  void post_exchange(StageWalk& w, size_t i, const ScheduleIndex::Step& a);
  bool complete_exchange(StageWalk& w, int s, size_t i, const ScheduleIndex::Step& a, int slot);
  bool walk_stage(int s, size_t limit, int shift, size_t& remaining);
  void walk_to(const std::vector<size_t>& limit, int shift);
  long walk_schedule();
  StageTime finish_stage(int s);

  const StepTemplates& templates_;
  OpPricer& pricer_;
  const StageDetail detail_;
  const ScheduleIndex& ix_;
  const int stages_, chunks_, microbatches_;
  PricedStages priced_stages_;
  const std::vector<std::vector<PricedTemplate>>& priced_;
  const std::vector<PricedTemplate>& tails_;
  // Exchange halves cost the same for every message between two stages.
  models::StepProgram stub_;
  Op exchange_;
  std::vector<double> half_cost_;
  std::vector<StageWalk>& walks_;
  // The memoised first stage: a forward/backward walked op by op and broken down, or
  // its summary applied and a remembered breakdown booked. The chunks' last backwards
  // with overlapped reductions and the stage's final action are always walked: the
  // tail's waits reach into them.
  BreakdownMemo memo_;
  std::vector<StageTime> template_totals_;  // compute_us and op_us of each template
};

FastWalk::FastWalk(const StepTemplates& templates, OpPricer& pricer, StageDetail detail)
    : templates_(templates),
      pricer_(pricer),
      detail_(detail),
      ix_(templates.index()),
      stages_(static_cast<int>(ix_.schedule.per_stage.size())),
      chunks_(ix_.schedule.chunks),
      microbatches_(ix_.schedule.microbatches),
      priced_stages_(price_stages(templates, pricer)),
      priced_(priced_stages_.actions),
      tails_(priced_stages_.tails),
      half_cost_(static_cast<size_t>(stages_) * stages_, -1.0),
      walks_(walks_of_this_thread(stages_)),
      memo_(stages_ == 0 ? 0 : static_cast<size_t>(templates.templates_per_stage(0))) {
  exchange_.kind = OpKind::pp_exchange;
  exchange_.group = Group::pp;
  exchange_.stream = Stream::p2p;
  exchange_.bytes = templates.exchange_bytes();
  const auto& per_stage = ix_.schedule.per_stage;
  for (int s = 0; s < stages_; ++s)
    walks_[s].reset(detail == StageDetail::all || s == 0, detail == StageDetail::first && s == 0, per_stage[s].size(),
                    2 * static_cast<size_t>(microbatches_) * chunks_, ix_.final_action[s]);
  if (stages_ > 0 && walks_[0].memo) total_templates();
}

double FastWalk::half_us(int stage, int peer) {
  double& c = half_cost_[static_cast<size_t>(stage) * stages_ + peer];
  if (c < 0) {
    stub_.stage = stage;
    c = pricer_.exchange_half_us(stub_, exchange_, peer);
  }
  return c;
}

// template_totals_: what each first-stage template books whatever its offsets.
void FastWalk::total_templates() {
  for (int id = 0; id < templates_.templates_per_stage(0); ++id) {
    StageTime t;
    const auto& ops = templates_.action_template(0, id).ops;
    for (size_t k = 0; k < ops.size(); ++k) {
      t.op_us[static_cast<int>(ops[k].kind)] += priced_[0][id].dur[k];
      if (ops[k].stream == Stream::compute) t.compute_us += priced_[0][id].dur[k];
    }
    template_totals_.push_back(t);
  }
}

// An action of the memoised first stage: a remembered breakdown booked with its summary
// applied, or walked op by op and broken down (and remembered).
void FastWalk::book_action(StageWalk& w, int s, int action, int id, long long in) {
  const double now = w.free[kCompute];
  BreakdownMemo::Key key;
  key.received = in >= 0;
  key.offsets = {w.free[kComm] - now, w.free[kGradComm] - now, 0.0, 0.0};
  if (key.received) {
    const int op = w.received_op[in];
    key.offsets[2] = w.finish[op] - now;
    key.offsets[3] = w.transfer[op];
  }
  // Inputs that move no op of the action are left out of the key (the grad_comm
  // stream's time, say, when the action has no gradient reduction).
  const Times& below = priced_[s][id].irrelevant_below;
  if (key.offsets[0] <= below[kComm]) key.offsets[0] = kNever;
  if (key.offsets[1] <= below[kGradComm]) key.offsets[1] = kNever;
  if (key.received && key.offsets[2] <= below[kReceived]) key.offsets[2] = key.offsets[3] = kNever;
  const bool always = static_cast<size_t>(action) == w.final_action || reduces_gradients(id);
  const auto* known = always ? nullptr : memo_.find(id, key, now);
  if (known) {
    apply(w, priced_[s][id], key.received ? w.received[in] : kNever);
    w.producer = -1;  // not in the op list: a later exchange's wait is not booked through it
    StageTime part = template_totals_[id];
    part.exposed_us = *known;
    add_into(w.booked, part);
    return;
  }
  BreakdownRange range;
  range.first = w.ops.size();
  range.compute_free = now;
  range.step_end = false;
  const ActionTemplate& t = templates_.action_template(s, id);
  walk_ops(w, t.ops, priced_[s][id].dur, priced_[s][id].producer, key.received ? w.received_op[in] : -1);
  const StageTime part = stage_breakdown(s, w.ops, w.ready, w.finish, w.dur, w.transfer, range);
  add_into(w.booked, part);
  if (!always) memo_.add(id, key, part.exposed_us);
}

// Forward, backward or W action i of stage s, its input (if any) in `slot`.
void FastWalk::walk_compute(StageWalk& w, int s, size_t i, int slot) {
  const int id = templates_.template_of(s, static_cast<int>(i));
  const long long in = slot;
  if (w.memo) {
    book_action(w, s, static_cast<int>(i), id, in);
  } else if (w.detailed) {
    const ActionTemplate& t = templates_.action_template(s, id);
    walk_ops(w, t.ops, priced_[s][id].dur, priced_[s][id].producer, in >= 0 ? w.received_op[in] : -1);
  } else {
    apply(w, priced_[s][id], in >= 0 ? w.received[in] : kNever);
  }
}

// Posts exchange action i's halves as simulate() does: the receive when the p2p stream
// reaches it, the send when its data is produced too. A detailed stage lists its op.
void FastWalk::post_exchange(StageWalk& w, size_t i, const ScheduleIndex::Step& a) {
  StageWalk::Posted& mine = w.posted[i];
  mine.recv = w.p2p_free;
  mine.send = std::max(w.p2p_free, a.send ? std::max(0.0, w.data_ready) : 0.0);
  mine.done = true;
  if (!w.detailed) return;
  w.ex_ready[i] = a.recv ? mine.recv : mine.send;
  Op op;
  op.kind = OpKind::pp_exchange;
  op.group = Group::pp;
  op.stream = Stream::p2p;
  op.bytes = templates_.exchange_bytes();
  op.action = static_cast<int>(i);
  if (a.send && w.producer >= 0) op.waits[0] = w.producer;
  w.action_op[i] = static_cast<int>(w.ops.size());
  w.ops.push_back(op);
  w.ready.push_back(w.ex_ready[i]);
  w.finish.push_back(0.0);
  w.dur.push_back(0.0);
  w.transfer.push_back(0.0);
}

// Completes posted exchange action i of stage s, its receive (if any) filling `slot`;
// false while a peer has not posted its half. Our send meets the peer's receive, our
// receive the peer's send; the slower half's transfer is the exchange's.
bool FastWalk::complete_exchange(StageWalk& w, int s, size_t i, const ScheduleIndex::Step& a, int slot) {
  const StageWalk::Posted& mine = w.posted[i];
  double send_done = 0.0, recv_done = 0.0, transfer = 0.0;
  bool blocked = false;
  // One half: done when both sides have posted, the transfer after the later.
  auto meet = [&](int peer, int partner, double posted_here, bool peer_sends, double& done) {
    const StageWalk::Posted& theirs = walks_[peer].posted[partner];
    const double c = half_us(s, peer);
    transfer = std::max(transfer, c);
    if (theirs.done)
      done = std::max(posted_here, peer_sends ? theirs.send : theirs.recv) + c;
    else
      blocked = true;
  };
  if (a.send) meet(a.send_peer, a.send_partner, mine.send, false, send_done);
  if (a.recv) meet(a.recv_peer, a.recv_partner, mine.recv, true, recv_done);
  if (blocked) return false;
  const double done = a.recv ? recv_done : send_done;
  w.p2p_free = std::max(mine.send, mine.recv);
  w.p2p_done = std::max(w.p2p_done, done);
  if (a.recv) w.received[slot] = done;
  if (w.detailed) {
    const int op = w.action_op[i];
    w.finish[op] = done;
    w.dur[op] = done - w.ex_ready[i];
    w.transfer[op] = transfer;
    if (a.recv) w.received_op[slot] = op;
    if (w.memo) w.booked.op_us[static_cast<int>(OpKind::pp_exchange)] += w.dur[op];
  }
  return true;
}

// Walks stage s from its next action towards `limit` (the slots of received messages
// moved by `shift`) until an exchange waits for a peer, counting the actions walked off
// `remaining`; whether it moved (an action walked or an exchange posted).
bool FastWalk::walk_stage(int s, size_t limit, int shift, size_t& remaining) {
  bool progress = false;
  StageWalk& w = walks_[s];
  const std::vector<ScheduleIndex::Step>& steps = ix_.steps[s];
  while (w.next < limit) {
    const size_t i = w.next;
    const ScheduleIndex::Step& a = steps[i];
    const int slot = a.slot < 0 ? -1 : a.slot + shift;
    if (a.kind != ActionKind::exchange) {
      walk_compute(w, s, i, slot);
    } else {
      if (!w.posted[i].done) {
        post_exchange(w, i, a);
        progress = true;
      }
      if (!complete_exchange(w, s, i, a, slot)) {
        prefetch_ahead(steps, w.posted, templates_, s, i);
        break;
      }
    }
    ++w.next;
    --remaining;
    progress = true;
  }
  return progress;
}

// Walks every stage from its next action to limit[s], the slots of received messages
// moved by `shift` (a repetition of a compact schedule's period). The actions before
// a round boundary complete among themselves (an exchange pairs within its round, an
// action's input arrived in an earlier one), so every stage reaches its limit.
void FastWalk::walk_to(const std::vector<size_t>& limit, int shift) {
  size_t remaining = 0;
  for (int s = 0; s < stages_; ++s) remaining += limit[s] - walks_[s].next;
  while (remaining > 0) {
    bool progress = false;
    for (int s = 0; s < stages_; ++s)
      if (walk_stage(s, limit[s], shift, remaining)) progress = true;
    if (!progress) {
      std::string stuck;
      for (int s = 0; s < stages_; ++s)
        if (walks_[s].next < limit[s])
          stuck += (stuck.empty() ? "" : ", ") + std::to_string(s) + " at action " + std::to_string(walks_[s].next);
      throw RuntimeError("sim: the pipeline exchanges cannot complete (stuck stages: " + stuck + ")");
    }
  }
}

// The listed actions in the order they run: those before each repeat, its period as
// often as it runs (each repetition's messages in slots shift x v further), and those
// after the last. With StageDetail::first a repeat's repetitions may be jumped over
// (SteadyState: once the walk's state repeats, shifted). Returns the repetitions jumped.
long FastWalk::walk_schedule() {
  const auto& per_stage = ix_.schedule.per_stage;
  const auto& repeats = ix_.schedule.repeats;
  long jumped = 0;
  std::vector<size_t> limit(stages_);
  for (size_t r = 0;; ++r) {
    for (int s = 0; s < stages_; ++s) limit[s] = r < repeats.size() ? repeats[r].begin[s] : per_stage[s].size();
    walk_to(limit, 0);
    if (r == repeats.size()) break;
    const models::ScheduleRepeat& rep = repeats[r];
    for (int s = 0; s < stages_; ++s) limit[s] = rep.end[s];
    std::optional<SteadyState> steady;
    if (detail_ == StageDetail::first && ix_.jumpable[r]) steady.emplace(ix_, r, templates_, priced_, walks_);
    for (int j = 0; j < rep.times; ++j) {
      for (int s = 0; s < stages_; ++s) {
        StageWalk& w = walks_[s];
        w.next = rep.begin[s];
        for (int i = rep.begin[s]; i < rep.end[s]; ++i) w.posted[i].done = false;
      }
      walk_to(limit, j * rep.microbatch_shift * chunks_);
      if (!steady) continue;
      const int skip = steady->after(j);
      j += skip;
      jumped += skip;
    }
    for (int s = 0; s < stages_; ++s) walks_[s].next = rep.end[s];
  }
  return jumped;
}

// Stage s's time once its actions are walked: its step-end tail walked or applied, and
// its breakdown where it is detailed.
StageTime FastWalk::finish_stage(int s) {
  StageWalk& w = walks_[s];
  StageTime st;
  if (w.memo) {
    BreakdownRange range;
    range.first = w.ops.size();
    range.compute_free = w.free[kCompute];
    walk_ops(w, templates_.tail(s), tails_[s].dur, -1, -1);
    const StageTime tail = stage_breakdown(s, w.ops, w.ready, w.finish, w.dur, w.transfer, range);
    st = w.booked;
    add_into(st, tail);
    st.stage = s;
    st.finish_us = tail.finish_us;
  } else if (w.detailed) {
    walk_ops(w, templates_.tail(s), tails_[s].dur, -1, -1);
    st = stage_breakdown(s, w.ops, w.ready, w.finish, w.dur, w.transfer);
  } else {
    apply(w, tails_[s], kNever);
    st.stage = s;
    st.finish_us = std::max({0.0, w.free[kCompute], w.free[kComm], w.free[kGradComm], w.p2p_done});
  }
  return st;
}

SimResult FastWalk::run() {
  const long jumped = walk_schedule();
  SimResult result;
  result.jumped_repetitions = jumped;
  for (int s = 0; s < stages_; ++s) {
    const StageTime st = finish_stage(s);
    result.step_us = std::max(result.step_us, st.finish_us);
    result.stages.push_back(st);
  }
  for (auto& st : result.stages) st.exposed_us[static_cast<int>(Exposure::bubble)] += result.step_us - st.finish_us;
  return result;
}

}  // namespace

SimResult simulate_fast(const StepTemplates& templates, OpPricer& pricer, StageDetail detail) {
  return FastWalk(templates, pricer, detail).run();
}

}  // namespace ibt::topo
