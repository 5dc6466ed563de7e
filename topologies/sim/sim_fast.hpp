#pragma once
// The sim executor's fast walk, for searches (`ibt project --all`, `ibt crossover`):
// simulate()'s rules and step time (sim_executor.hpp) without building the full step
// programs, whose size grows with microbatches x layers per stage.
//
// How:
// - every forward (backward) of a chunk on a stage expands to the same ops whatever
//   its microbatch (models::build_action_template), so the walk keeps one template
//   per (stage, chunk, pass) and prices each distinct op of it once;
// - inside one action each op finishes at max(its stream free, what it waits for) +
//   its duration: a max-plus linear function of the four times the action starts from
//   (compute, comm and grad_comm streams free, and the arrival of its received input).
//   A template is summarised once as those functions (a 4x4 table), and a stage is
//   walked action by action: O(actions), not O(ops). Pipeline exchanges are walked as
//   simulate() walks them (rendezvous, the slower half's transfer);
// - stages whose breakdown is wanted (StageDetail) are walked op by op from the same
//   templates, with simulate()'s arithmetic, and broken down by stage_breakdown().
//   `ibt project --all` and `ibt crossover` need the first stage's breakdown only;
// - the schedule is compact (models::build_compact_schedule): its steady state, most of
//   a deep pipeline's 10^6-10^7 actions, is listed once and walked as often as it
//   repeats; with StageDetail::first the walk jumps over repetitions once its state
//   after a repetition is the state some repetitions before with every time moved by
//   the same amount (steady_state.hpp SteadyState: max-plus, so the jump's error is bounded,
//   and kept below 1e-10 of the time reached). Stages that drift apart for longer than
//   the schedule runs are walked through.
//
// Exactness. Walked op by op the arithmetic is simulate()'s, operation for operation:
// with StageDetail::all the result equals simulate() on the full programs bit for bit.
// A summary adds the same durations in another association (t + (a + b) instead of
// (t + a) + b), so with StageDetail::first the other stages' times, and through the
// exchanges the first stage's, may differ from simulate() by floating-point rounding
// only (a few ulps per op on the critical path), and a jump by at most 1e-10 of the time
// reached: below 1e-9 of the step time for any catalog configuration
// (tests/topologies/sim/sim_fast_test.cpp holds both modes to it, jumps included).
#include <array>
#include <memory>
#include <vector>

#include "models/plan/model_config.hpp"
#include "models/plan/parallel_split.hpp"
#include "models/plan/schedule.hpp"
#include "models/plan/step_program.hpp"
#include "topologies/sim/sim_executor.hpp"

namespace ibt::topo {

// A schedule with what the walk derives from it: for each exchange the matching
// exchange of each half on the peer stage, and each chunk's last backward. Depends on
// (kind, p, v, m) only, so a search shares one per distinct schedule.
struct ScheduleIndex {
  // The full index (schedule_index) holds the whole schedule, its steady state listed
  // once (schedule.repeats; action indices are into the listed actions). The bound index
  // (schedule_bound_index) holds its header, compute orders and held peaks, and no
  // per_stage list: a deep pipeline's is 10^5-10^6 actions, a search has hundreds of
  // schedules, and the bounds read a few actions of each stage by index (kept).
  models::PipelineSchedule schedule;
  // [stage]: the bound index's kept actions (its first compute action and each chunk's
  // last backward and last_grads action), by index.
  std::vector<std::vector<std::pair<int, models::PipeAction>>> kept;
  int stages() const { return schedule.stages; }
  // Action i of stage s: per_stage's, or a kept one (std::logic_error for another).
  const models::PipeAction& action(int s, int i) const;
  // [stage][action]: for an exchange, the peer's action matching its send half and
  // its receive half (-1 where the half is absent).
  std::vector<std::vector<std::array<int, 2>>> partner;
  std::vector<std::vector<int>> last_backward;  // [stage][chunk]: action index
  // [stage][chunk]: the action that completes the chunk's gradients (its last backward,
  // or its last W with a split backward): where overlapped reductions go.
  std::vector<std::vector<int>> last_grads;
  std::vector<std::vector<int>> chunk_order;  // [stage]: chunks by last_grads
  // For step_lower_bound(): per stage, its first forward/backward action, and how many
  // forwards/backwards ([chunk * 2 + 1 for a backward]) lie after it and before
  // last_backward[stage][0] (between) or after that one (after). Chunks' last
  // backwards are left out of both counts (their template may differ).
  std::vector<int> first_action;
  std::vector<std::vector<int>> between, after;
  // The same for the W actions of a split backward ([chunk]), each chunk's last W left
  // out of both.
  std::vector<std::vector<int>> between_weight, after_weight;
  // What simulate_fast() reads of each action, packed into one record ([stage][action]),
  // so a walk touches one small record per action rather than the action, its partner
  // entry and its transfers apart: deep pipelines with hundreds of microbatches hold
  // 10^5 actions, walked once per priced split, and the walk was bound by those loads.
  struct Step {
    models::ActionKind kind = models::ActionKind::forward;
    bool send = false, recv = false;           // an exchange's halves
    int send_peer = -1, recv_peer = -1;        // their peer stages
    int send_partner = -1, recv_partner = -1;  // partner[stage][action]
    // A forward/backward: the received-message slot its input arrives in (-1: none);
    // an exchange: the slot its receive fills (-1: no receive).
    int slot = -1;
  };
  std::vector<std::vector<Step>> steps;
  std::vector<int> final_action;  // [stage]: its last forward/backward/W
  // Per repeat of a compact schedule (schedule.repeats; the walk runs its period `times`
  // times, and may jump over repetitions, simulate_fast() says when): [repeat][stage] the
  // messages the period receives that a later repetition consumes, by the slot of the
  // period's first repetition and how many repetitions later. A repeat is jumpable when
  // every message its period receives is consumed by an input of the period, and the
  // other way round (latest_input: the most repetitions between the two).
  struct Held {
    int slot = -1;
    int later = 0;
  };
  std::vector<std::vector<std::vector<Held>>> held;
  std::vector<char> jumpable;
  std::vector<int> latest_input;
};

// The index of a schedule as given (a full one, or a compact one with repeats).
std::shared_ptr<const ScheduleIndex> index_schedule(models::PipelineSchedule schedule);

// The index of split's compact schedule (models::build_compact_schedule: a steady state
// listed once, with how often it repeats); built once per distinct schedule and kept (thread-safe)
// while the indexes kept since stay within a budget (1 GiB; the oldest go first, one in
// use lives on with its holders): a deep pipeline's holds 10^6-10^7 actions. Throws
// RuntimeError when an exchange has no match.
std::shared_ptr<const ScheduleIndex> schedule_index(const models::ParallelSplit& split);
// The bytes a full index is counted at against the budget, and the budget (tests).
double schedule_index_bytes(const ScheduleIndex& index);
void set_schedule_index_budget(double bytes);
// The same index of the schedule's compute actions alone (the compute tasks
// models::build_compute_orders makes: no exchanges, partner empty; only the actions it
// names kept), kept the same way: what
// step_lower_bound() reads. Its action indices count compute actions only; every
// comparison and count the bounds make among them is the full index's.
std::shared_ptr<const ScheduleIndex> schedule_bound_index(const models::ParallelSplit& split);
// The same schedule's compute orders and held peaks (models::build_compute_orders): what
// a search's memory check reads for every split. The bound index's schedule: one build
// per distinct schedule serves both.
std::shared_ptr<const models::PipelineSchedule> schedule_compute_orders(const models::ParallelSplit& split);

// The fabric-independent half of a split's walk: its schedule and action templates.
// Built once per split, priced on any number of topologies.
// Whether the fast walk can price this split. Its action templates know three streams
// and waits inside an action; ZeRO-2/3's per-unit reductions and ZeRO-3's gathers (their
// own stream, waiting on the unit before the previous one, across actions) are priced by
// the period walk on one stage (sim_period.hpp) or the full walk (simulate() on the step
// programs): projection.hpp's SplitWalk chooses. So is dualpipev: its paired F&B
// actions interleave the ops of two actions (step_program.hpp), which one template per
// action cannot hold, and its V-shaped tip hands activations over without an exchange.
// The one rule project and crossover follow.
inline bool fast_walk_prices(const models::ParallelSplit& split) {
  return split.zero < 2 && split.schedule != models::ScheduleKind::dualpipev;
}

class StepTemplates {
 public:
  StepTemplates(const models::ModelConfig& model, const models::ParallelSplit& split,
                const models::StepProgramOptions& options);

  const models::ParallelSplit& split() const { return split_; }
  const ScheduleIndex& index() const { return *index_; }
  // Template of a forward/backward action (-1 for an exchange) and the templates.
  int template_of(int stage, int action) const { return action_template_[stage][action]; }
  const int* template_of_row(int stage) const { return action_template_[stage].data(); }
  const models::ActionTemplate& action_template(int stage, int id) const { return templates_[stage][id]; }
  int templates_per_stage(int stage) const { return static_cast<int>(templates_[stage].size()); }
  const std::vector<models::Op>& tail(int stage) const { return tails_[stage]; }
  double exchange_bytes() const { return exchange_bytes_; }
  // Memory of walking op by op the first stage (StageDetail::first) or every stage
  // (StageDetail::all): each op with its four times, at twice their count (a growing
  // vector's capacity). What `ibt project` plans before pricing a split.
  double op_walk_bytes(bool all_stages) const;

 private:
  models::ParallelSplit split_;
  std::shared_ptr<const ScheduleIndex> index_;
  std::vector<std::vector<models::ActionTemplate>> templates_;  // [stage][chunk * 5 + variant]
  std::vector<std::vector<int>> action_template_;               // [stage][action]
  std::vector<std::vector<models::Op>> tails_;                  // [stage]
  double exchange_bytes_ = 0;
};

enum class StageDetail { first, all };

// The step of the templates' split priced by `pricer`. Stages walked by summaries
// (all but the first with StageDetail::first) carry finish_us and the final bubble
// only; detailed ones the full breakdown.
SimResult simulate_fast(const StepTemplates& templates, OpPricer& pricer, StageDetail detail = StageDetail::first);

// A lower bound on simulate_fast()'s step time for `split`, for searches that need only
// the best splits (branch and bound: a split whose bound exceeds the k-th best step
// time found cannot enter the top k). It walks no action, and builds and prices only
// the templates it uses (the first and last stages', and the plain forward, backward
// and W of each chunk of the others, which a search's splits share): a fraction of
// StepTemplates' cost at deep pipelines. Those without overlapped reductions are
// summarised part by part (chunk_parts.hpp: embedding, dense layer, MoE layer, head,
// each built and priced once per search) and composed. From the
// max-plus summaries (an output is at least any input plus its table entry) it bounds
// - the pipeline fill: stage s's first action waits for microbatch 0's activation,
//   produced by the first forwards of stages 0..s-1 in turn, plus the exchange
//   transfers;
// - the drain: each stage's last backward of chunk 0 waits for the same microbatch's
//   gradient from the next stage, plus the transfer;
// - every stage's compute stream: after its first action every other action's compute
//   back to back, and on the first and the last stage the tail (a middle stage, which
//   holds one layer more where the layers do not divide evenly, may be the busiest);
// and returns the latest end of a stage. It leaves out exposed
// communication other than on those chains, so it never exceeds the step time. The
// summaries add durations in another association than the walk: compare with a
// relative margin of kLowerBoundMargin. ZeRO-2/3 splits, which the fast walk does not
// price, are bounded by their ZeRO-1 sibling without its step-end tail (search_bounds.cpp says
// why that is below their full walk). tests/topologies/sim/search_bound_test.cpp holds it
// below the walk on every split of several searches.
inline constexpr double kLowerBoundMargin = 1e-9;
double step_lower_bound(const models::ModelConfig& model, const models::ParallelSplit& split,
                        const models::StepProgramOptions& options, OpPricer& pricer);

// The summaries of the templates the bounds of one search have priced, shared by its
// splits (thread-safe): a template depends on the split only through the fields that
// shape its ops (tp, cp, ep, micro-batch size, recompute ...; dp and the ZeRO stage for
// one carrying overlapped reductions), its layers and whether it holds the embedding or
// the head, so splits that differ in pp, vpp or microbatches (and, for most templates,
// dp) share most of theirs (search_bounds.cpp template_key). Valid
// for one model, world size, element sizes and list of pricers (the search's topology,
// or a crossover row's fabrics, in the same order): make one per search.
// tests/topologies/sim/search_bound_test.cpp checks bounds with and without it equal.
class BoundTemplates {
 public:
  explicit BoundTemplates(size_t pricers);
  ~BoundTemplates();
  struct Known;
  Known& known() { return *known_; }

 private:
  std::unique_ptr<Known> known_;
};

// The same on several pricers (a crossover row's fabrics), the templates built once;
// `known` (may be null) shares summaries with the search's other splits.
std::vector<double> step_lower_bounds(const models::ModelConfig& model, const models::ParallelSplit& split,
                                      const models::StepProgramOptions& options, const std::vector<OpPricer*>& pricers,
                                      BoundTemplates* known = nullptr);

// A looser bound shared by a family of splits, for searches to rule out whole families
// before bounding their members one by one: the splits that differ only in recompute
// and ZeRO stage (shard group included). bound_family() is the family's
// representative: no recompute, no ZeRO. Its bound is step_lower_bound()'s without the
// step-end tail and with every backward's plain template (no overlapped gradient ops).
// Below every member's step: a member's forward and backward templates hold the
// representative's ops in the same order with the same waits, and more (recompute
// re-runs ops before a backward, ZeRO-2/3 and overlapped reductions add gradient and
// parameter ops); inserting ops of non-negative duration into a max-plus walk can only
// delay the ops after them, so every table entry the bound uses is at least the
// representative's. tests/topologies/sim/search_bound_test.cpp holds it below the walk
// on every split of several searches, and below each member's own bound.
models::ParallelSplit bound_family(const models::ParallelSplit& split);
std::vector<double> family_lower_bounds(const models::ModelConfig& model, const models::ParallelSplit& split,
                                        const models::StepProgramOptions& options,
                                        const std::vector<OpPricer*>& pricers, BoundTemplates* known = nullptr);

}  // namespace ibt::topo
