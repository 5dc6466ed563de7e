#pragma once
// An action template's max-plus summary (sim_fast.hpp, How): inside one action each op
// finishes at max(its stream free, what it waits for) + its duration, so each output of
// the action (the compute, comm and grad_comm streams free, and the data a send
// carries) is a max-plus linear function of the four times it starts from. The fast
// walk (stage_walk.hpp apply) applies those functions action by action; the search bounds
// compose them part by part (chunk_parts.hpp).
#include <algorithm>
#include <array>
#include <limits>
#include <stdexcept>
#include <vector>

#include "models/plan/step_program.hpp"

namespace ibt::topo::maxplus {

constexpr double kNever = -std::numeric_limits<double>::infinity();

// Times an action (or the tail) starts from and ends with.
enum Input { kCompute, kComm, kGradComm, kReceived, kInputs };  // kReceived doubles as the output "data ready"
using Times = std::array<double, kInputs>;

inline Times unit(int input) {
  Times t;
  t.fill(kNever);
  t[input] = 0;
  return t;
}

inline void raise(Times& a, const Times& b) {
  for (int k = 0; k < kInputs; ++k) a[k] = std::max(a[k], b[k]);
}

// For each output of an action (streams free, data ready for a send), its max-plus
// function of the inputs: out[k] = max_j(in[j] + table[k][j]).
using Table = std::array<Times, kInputs>;

// An action template's durations and its table.
struct PricedTemplate {
  std::vector<double> dur;
  Table table{};
  int producer = -1;  // the op a send waits for (not on the comm stream), or -1
  // Per input: at or below this offset from the compute stream's time, the input
  // moves no op of the action (every op is as late through the compute stream); +inf
  // when no op depends on it, -inf when some op depends on it and not on compute.
  Times irrelevant_below{};
};

[[noreturn, gnu::cold]] void param_comm_in_a_template();

inline int stream_input(models::Stream s) {
  switch (s) {
    case models::Stream::compute: return kCompute;
    case models::Stream::comm: return kComm;
    case models::Stream::grad_comm: return kGradComm;
    case models::Stream::param_comm: param_comm_in_a_template();  // ZeRO-3 programs take the full walk (projection.cpp)
    case models::Stream::p2p: break;                              // exchanges are walked apart, never in a template
  }
  return kCompute;
}

// The summary of `ops` priced `dur`; `producer` is the op a send waits for (-1: none).
PricedTemplate summarise(const std::vector<models::Op>& ops, std::vector<double> dur, int producer);

// `then` run after `first`, as one function: out[k] = max_i(then[k][i] + first[i][j] +
// in[j]). Equal to the summary of both op lists as one up to the association of the
// sums (t + (a + b) for (t + a) + b): a few ulps, as sim_fast.hpp's Exactness allows.
Table compose(const Table& first, const Table& then);

}  // namespace ibt::topo::maxplus
