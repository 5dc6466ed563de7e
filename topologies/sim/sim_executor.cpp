#include "topologies/sim/sim_executor.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "core/errors.hpp"
#include "topologies/sim/stage_prices.hpp"

namespace ibt::topo {

using models::ActionKind;
using models::Group;
using models::Op;
using models::OpKind;
using models::StepProgram;
using models::Stream;
using models::Transfer;

const char* to_string(Exposure e) {
  switch (e) {
    case Exposure::tp: return "tp";
    case Exposure::dp: return "dp";
    case Exposure::expert_dp: return "expert_dp";
    case Exposure::pp: return "pp";
    case Exposure::ep: return "ep";
    case Exposure::cp: return "cp";
    case Exposure::bubble: return "bubble";
    case Exposure::count: break;
  }
  return "?";
}

namespace {

// A pipeline message is unique within a step by (payload, microbatch, source virtual
// stage); both the sender's and the receiver's exchange carry it.
std::uint64_t message_key(const Transfer& t) {
  return (static_cast<std::uint64_t>(t.payload) << 48) | (static_cast<std::uint64_t>(t.microbatch) << 24) |
         static_cast<std::uint64_t>(t.src_virtual_stage);
}

Exposure exposure_of(Group g) {
  switch (g) {
    case Group::tp:
    case Group::tp_kv: return Exposure::tp;  // replicated KV heads' gradient sum, inside TP
    case Group::dp:
    case Group::dp_cp:  // CP replicas' share of the gradient reduction
    case Group::dp_shard:
    case Group::dp_replica: return Exposure::dp;
    case Group::expert_dp:
    case Group::expert_dp_cp:
    case Group::expert_dp_shard: return Exposure::expert_dp;
    case Group::cp: return Exposure::cp;
    case Group::pp: return Exposure::pp;
    case Group::ep: return Exposure::ep;
    case Group::none: break;
  }
  return Exposure::bubble;
}

struct RankState {
  const StepProgram* prog = nullptr;
  size_t next = 0;  // next op to process (program order)
  std::array<double, models::kNumStreams> stream_free{};
  // An exchange that receives finishes when its receive half completes: that is when
  // its data can be used; its send half completes when the peer's receive half does,
  // which the peer's consumer waits for, so the step time never misses it.
  std::vector<double> ready, finish, dur;
  std::vector<double> transfer;                             // exchange: the slower half's own transfer time
  std::vector<double> send_post, recv_post;                 // exchange: when each half was posted
  std::vector<char> posted;                                 // exchange: post times known to partners
  std::unordered_map<std::uint64_t, int> send_op, recv_op;  // message -> exchange op
};

double wait_done(const RankState& r, const Op& op) {
  double t = 0;
  for (int w : op.waits)
    if (w >= 0) t = std::max(t, r.finish[w]);
  return t;
}

}  // namespace

StageTime stage_breakdown(int stage, const std::vector<Op>& ops, const std::vector<double>& ready,
                          const std::vector<double>& finish, const std::vector<double>& dur,
                          const std::vector<double>& transfer, const BreakdownRange& range) {
  StageTime st;
  st.stage = stage;
  // Books the wait [from, to) before op i could start. The wait that ended last is to
  // blame, but only for the time it ran itself: a collective that first waited for a
  // pipeline receive (a sequence-parallel all-gather at the start of a backward, say)
  // passes the time before it started on to its own cause, so pipeline idle time is
  // booked as bubble and not as the collective's group. A pipeline receive's own
  // transfer is pp communication; the rest of its wait is the bubble.
  // (A loop along the chain of causes: the walk calls it for every compute op that
  // waited, millions in a full program.)
  auto blame_wait = [&](size_t i, double from, double to) {
    for (;;) {
      if (to <= from) return;
      const Op& op = ops[i];
      int cause = -1;
      for (int w : op.waits)
        if (w >= 0 && (cause < 0 || finish[w] > finish[cause])) cause = w;
      if (cause < 0) {
        st.exposed_us[static_cast<int>(Exposure::bubble)] += to - from;
        return;
      }
      if (finish[cause] < to) {  // the op's own stream was busy after its cause ended
        st.exposed_us[static_cast<int>(exposure_of(op.group))] += to - std::max(from, finish[cause]);
        to = std::max(from, finish[cause]);
        if (to <= from) return;
      }
      const Op& c = ops[cause];
      if (c.kind == OpKind::pp_exchange) {
        const double moved = std::min(to - from, transfer[cause]);
        st.exposed_us[static_cast<int>(Exposure::pp)] += moved;
        st.exposed_us[static_cast<int>(Exposure::bubble)] += to - from - moved;
        return;
      }
      const double started = std::max(from, ready[cause]);
      st.exposed_us[static_cast<int>(exposure_of(c.group))] += to - started;
      i = static_cast<size_t>(cause);  // its own wait, on to its cause
      to = started;
    }
  };
  double compute_free = range.compute_free;
  for (size_t i = range.first; i < ops.size(); ++i) {
    const Op& op = ops[i];
    st.op_us[static_cast<int>(op.kind)] += dur[i];
    st.finish_us = std::max(st.finish_us, finish[i]);
    if (op.stream != Stream::compute) continue;
    st.compute_us += dur[i];
    if (ready[i] > compute_free) blame_wait(i, compute_free, ready[i]);
    compute_free = finish[i];
  }
  if (!range.step_end) return st;
  for (size_t i = 0; i < range.first; ++i) st.finish_us = std::max(st.finish_us, finish[i]);
  // After the last compute op: the op that ends the stage's step.
  if (st.finish_us > compute_free) {
    int last = -1;
    for (size_t i = 0; i < ops.size(); ++i)
      if (finish[i] == st.finish_us) last = static_cast<int>(i);
    const Group g = last >= 0 ? ops[last].group : Group::none;
    st.exposed_us[static_cast<int>(exposure_of(g))] += st.finish_us - compute_free;
  }
  return st;
}

SimResult simulate(const std::vector<StepProgram>& programs, OpPricer& pricer) {
  const int P = static_cast<int>(programs.size());
  std::vector<RankState> ranks(P);
  for (int s = 0; s < P; ++s) {
    RankState& r = ranks[s];
    r.prog = &programs[s];
    StagePrices prices(pricer, r.prog->stage);  // a program's ops repeat a few dozen shapes
    const size_t n = r.prog->ops.size();
    r.ready.assign(n, 0.0);
    r.finish.assign(n, 0.0);
    r.dur.assign(n, 0.0);
    r.transfer.assign(n, 0.0);
    r.send_post.assign(n, 0.0);
    r.recv_post.assign(n, 0.0);
    r.posted.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      const Op& op = r.prog->ops[i];
      if (op.kind == OpKind::pp_exchange) {
        const auto& a = r.prog->actions.at(op.action);
        if (a.send) r.send_op[message_key(*a.send)] = static_cast<int>(i);
        if (a.recv) r.recv_op[message_key(*a.recv)] = static_cast<int>(i);
      } else {
        r.dur[i] = prices.price(op);
      }
    }
  }

  // When the partner posted its half of a message (the receive, for our send: table
  // recv_op; the send, for our receive: table send_op), or -1 while it has not.
  auto partner_post = [&](int peer, const std::unordered_map<std::uint64_t, int> RankState::*table,
                          std::uint64_t key) -> double {
    const RankState& pr = ranks.at(peer);
    auto it = (pr.*table).find(key);
    if (it == (pr.*table).end())
      throw RuntimeError("sim: stage " + std::to_string(peer) + " has no exchange matching a message sent to it");
    if (!pr.posted[it->second]) return -1.0;
    return table == &RankState::recv_op ? pr.recv_post[it->second] : pr.send_post[it->second];
  };

  size_t remaining = 0;
  for (const auto& r : ranks) remaining += r.prog->ops.size();
  while (remaining > 0) {
    bool progress = false;
    for (int s = 0; s < P; ++s) {
      RankState& r = ranks[s];
      while (r.next < r.prog->ops.size()) {
        const size_t i = r.next;
        const Op& op = r.prog->ops[i];
        const int stream = static_cast<int>(op.stream);
        if (op.kind != OpKind::pp_exchange) {
          r.ready[i] = std::max(r.stream_free[stream], wait_done(r, op));
          r.finish[i] = r.ready[i] + r.dur[i];
          r.stream_free[stream] = r.finish[i];
        } else {
          // Exchanges are posted in program order as non-blocking halves (isend and
          // irecv): the receive as soon as the stream reaches it, the send once its
          // data is produced. Each half completes when its peer has posted the other
          // half, plus the transfer; the consumer waits for the receive only.
          const auto& a = r.prog->actions.at(op.action);
          if (!r.posted[i]) {
            r.recv_post[i] = r.stream_free[stream];
            r.send_post[i] = std::max(r.stream_free[stream], wait_done(r, op));
            r.ready[i] = a.recv ? r.recv_post[i] : r.send_post[i];
            r.posted[i] = 1;
            progress = true;
          }
          double send_done = 0, recv_done = 0;
          bool blocked = false;
          if (a.send) {
            const double p = partner_post(a.send->peer_stage, &RankState::recv_op, message_key(*a.send));
            const double c = pricer.exchange_half_us(*r.prog, op, a.send->peer_stage);
            r.transfer[i] = std::max(r.transfer[i], c);
            if (p < 0)
              blocked = true;
            else
              send_done = std::max(r.send_post[i], p) + c;
          }
          if (a.recv) {
            const double p = partner_post(a.recv->peer_stage, &RankState::send_op, message_key(*a.recv));
            const double c = pricer.exchange_half_us(*r.prog, op, a.recv->peer_stage);
            r.transfer[i] = std::max(r.transfer[i], c);
            if (p < 0)
              blocked = true;
            else
              recv_done = std::max(r.recv_post[i], p) + c;
          }
          if (blocked) break;
          r.finish[i] = a.recv ? recv_done : send_done;
          r.dur[i] = r.finish[i] - r.ready[i];
          // The next exchange is posted after this one is, not after it completes.
          r.stream_free[stream] = std::max(r.send_post[i], r.recv_post[i]);
        }
        ++r.next;
        --remaining;
        progress = true;
      }
    }
    if (!progress) {
      std::string stuck;
      for (int s = 0; s < P; ++s)
        if (ranks[s].next < ranks[s].prog->ops.size())
          stuck += (stuck.empty() ? "" : ", ") + std::to_string(s) + " at op " + std::to_string(ranks[s].next);
      throw RuntimeError("sim: the pipeline exchanges cannot complete (stuck stages: " + stuck + ")");
    }
  }

  SimResult result;
  for (int s = 0; s < P; ++s) {
    const RankState& r = ranks[s];
    StageTime st = stage_breakdown(s, r.prog->ops, r.ready, r.finish, r.dur, r.transfer);
    result.step_us = std::max(result.step_us, st.finish_us);
    result.stages.push_back(st);
  }
  // A stage that finishes early waits for the others: that wait is bubble.
  for (auto& st : result.stages) st.exposed_us[static_cast<int>(Exposure::bubble)] += result.step_us - st.finish_us;
  return result;
}

}  // namespace ibt::topo
