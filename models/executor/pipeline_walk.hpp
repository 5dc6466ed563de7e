#pragma once
// The one step loop every executor runs: walk this pipeline stage's actions of the
// schedule (schedule.hpp) in order, keeping the messages between virtual stages, and
// hand each forward, backward and exchange to a Backend that does the math and the
// transfers on its own hardware. The cpu executor (fp32, MPI) and the cuda executor
// (bf16, NCCL) both call walk_pipeline(), so the schedule's semantics exist once.
//
// A Backend provides:
//   using Activation = ...;   // what travels between stages (default-constructible, movable)
//   double clock();           // seconds; a device backend first waits for its queued work,
//                             // so every action's time is its own
//   void forward(int microbatch, int chunk, const Activation* input, Activation* output);
//       // input: nullptr on virtual stage 0; output: nullptr on the last virtual stage
//   void backward(int microbatch, int chunk, const Activation* d_output, Activation* d_input);
//       // d_output: nullptr on the last virtual stage; d_input: nullptr on virtual stage 0;
//       // with a split backward (schedule.split_backward(), zb-h1, dualpipev) the B only: input
//       // gradients, the weight gradients left for weight()
//   void weight(int microbatch, int chunk);
//       // W of a split backward: the weight gradients backward() left (never called
//       // for other schedules; a backend that cannot split refuses such schedules)
//   void exchange(const Activation* send, int send_peer, Activation* recv, int recv_peer);
//       // one combined send-receive with the pipeline peers (either side may be absent:
//       // nullptr); sizes the receive buffer itself
//   void gradients_final(int chunk);
//       // the chunk's last backward (last W) of the step has been issued: its gradients are
//       // complete, so their data-parallel reduction may start (overlapping the rest)
// and adds the TP, EP and CP communication it does inside forward/backward to time.tp,
// time.ep and time.cp: the walk charges compute actions with their time minus that
// communication.
#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "models/executor/time_breakdown.hpp"
#include "models/plan/schedule.hpp"

namespace ibt::models {

template <class Backend>
void walk_pipeline(const PipelineSchedule& schedule, int stage, Backend& backend, TimeBreakdown& time) {
  using Message = typename Backend::Activation;  // what travels between stages
  // Messages keyed by (payload, microbatch, chunk on this stage) when received and by
  // (payload, microbatch, source virtual stage) while waiting to be sent.
  using Key = std::tuple<Payload, int, int>;
  std::map<Key, Message> inbox, outbox;
  const int last_vs = schedule.virtual_stages() - 1;
  // Per chunk, the actions left that add to its weight gradients: backwards, or Ws.
  const ActionKind completes = schedule.split_backward() ? ActionKind::weight : ActionKind::backward;
  std::vector<int> backwards_left(static_cast<size_t>(schedule.chunks), schedule.microbatches);
  // Output of virtual stage `from` for `to`: into the outbox for an exchange, or, when
  // `to` runs on this stage too (the V's tip, dualpipev), straight into the inbox.
  auto deliver = [&](Payload payload, int microbatch, int from, int to, Message&& data) {
    const StageChunk dst = schedule.placement(to);
    if (dst.stage == stage)
      inbox[{payload, microbatch, dst.chunk}] = std::move(data);
    else
      outbox[{payload, microbatch, from}] = std::move(data);
  };

  for (const PipeAction& a : schedule.per_stage.at(static_cast<size_t>(stage))) {
    if (a.kind == ActionKind::exchange) {
      const double t0 = backend.clock();
      const Message* send = nullptr;
      Message* recv = nullptr;
      if (a.send) {
        auto it = outbox.find({a.send->payload, a.send->microbatch, a.send->src_virtual_stage});
        if (it == outbox.end()) throw std::logic_error("pipeline: nothing to send for a scheduled transfer");
        send = &it->second;
      }
      if (a.recv) recv = &inbox[{a.recv->payload, a.recv->microbatch, a.recv->dst_chunk}];
      backend.exchange(send, a.send ? a.send->peer_stage : -1, recv, a.recv ? a.recv->peer_stage : -1);
      if (a.send) outbox.erase({a.send->payload, a.send->microbatch, a.send->src_virtual_stage});
      time.pp += backend.clock() - t0;
      continue;
    }
    const double t0 = backend.clock();
    const double comm0 = time.tp + time.ep + time.cp;
    const int vs = schedule.virtual_stage(stage, a.chunk);
    if (a.kind == ActionKind::weight) {
      backend.weight(a.microbatch, a.chunk);
    } else if (a.kind == ActionKind::forward) {
      const Message* input = nullptr;
      if (vs > 0) {
        auto it = inbox.find({Payload::activation, a.microbatch, a.chunk});
        if (it == inbox.end()) throw std::logic_error("pipeline: forward before its activation arrived");
        input = &it->second;
      }
      Message output;
      backend.forward(a.microbatch, a.chunk, input, vs < last_vs ? &output : nullptr);
      if (input) inbox.erase({Payload::activation, a.microbatch, a.chunk});
      if (vs < last_vs) deliver(Payload::activation, a.microbatch, vs, vs + 1, std::move(output));
    } else {
      const Message* d_output = nullptr;
      if (vs < last_vs) {
        auto it = inbox.find({Payload::gradient, a.microbatch, a.chunk});
        if (it == inbox.end()) throw std::logic_error("pipeline: backward before its gradient arrived");
        d_output = &it->second;
      }
      Message d_input;
      backend.backward(a.microbatch, a.chunk, d_output, vs > 0 ? &d_input : nullptr);
      if (d_output) inbox.erase({Payload::gradient, a.microbatch, a.chunk});
      if (vs > 0) deliver(Payload::gradient, a.microbatch, vs, vs - 1, std::move(d_input));
    }
    if (a.kind == completes && --backwards_left.at(static_cast<size_t>(a.chunk)) == 0) backend.gradients_final(a.chunk);
    time.compute += (backend.clock() - t0) - (time.tp + time.ep + time.cp - comm0);
  }
}

}  // namespace ibt::models
