#pragma once
// Pipeline schedules as data: for each pipeline stage (pipeline rank), the ordered
// list of actions of one training step. Executors (cpu, cuda, sim) walk the list.
//
// Vocabulary:
// - p stages, v chunks per stage (vpp), m microbatches. Virtual stage
//   vs = virtual_stage(stage, chunk) runs layers stage_layers(vs); data flows
//   vs -> vs+1 forward and vs+1 -> vs backward. Round-robin placement (all but
//   dualpipev): vs = chunk * p + stage, and with v > 1 the last stage sends its chunk c
//   output to stage 0 chunk c+1, so the pipeline is a ring. V-shaped placement
//   (dualpipev, parallel_split.hpp virtual_stage_of()): stage s holds vs s and 2p-1-s,
//   and the last stage's chunk 0 feeds its own chunk 1 with no message.
// - forward(mb, chunk) / backward(mb, chunk): compute of one chunk for one microbatch.
// - exchange: ONE blocking combined send-receive (MPI_Sendrecv-like: both halves may
//   be in flight at once; it returns when both completed). It carries an optional
//   send and an optional receive, to/from the next or previous stage.
//
// How the order is made deadlock-free (and why it is): the schedule is built by a
// lock-step simulation with unit-time compute. In round r each stage runs at most one
// compute action (its next one in the schedule's compute order, if its input arrived
// in an earlier round). Each round ends with two communication phases:
//   phase A: activations move downstream (stage s sends to s+1, receives from s-1),
//   phase B: gradients move upstream (stage s sends to s-1, receives from s+1),
// and a stage's list holds, per round: [compute] [exchange A] [exchange B], each only
// when it has something to do. (V-shaped placement: chunk 1's messages run the other
// way, so each of A and B is two phases, chunk 0's then chunk 1's, each with one
// direction; a paired F&B is one round's compute, its two messages in two phases.) Every send of round r phase X is
// matched by a receive of the same round and phase, so by induction on (round, phase) the earliest incomplete exchange
// always finds all its partners waiting in it: no deadlock even with rendezvous (unbuffered) sends. simulate_pipeline()
// checks this mechanically. Execute an exchange as MPI_Sendrecv (or Isend + Irecv + Waitall), never as a blocking Send
// followed by a Recv. Collectives inside compute actions (TP, EP, DP gradient reduction) involve only ranks of one
// stage, which run identical lists, so they do not break the argument.
//
// Compute orders (per stage s, 0-based):
// - afab: F(0..m-1) then B(0..m-1).
// - 1f1b: min(p-s-1, m) warm-up forwards, then alternate F,B, then the remaining B:
//   at most p-s microbatches in flight on stage s.
// - interleaved (Megatron, Narayanan et al. 2021): forwards visit (mb, chunk) in groups
//   of p microbatches per chunk; warm-up (p-s-1)*2 + (v-1)*p forwards (all m*v when
//   m == p), then 1F1B, backwards visit chunks in reverse order.
// - zb-h1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024,
//   arXiv:2401.10241, section 2.1 and Figure 3 top): every backward is split into B
//   (the gradient w.r.t. the chunk's input, what the previous stage waits for) and W
//   (the gradients w.r.t. its weights, which nothing downstream waits for). Forwards
//   and B passes in 1F1B's order; stage s runs the W of microbatch i only after the B
//   of microbatch i + s, so the W passes it defers fill the bubbles of the drain. A
//   chunk's activations are held from F until its W: p - s - 1 warm-up forwards plus
//   the s deferred W's make every stage hold p microbatches at most, 1F1B's stage-0
//   peak (the paper's "same peak memory as 1F1B"). With F = B = W and free
//   communication the step is 3m + (p-1) units (1F1B: 3m + 3(p-1)): the bubble is a
//   third of 1F1B's ((p-1)(F + B - W) in the paper's cost model).
// - dualpipev (DeepSeek-V3 Technical Report, arXiv:2412.19437, section 3.2.1 and
//   Figures 4-5: DualPipe; its V-shaped "cut-in-half" form DualPipeV from the public
//   github.com/deepseek-ai/DualPipe README, credited there to Sea AI Lab): 2 chunks per
//   stage in a V (above), m >= 2p. The order is the repository's dualpipev.py, eight
//   steps on rank r: 2(p-r-1) F0; r+1 (F0 F1); p-r-1 (B1 W F1); m-2p+r+1 steady-state
//   rounds of two pairs (F0&B1)(F1&B0); p-r-1 (B1 (F1&B0)); r+1 (B1 B0); p-r-1 (W B0);
//   the W's left. A pair "F&B" is a forward of one chunk and a backward of the other
//   that run overlapped, each one's all-to-all and pipeline transfers hidden behind the
//   other's compute (the report's Figure 4); the pair's actions carry `overlapped`.
//   Backwards are split as in zb-h1: most run their W right after their B (a full
//   backward), those of steps 3, 7 and the second half of step 6 defer it to a later
//   W step (first in, first out) to fill the ramp-down. A pair takes two unit rounds in
//   the construction below, and a message waits while either side is in the first
//   round of a pair. Bubble with free communication (simulate_pipeline, tested): with
//   unit F, B and W the last rank waits (p-1)F for its first input and no rank idles
//   after, so the step is 6m + (p-1) units whatever m. The README's table (PP = 2p
//   virtual stages) gives (PP/2 - 1)(F&B + B - 3W), B the full backward and F&B = F + B
//   without overlap; this order reaches it exactly at (F, B, W) = (1, 1, 1/2), (1, 2, 1)
//   and (2, 1, 1) (B the input half), and at F = B = W it does better (p-1 < 2(p-1)).
//   Activations: at most 2p + 1 chunks in flight (the README's
//   PP + 1), on the last stage.
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "models/plan/model_config.hpp"
#include "models/plan/parallel_split.hpp"

namespace ibt::models {

// weight: a split backward's W (zb-h1); backward is then its B only.
enum class Pass : std::uint8_t { forward, backward, weight };

// What a pipeline message holds: the output activation of a forward (sent to the next
// virtual stage) or the input gradient of a backward (sent to the previous one).
enum class Payload : std::uint8_t { activation, gradient };

// One half of an exchange. The message is identified by (payload, microbatch,
// src_virtual_stage): unique within a step, use it as the MPI tag's source.
struct Transfer {
  Payload payload = Payload::activation;
  int peer_stage = 0;  // pipeline rank of the other side
  int microbatch = 0;
  int src_virtual_stage = 0;  // virtual stage that produced the data
  int dst_virtual_stage = 0;  // virtual stage that consumes it
  int dst_chunk = 0;          // chunk index on the receiving stage
};

// weight: W of a split backward (schedules where splits_backward(kind)); it needs no
// message (it follows the B of the same microbatch and chunk on the same stage).
enum class ActionKind : std::uint8_t { forward, backward, exchange, weight };

std::string_view to_string(Pass p);        // "forward", "backward", "weight"
std::string_view to_string(Payload p);     // "activation", "gradient"
std::string_view to_string(ActionKind k);  // "forward", "backward", "exchange", "weight"

struct PipelineSchedule;
// A tag unique to the message within one step, < 2 * m * p * v (fits MPI's
// guaranteed tag range, 32767, for p * v * m <= 16383).
int message_tag(const Transfer& t, const PipelineSchedule& s);

struct PipeAction {
  ActionKind kind = ActionKind::forward;
  int microbatch = -1;  // forward/backward/weight
  int chunk = -1;       // forward/backward/weight: model chunk on this stage (0..v-1)
  int round = 0;        // lock-step round it was placed in (for tracing/tests)
  // forward/backward: one half of a paired F&B (dualpipev): this forward and the
  // backward right after it (of another chunk) run overlapped, each one's communication
  // hidden behind the other's compute where the executor can (the sim prices it so).
  bool overlapped = false;
  std::optional<Transfer> send;  // exchange only; at least one of send/recv is set
  std::optional<Transfer> recv;
};

// A compact schedule's steady state (build_compact_schedule): rounds [first_round,
// first_round + rounds) run `times` times in a row, repetition j with every microbatch
// (of its actions and transfers) + j x microbatch_shift and every round + j x rounds.
// per_stage lists the first repetition once, at [begin[stage], end[stage]); the actions
// after it carry their true microbatches and rounds.
struct ScheduleRepeat {
  int first_round = 0;
  int rounds = 0;
  int times = 0;
  int microbatch_shift = 0;
  std::vector<int> begin, end;  // [stage]
};

struct PipelineSchedule {
  ScheduleKind kind = ScheduleKind::one_f_one_b;
  int stages = 1;                                  // p
  int chunks = 1;                                  // v
  int microbatches = 1;                            // m
  int rounds = 0;                                  // lock-step rounds the schedule spans
  std::vector<std::vector<PipeAction>> per_stage;  // [stage][action]
  // [stage]: the forwards (chunk + 1) and the actions that release a chunk's
  // activations (-(chunk + 1)) in order: the backwards, or with a split backward the
  // W passes (the B's, which release nothing W still reads, and exchanges left out):
  // what memory accounting walks (in-flight activations), two bytes an action instead
  // of a PipeAction, for searches that check thousands of splits.
  std::vector<std::vector<std::int16_t>> compute_order;
  // [stage][point][chunk]: how many microbatches' activations of each chunk the stage
  // holds at the points where its holding can peak (after a forward that another
  // forward does not follow), only the points not covered chunk by chunk by another.
  // Every in-flight maximum (max_chunks_in_flight, max_layers_in_flight, the peak
  // activation bytes of models/plan/accounting.hpp) is a maximum over these few points
  // instead of a walk of the whole order: a search checks the memory of thousands of
  // splits over the same schedules. Filled by build_compute_orders() only (empty: walk).
  std::vector<std::vector<std::vector<int>>> held_peaks;
  // Empty but in a compact schedule (build_compact_schedule), in the order they run.
  std::vector<ScheduleRepeat> repeats;

  int virtual_stages() const { return stages * chunks; }
  bool split_backward() const { return splits_backward(kind); }
  int virtual_stage(int stage, int chunk) const { return virtual_stage_of(kind, stages, stage, chunk); }
  StageChunk placement(int virtual_stage) const { return placement_of(kind, stages, virtual_stage); }
};

// Builds the schedule for split.schedule with p = split.pp, v = split.vpp,
// m = split.microbatches. Throws UsageError on impossible parameters (the same rules
// as validate(): m >= p for 1f1b, m % p == 0 and v >= 2 for interleaved ...).
// A schedule depends on (kind, p, v, m) only, not on dp/tp/ep or the model: a search
// over many splits should build each distinct one once and reuse it (a 16-stage,
// 128-microbatch 1F1B schedule takes about 2 ms here).
PipelineSchedule build_schedule(ScheduleKind kind, int stages, int chunks, int microbatches);
// The bytes build_schedule reserves for its actions (7 m v per stage, p stages). It
// refuses (UsageError naming the microbatches and the bytes needed against those
// available, core/memory_plan.hpp) a schedule that cannot fit; require_schedule_memory
// does the same for a split before anything else is built.
double schedule_bytes(int stages, int chunks, int microbatches);
void require_schedule_memory(const ParallelSplit& split);
PipelineSchedule build_schedule(const ParallelSplit& split);
// The same schedule with its steady state listed once (PipelineSchedule::repeats), for
// the sim's fast walk (topologies/sim/sim_fast.hpp), which walks a repetition as often as
// it runs: a deep pipeline's steady state is most of its 10^6-10^7 actions. How it is
// found, exactly: the lock-step construction above is a deterministic system whose
// state at a round's start is each stage's position in its compute order and the
// messages it holds (arrived, not yet consumed). When that state at round r equals the
// state at r - c with every microbatch + shift (positions advanced by d[stage] tasks,
// the held messages those of the same tasks shifted), and each stage's compute order
// goes on repeating with period d[stage] and the same shift far enough, rounds
// [r - c, r) repeat: the next rounds see the same state and consume the same tasks,
// shifted. c is the period of stage 0's order at its middle; when no round matches
// (or for dualpipev, whose paired actions span rounds) the schedule is build_schedule's.
// expand_schedule(build_compact_schedule(s)) == build_schedule(s), action for action
// (tests/models/schedule_compact_test.cpp). A compact schedule has no compute_order:
// memory accounting reads build_compute_orders().
PipelineSchedule build_compact_schedule(const ParallelSplit& split);
PipelineSchedule expand_schedule(const PipelineSchedule& compact);
// How many times listed action `action` of `stage` runs: a repeat's times for an action
// of its period, else 1.
int runs(const PipelineSchedule& s, int stage, int action);
// One compute action of a stage's order (a forward, backward or W) without its place
// among the exchanges: the order build_schedule places, stage by stage.
struct ComputeTask {
  Pass pass;
  int microbatch;
  int chunk;
  bool overlapped = false;  // half of a paired F&B (dualpipev): placed in one round with its partner
};
// The action kind of a pass, and the action that runs a task (round 0: build_schedule
// places it).
ActionKind action_kind(Pass p);
PipeAction compute_action(const ComputeTask& t);
// The same schedule's compute_order alone (per_stage empty) and its held_peaks: what
// memory accounting reads, for searches that check the memory of splits they may
// never simulate; a fraction of build_schedule's time and memory. Same checks and errors.
// each_stage, if given, is handed every stage's compute tasks in order as they are made
// (what a search's step bounds index, topologies/sim/sim_fast.hpp: read once, not kept).
PipelineSchedule build_compute_orders(
    const ParallelSplit& split,
    const std::function<void(int stage, const std::vector<ComputeTask>& tasks)>& each_stage = {});

// Layers [first, first+count) held by a virtual stage: layers / (p*v) each, the
// remainder r spread one each over the r virtual stages starting at (p*v - r) / 2
// (middle stages; parallel_split.hpp says why). Throws UsageError when p*v > layers.
struct LayerRange {
  int first = 0;
  int count = 0;
  int end() const { return first + count; }
};
LayerRange stage_layers(const ModelConfig& model, int virtual_stages, int virtual_stage);

// The largest number of (microbatch, chunk) forwards held (forward done, backward not
// yet started) at any point of a stage's action list: what activation memory scales
// with (in chunks).
int max_chunks_in_flight(const PipelineSchedule& s, int stage);
// s.compute_order[stage], or the same derived from per_stage when the schedule was not
// made by build_schedule() or build_compute_orders().
std::vector<std::int16_t> compute_order(const PipelineSchedule& s, int stage);
// The same without a copy where the schedule holds it (else derived into `scratch`):
// searches walk it for every split they check.
const std::vector<std::int16_t>& compute_order(const PipelineSchedule& s, int stage,
                                               std::vector<std::int16_t>& scratch);
// The same weighted by the layers each chunk holds: the most transformer layers'
// activations the stage keeps at once.
int max_layers_in_flight(const PipelineSchedule& s, const ModelConfig& model, int stage);
// The most a stage holds at once when each in-flight (microbatch, chunk) weighs
// weight[chunk]: max_chunks_in_flight, max_layers_in_flight and the peak activation bytes
// (models/plan/accounting.hpp) are this with their own weights. Read from s.held_peaks where the schedule has them and
// `peaks_exact` says the sums over them equal the walk's (doubles: see accounting.cpp),
// else by walking the stage's compute order.
template <class T>
T peak_held(const PipelineSchedule& s, int stage, const std::vector<T>& weight, bool peaks_exact = true);

// Dependency-respecting execution of a schedule with given costs: compute of one
// chunk-forward costs forward_cost, of a chunk-backward backward_cost (with a split
// backward: its B), of a W weight_cost; an exchange
// completes (rendezvous semantics) when every partner has reached its matching
// exchange, plus comm_cost. Throws RuntimeError naming the stuck stages if the
// schedule deadlocks. This is both the schedule's self-check and the simplest "sim".
struct PipelineTiming {
  double makespan = 0;         // time the last stage finishes
  double ideal = 0;            // the busiest stage's compute time
  double bubble_fraction = 0;  // (makespan - ideal) / ideal
  std::vector<double> busy;    // compute time per stage
  std::vector<double> finish;  // time each stage finishes
};
PipelineTiming simulate_pipeline(const PipelineSchedule& s, double forward_cost = 1.0, double backward_cost = 1.0,
                                 double comm_cost = 0.0, double weight_cost = 0.0);

// The same with a cost per (stage, chunk) and pass, e.g. from pricing
// build_chunk_ops() (step_program.hpp), and one cost per exchange.
struct PipelineCosts {
  std::vector<double> forward;   // [stage * chunks + chunk]
  std::vector<double> backward;  // [stage * chunks + chunk]
  double exchange = 0.0;
  std::vector<double> weight = {};  // [stage * chunks + chunk]; split backwards only
};
PipelineTiming simulate_pipeline(const PipelineSchedule& s, const PipelineCosts& costs);

}  // namespace ibt::models
