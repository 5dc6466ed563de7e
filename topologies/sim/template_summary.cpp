#include "topologies/sim/template_summary.hpp"

namespace ibt::topo::maxplus {

using models::Op;

void param_comm_in_a_template() {
  throw std::logic_error("sim_fast: ZeRO-3's param_comm stream is priced by the full walk");
}

PricedTemplate summarise(const std::vector<Op>& ops, std::vector<double> dur, int producer) {
  PricedTemplate t;
  t.dur = std::move(dur);
  // Every op's finish, in a buffer kept per thread: a search summarises 10^5 templates
  // of hundreds of ops, and a fresh vector each time cost more than the summary.
  thread_local std::vector<Times> finish;
  finish.resize(ops.size());
  std::array<Times, 3> stream_free{unit(kCompute), unit(kComm), unit(kGradComm)};
  // The op's finish is built in a local and stored once: reading back what was just
  // stored lane by lane stalls on store forwarding, and this loop runs 10^7-10^8 times
  // in a search.
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    const int stream = stream_input(op.stream);
    Times f = stream_free[stream];
    for (int w : op.waits) {
      if (w >= 0)
        raise(f, finish[w]);
      else if (w == models::kWaitReceived)
        raise(f, unit(kReceived));
      else if (w == models::kWaitLastCompute)
        raise(f, unit(kCompute));
      else if (w == models::kWaitLastGrad)
        raise(f, unit(kGradComm));
    }
    const double d = t.dur[i];
    for (int k = 0; k < kInputs; ++k) f[k] += d;
    finish[i] = f;
    stream_free[stream] = f;
  }
  Times floor;
  floor.fill(std::numeric_limits<double>::infinity());
  for (size_t i = 0; i < ops.size(); ++i) {
    const Times& f = finish[i];
    for (int k = 0; k < kInputs; ++k)
      if (k != kCompute && f[k] != kNever)
        floor[k] = std::min(floor[k], f[kCompute] == kNever ? kNever : f[kCompute] - f[k]);
  }
  t.irrelevant_below = floor;
  t.table[kCompute] = stream_free[0];
  t.table[kComm] = stream_free[1];
  t.table[kGradComm] = stream_free[2];
  // A send waits for its data whatever stream produced it (exchanges have a stream of
  // their own).
  t.producer = producer;
  if (t.producer >= 0)
    t.table[kReceived] = finish[t.producer];
  else
    t.table[kReceived].fill(kNever);
  return t;
}

Table compose(const Table& first, const Table& then) {
  Table out;
  for (int k = 0; k < kInputs; ++k)
    for (int j = 0; j < kInputs; ++j) {
      double v = kNever;
      for (int i = 0; i < kInputs; ++i) v = std::max(v, then[k][i] + first[i][j]);
      out[k][j] = v;
    }
  return out;
}

}  // namespace ibt::topo::maxplus
