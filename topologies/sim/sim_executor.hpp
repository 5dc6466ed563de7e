#pragma once
// The sim executor: runs the step programs of one rank per pipeline stage
// (models/plan/step_program.hpp) on virtual clocks. DP, TP and EP peers of a rank are
// symmetric, so one rank per stage stands for all of them.
//
// Rules (the same the program declares for every executor):
// - each rank has four streams (compute, comm, grad_comm, p2p); ops of one stream run one
//   after the other in program order;
// - an op also waits for the ops in its waits[] (a collective for its producer, a
//   consumer for its collective);
// - a pp_exchange is a pair of non-blocking halves (Megatron's batched isend/irecv,
//   overlapped with compute): exchanges are posted in program order on the p2p stream,
//   the receive when the stream reaches it, the send when its data is produced; each
//   half completes when the peer has posted the matching half, plus the transfer
//   time. An exchange that receives finishes with its receive half (what its
//   consumer waits for; a send waiting for a busy downstream stage holds up nothing
//   but itself), one that only sends with its send half; the next exchange is posted
//   once this one is posted. Both halves of a message complete at the same time
//   (max of the two posts + transfer), so a send's completion is the peer's receive,
//   which the peer's consumer waits for: the step time never misses it. (sim_fast
//   walks exchanges by the same rules.)
// - dualpipev's paired F&B (schedule.hpp): the step program issues the two chunks' ops
//   interleaved, switching chunk after every communication op (step_program.hpp), so
//   on these in-order streams a chunk's EP all-to-all (and TP collective) runs while
//   the other chunk computes, and the pair costs its compute plus only the
//   communication that compute cannot cover, about max(compute_F + compute_B,
//   comm_F + comm_B) when one dominates throughout (the DeepSeek-V3 report's Figure 4
//   overlap). Approximations: the alternation is at communication-op granularity, not
//   DeepSeek's hand-ordered attention/dispatch/MLP/combine; the two chunks' all-to-alls
//   share one comm stream (serialised, as on one NIC); the SMs DeepSeek gives the
//   communication kernels (report section 3.2.2: 20 SMs, of the H800's 132, read through
//   public quotations of the report) are not taken from compute.
//   Pipeline sends of a pair go after both halves (the DualPipe repository sends them
//   after the overlapped compute too), on the p2p stream as always.
// The costs come from an OpPricer (sim_pricer.hpp prices ops from a topology); the
// executor itself knows nothing of hardware, so tests drive it with hand-made costs.
#include <array>
#include <vector>

#include "models/plan/step_program.hpp"

namespace ibt::topo {

class OpPricer {
 public:
  virtual ~OpPricer() = default;
  // Duration of `op` of `program` in microseconds. pp_exchange: the cost of each half,
  // given the peer stage of that half. The fast walk (sim_fast.hpp) prices each
  // distinct op once: op_us must depend only on the op's kind, phase, group, stream,
  // flops and bytes (and the program's stage), not on its microbatch or position;
  // exchange_half_us only on the program's stage, the peer and the bytes.
  virtual double op_us(const models::StepProgram& program, const models::Op& op) = 0;
  virtual double exchange_half_us(const models::StepProgram& program, const models::Op& op, int peer_stage) = 0;
};

// Where a stage's time went. compute + sum(exposed) + bubble == step time.
enum class Exposure { tp, dp, expert_dp, pp, ep, cp, bubble, count };
const char* to_string(Exposure e);
inline constexpr int kNumExposures = static_cast<int>(Exposure::count);
inline constexpr int kNumOpKinds = static_cast<int>(models::OpKind::cp_dkv_pass) + 1;

struct StageTime {
  int stage = 0;
  double finish_us = 0;                            // when its last op ends
  double compute_us = 0;                           // busy time of the compute stream
  std::array<double, kNumExposures> exposed_us{};  // compute stream idle, by cause
  std::array<double, kNumOpKinds> op_us{};         // summed durations by op kind
};

struct SimResult {
  double step_us = 0;  // the last stage's finish
  std::vector<StageTime> stages;
  // The fast walk (sim_fast.hpp): repetitions of a steady state it jumped over instead
  // of walking them; the period walk (sim_period.hpp): microbatches beyond its longer
  // short program; 0 for simulate().
  long jumped_repetitions = 0;
};

// The breakdown of one stage's walked ops (compute, exposed waits by cause, op time
// by kind, finish); ready/finish/dur/transfer are per op (transfer: a pp_exchange's
// slower half). Shared by simulate() and the fast walk (sim_fast.hpp) so both book
// waits by the same rules. The bubble of waiting for later stages is not included.
// A part of the walk: only ops [first, end) are booked (waits may reach ops before
// first), the compute stream free at compute_free before them; step_end = they end
// the step (the time after the last compute op is booked, finish_us is over all ops).
struct BreakdownRange {
  size_t first = 0;
  double compute_free = 0;
  bool step_end = true;
};
StageTime stage_breakdown(int stage, const std::vector<models::Op>& ops, const std::vector<double>& ready,
                          const std::vector<double>& finish, const std::vector<double>& dur,
                          const std::vector<double>& transfer, const BreakdownRange& range = {});

// programs[s] is the program of a rank of stage s (all built from one schedule).
// Throws RuntimeError naming the stuck stages if the exchanges cannot all complete.
SimResult simulate(const std::vector<models::StepProgram>& programs, OpPricer& pricer);

}  // namespace ibt::topo
