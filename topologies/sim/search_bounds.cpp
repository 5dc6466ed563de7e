// The search's lower bounds on a split's step time (sim_fast.hpp step_lower_bound,
// step_lower_bounds, family_lower_bounds, bound_family): a split's fill, drain and
// busiest compute stream bounded from the max-plus summaries of the few templates it
// reads, those summaries composed from chunk parts (chunk_parts.hpp) and shared between
// a search's splits (BoundTemplates, keyed by template_key and part_key).
#include "topologies/sim/sim_fast.hpp"

#include <stdexcept>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

#include "topologies/sim/chunk_parts.hpp"
#include "topologies/sim/sim_fast_internal.hpp"
#include "topologies/sim/stage_prices.hpp"
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

// A template the bounds build once per split and price on every pricer; with several
// pricers (a crossover row's fabrics) its ops' classes, so that each prices only the
// distinct ones.
struct BoundTemplate {
  ActionTemplate t;
  std::optional<OpClasses> classes;
};

// in[j] + entry, where either may be kNever (no dependence, or no known time).
double plus(double t, double entry) { return t == kNever || entry == kNever ? kNever : t + entry; }

// An output's bound from bounds on the inputs.
double out_bound(const Table& t, int output, const Times& in) {
  double v = kNever;
  for (int j = 0; j < kInputs; ++j) v = std::max(v, plus(in[j], t[output][j]));
  return v;
}

// step_lower_bound() on one pricer, one per split and pricer: the fill, then the drain.
// summary(s, id, prices) gives template id of stage s summarised, tail(s) the stage's
// tail. shared(s, id, summarise) returns the summary of template id of stage s from the
// search's BoundTemplates, calling summarise() for one not known there.
template <typename SummaryOf, typename TailOf, typename Shared>
class LowerBound {
 public:
  LowerBound(const ScheduleIndex& ix, SummaryOf& summary, TailOf& tail_of, double exchange_bytes,
             bool overlap_grad_reduce, Shared& shared, OpPricer& pricer)
      : ix_(ix),
        summary_(summary),
        tail_of_(tail_of),
        overlap_grad_reduce_(overlap_grad_reduce),
        shared_(shared),
        pricer_(pricer),
        stages_(ix.stages()),
        chunks_(ix.schedule.chunks),
        prices_(stages_),
        priced_(stages_) {
    exchange_.kind = OpKind::pp_exchange;
    exchange_.group = Group::pp;
    exchange_.stream = Stream::p2p;
    exchange_.bytes = exchange_bytes;
  }

  // with_tail adds the first and the last stage's step-end tail.
  double bound(bool with_tail) { return drain(fill(), with_tail); }

 private:
  StagePrices& prices_of(int s) {
    if (!prices_[s]) prices_[s].emplace(pricer_, s);
    return *prices_[s];
  }
  const Table& priced_template(int s, int id) {
    auto it = priced_[s].find(id);
    if (it != priced_[s].end()) return it->second;
    return priced_[s].emplace(id, shared_(s, id, [&] { return summary_(s, id, prices_of(s)); })).first->second;
  }
  int template_of(int s, int i) const { return template_for(ix_, s, i, overlap_grad_reduce_); }
  // The same without the overlapped reductions (variant 2 -> 1, 4 -> 3): a lower bound on
  // the reducing one (it holds the same ops and fewer: family_lower_bounds says why) that
  // the search's splits share (template_key), where a reducing one is built and priced
  // per split.
  int plain_template(int s, int i) const {
    const int id = template_of(s, i);
    return reduces_gradients(id) ? id - 1 : id;
  }
  // The compute stream's time through an action from its own start (>= its compute).
  double busy(int s, int id) { return std::max(0.0, priced_template(s, id)[kCompute][kCompute]); }
  double half_us(int stage, int peer) {
    stub_.stage = stage;
    return pricer_.exchange_half_us(stub_, exchange_, peer);
  }
  std::pair<double, double> busy_before_after(int s, bool plain);
  std::vector<double> fill();
  double drain(const std::vector<double>& first_free, bool with_tail);

  const ScheduleIndex& ix_;
  SummaryOf& summary_;
  TailOf& tail_of_;
  const bool overlap_grad_reduce_;
  Shared& shared_;
  OpPricer& pricer_;
  const int stages_, chunks_;
  std::vector<std::optional<StagePrices>> prices_;
  std::vector<std::map<int, Table>> priced_;
  models::StepProgram stub_;
  Op exchange_;
};

// A stage's action compute back to back after its first action, split at its last
// chunk-0 backward (exclusive on both sides). `plain`: the chunks' last backwards (or
// W's) counted by their plain templates, as the middle stages of a deep pipeline are.
template <typename SummaryOf, typename TailOf, typename Shared>
std::pair<double, double> LowerBound<SummaryOf, TailOf, Shared>::busy_before_after(int s, bool plain) {
  auto last_template = [&](int action) { return plain ? plain_template(s, action) : template_of(s, action); };
  const int first = ix_.first_action[s], L = ix_.last_backward[s][0];
  double before = 0, after = 0;
  for (int c = 0; c < chunks_; ++c) {
    if (ix_.between[s][c * 2]) before += ix_.between[s][c * 2] * busy(s, template_id(c, 0));
    if (ix_.between[s][c * 2 + 1]) before += ix_.between[s][c * 2 + 1] * busy(s, template_id(c, 1));
    if (ix_.after[s][c * 2]) after += ix_.after[s][c * 2] * busy(s, template_id(c, 0));
    if (ix_.after[s][c * 2 + 1]) after += ix_.after[s][c * 2 + 1] * busy(s, template_id(c, 1));
    if (ix_.between_weight[s][c]) before += ix_.between_weight[s][c] * busy(s, template_id(c, 3));
    if (ix_.after_weight[s][c]) after += ix_.after_weight[s][c] * busy(s, template_id(c, 3));
    // A split backward's last W (it may carry the chunk's reductions).
    const int last_w = ix_.schedule.split_backward() ? ix_.last_grads[s][c] : -1;
    if (last_w > first) (last_w < L ? before : after) += busy(s, last_template(last_w));
    const int last = ix_.last_backward[s][c];
    if (c == 0 || last == first) continue;
    (last < L ? before : after) += busy(s, last_template(last));
  }
  return std::pair<double, double>{before, after};
}

// The fill: stage s's first action waits for microbatch 0's activation, which the
// first forwards of stages 0..s-1 produce in turn. Returns each stage's compute stream
// after its first action.
template <typename SummaryOf, typename TailOf, typename Shared>
std::vector<double> LowerBound<SummaryOf, TailOf, Shared>::fill() {
  std::vector<double> first_free(stages_, 0.0);  // compute stream after the stage's first action
  double upstream_ready = kNever;                // stage s-1's first forward output
  bool chain = true;
  for (int s = 0; s < stages_; ++s) {
    const int i = ix_.first_action[s];
    const auto& a = ix_.action(s, i);
    chain = chain && a.kind == ActionKind::forward && a.chunk == 0 && a.microbatch == 0;
    const double received = s > 0 && chain ? plus(upstream_ready, half_us(s, s - 1)) : kNever;
    const Table& t = priced_template(s, template_of(s, i));
    const Times in{0.0, 0.0, 0.0, received};
    first_free[s] = std::max(0.0, out_bound(t, kCompute, in));
    upstream_ready = out_bound(t, kReceived, in);
    chain = chain && upstream_ready != kNever;
  }
  return first_free;
}

// The drain, from the last stage down: each stage's last chunk-0 backward waits for
// the same microbatch's gradient from the next stage, and every stage counts its
// actions' compute. The first and the last stage add their step-end tail; the middle
// ones leave it out (built per split, and a deep pipeline has dozens) and take their
// chunks' last backwards (the drain's too) plain. A middle stage bounds the step where the layers do
// not divide evenly: the remainder goes to the middle stages (models/plan/schedule.hpp
// stage_layers), so they, not the first and last, are the busiest. Returns the latest
// end of a stage.
template <typename SummaryOf, typename TailOf, typename Shared>
double LowerBound<SummaryOf, TailOf, Shared>::drain(const std::vector<double>& first_free, bool with_tail) {
  const int P = stages_;
  double bound = 0;
  double downstream_ready = kNever;  // stage s+1's last chunk-0 backward output
  int downstream_microbatch = -1;
  for (int s = P - 1; s >= 0; --s) {
    const bool edge = s == 0 || s == P - 1;
    const int first = ix_.first_action[s];
    const int L = ix_.last_backward[s][0];
    const auto [between, after] = busy_before_after(s, !edge);
    const double before = first_free[s] + between;
    double end = before;
    if (L > first) {
      const auto& a = ix_.action(s, L);
      const bool linked = s < P - 1 && a.microbatch == downstream_microbatch;
      const double received = linked ? plus(downstream_ready, half_us(s, s + 1)) : kNever;
      const Table& t = priced_template(s, edge ? template_of(s, L) : plain_template(s, L));
      const Times in{before, 0.0, 0.0, received};
      end = std::max(before, out_bound(t, kCompute, in));
      downstream_ready = out_bound(t, kReceived, in);
      downstream_microbatch = downstream_ready == kNever ? -1 : a.microbatch;
    } else {
      downstream_ready = kNever;
      downstream_microbatch = -1;
    }
    if (!with_tail || !edge) {
      bound = std::max(bound, end + after);
      continue;
    }
    StagePrices& prices = prices_of(s);
    const std::vector<Op>& tail = tail_of_(s);
    const PricedTemplate t = summarise(tail, prices(tail), -1);
    end += after + std::max(0.0, t.table[kCompute][kCompute]);
    bound = std::max(bound, end);
  }
  return bound;
}

}  // namespace

struct BoundTemplates::Known {
  // template_key()s, hashed: a search looks up 10^5 of them, 10^5 times over.
  struct KeyHash {
    size_t operator()(const std::vector<long long>& key) const {
      std::uint64_t h = 0;
      for (const long long v : key) h = (h ^ static_cast<std::uint64_t>(v)) * 0x100000001b3ULL + 0x9e3779b97f4a7c15ULL;
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };
  size_t pricers = 0;
  std::mutex mutex;
  std::unordered_map<std::vector<long long>, Table, KeyHash> tables;
  // The chunk parts' summaries (part_key()), under the same mutex.
  std::unordered_map<std::vector<long long>, PartSummary, KeyHash> parts;

  // map's entry for key, or make()'s result stored there. make() runs outside the lock
  // (another thread may make the same entry meanwhile; the first one stored is kept).
  template <typename Map, typename Make>
  typename Map::mapped_type remembered(Map& map, const std::vector<long long>& key, Make&& make) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      const auto it = map.find(key);
      if (it != map.end()) return it->second;
    }
    typename Map::mapped_type made = make();
    std::lock_guard<std::mutex> lock(mutex);
    return map.emplace(key, std::move(made)).first->second;
  }
};

BoundTemplates::BoundTemplates(size_t pricers) : known_(std::make_unique<Known>()) { known_->pricers = pricers; }
BoundTemplates::~BoundTemplates() = default;

namespace {

// What a template's prices depend on, for splits of one model and world size on one
// pricer: the split's fields that shape its ops (not pp, vpp, m or dp: its layers are
// named by their count; nor ZeRO-0/1: they add no op to these), the template's pass,
// its layers (the dense ones come first, model_config.hpp layer_is_moe) and whether it
// holds the embedding or the head (the first and last virtual stage: they also decide
// whether it receives its input and sends its output), whether the schedule splits the
// backward (zb-h1: a backward then holds the input-gradient halves only), and the
// pricer. A variant carrying overlapped reductions (reduces_gradients) also depends on
// what they reduce over and how: dp (with tp, cp, ep and the shard group, keyed
// already; the pricer places the DP groups from them alone) and the ZeRO stage
// (all-reduce or reduce-scatter).
std::vector<long long> template_key(const models::ModelConfig& model, const models::ParallelSplit& split,
                                    const models::PipelineSchedule& schedule, int stage, int id, size_t pricer) {
  const int vs = schedule.virtual_stage(stage, id / kVariants);
  const int V = schedule.virtual_stages();
  const models::LayerRange r = models::stage_layers(model, V, vs);
  const int dense = model.is_moe() ? std::clamp(model.first_dense_layers - r.first, 0, r.count) : r.count;
  // A forward's ops are the same whatever the recompute and whether the backward is
  // split (both change only backward ops: models/plan/step_layers.cpp), so the forwards of
  // a family's representative, its members and its 1F1B/ZB-H1/interleaved kin share one.
  const bool forward = pass_of(id) == models::Pass::forward;
  const bool reducing = reduces_gradients(id);
  return {split.tp,
          split.cp,
          static_cast<long long>(split.cp_comm),
          split.ep,
          split.micro_batch_size,
          split.sequence_parallel,
          forward ? -1 : static_cast<long long>(split.recompute),
          split.zero >= 2 ? split.zero : 0,
          split.shard_group,
          id % kVariants,
          forward ? -1 : models::splits_backward(split.schedule),
          dense,
          r.count - dense,
          vs == 0,
          vs == V - 1,
          reducing ? split.dp : -1,
          reducing ? split.zero : -1,
          static_cast<long long>(pricer)};
}

// What a chunk part's prices depend on (template_key's fields for one part): the split's
// fields that shape its ops, its pass, which part (and for a layer, dense or MoE), and
// the pricer.
std::vector<long long> part_key(const models::ModelConfig& model, const models::ParallelSplit& split, models::Pass pass,
                                models::ChunkPart part, int layer, size_t pricer) {
  const bool forward = pass == models::Pass::forward;
  return {split.tp,
          split.cp,
          static_cast<long long>(split.cp_comm),
          split.ep,
          split.micro_batch_size,
          split.sequence_parallel,
          forward ? -1 : static_cast<long long>(split.recompute),
          static_cast<long long>(pass),
          forward ? -1 : models::splits_backward(split.schedule),
          static_cast<long long>(part),
          part == models::ChunkPart::layer ? model.layer_is_moe(layer) : -1,
          static_cast<long long>(pricer)};
}

}  // namespace

namespace {

// step_lower_bound() of `split` on each pricer: with_tail adds the stage's step-end
// tail, overlap_grad_reduce takes the chunks' last backwards with their gradient ops.
std::vector<double> lower_bounds(const models::ModelConfig& model, const models::ParallelSplit& split,
                                 const models::StepProgramOptions& options, bool overlap_grad_reduce, bool with_tail,
                                 const std::vector<OpPricer*>& pricers, BoundTemplates* known) {
  const std::shared_ptr<const ScheduleIndex> index = schedule_bound_index(split);
  const ScheduleIndex& ix = *index;
  const int P = ix.stages();
  // Templates with overlapped reductions (the others are composed from their parts,
  // below) are built on demand, once for every pricer.
  std::vector<std::map<int, BoundTemplate>> built(P);
  std::vector<std::optional<std::vector<Op>>> tails(P);
  auto action = [&](int s, int id) -> const BoundTemplate& {
    auto it = built[s].find(id);
    if (it != built[s].end()) return it->second;
    BoundTemplate b;
    b.t = models::build_action_template(model, split, s, id / kVariants, pass_of(id), reduces_gradients(id), options);
    if (pricers.size() > 1) b.classes = op_classes(b.t.ops);
    return built[s].emplace(id, std::move(b)).first->second;
  };
  auto tail = [&](int s) -> const std::vector<Op>& {
    if (!tails[s]) tails[s] = models::build_tail_template(model, split, s, ix.chunk_order[s], options);
    return *tails[s];
  };
  const double exchange_bytes = models::pipeline_message_bytes(model, split, options);
  // A bound asked for outside a search remembers its parts and templates for itself.
  BoundTemplates own(pricers.size());
  BoundTemplates::Known& shared_known = (known ? *known : own).known();
  if (shared_known.pricers != pricers.size())
    throw std::logic_error("sim_fast: BoundTemplates shared by bounds on different pricers");
  std::vector<double> out;
  for (size_t k = 0; k < pricers.size(); ++k) {
    // A part's summary: a known one, or built, priced and summarised once.
    auto part_summary = [&](int s, models::Pass pass, models::ChunkPart part, int layer,
                            StagePrices& prices) -> PartSummary {
      return shared_known.remembered(shared_known.parts, part_key(model, split, pass, part, layer, k), [&] {
        return summarise_part(models::build_part_template(model, split, s, pass, part, layer, options), prices);
      });
    };
    // Template id of stage s summarised: composed from its parts (chunk_parts.hpp), or
    // from its ops where overlapped reductions or ZeRO-2/3 reach across its layers.
    auto summary = [&](int s, int id, StagePrices& prices) -> Table {
      if (reduces_gradients(id) || split.zero >= 2) {
        const BoundTemplate& b = action(s, id);
        return summarise(b.t.ops, b.classes ? prices(*b.classes) : prices(b.t.ops), b.t.producer).table;
      }
      const models::Pass pass = pass_of(id);
      return summarise_by_parts(model, split, s, id / kVariants, pass, [&](models::ChunkPart part, int layer) {
        return part_summary(s, pass, part, layer, prices);
      });
    };
    auto shared = [&](int s, int id, auto&& summarise_it) -> Table {
      return shared_known.remembered(shared_known.tables, template_key(model, split, ix.schedule, s, id, k),
                                     summarise_it);
    };
    out.push_back(
        LowerBound(ix, summary, tail, exchange_bytes, overlap_grad_reduce, shared, *pricers[k]).bound(with_tail));
  }
  return out;
}

}  // namespace

std::vector<double> step_lower_bounds(const models::ModelConfig& model, const models::ParallelSplit& given,
                                      const models::StepProgramOptions& options, const std::vector<OpPricer*>& pricers,
                                      BoundTemplates* known) {
  // ZeRO-2/3 (and HSDP) splits: the fast walk's templates cannot carry their per-unit
  // streams (fast_walk_prices), so they are bounded by their ZeRO-1 sibling, the same
  // split with the states sharded only at the step's end, without that tail. Its
  // forwards and backwards hold the same compute and the same TP/EP/CP/PP collectives;
  // ZeRO-2/3 only add waits (gathers before a unit, reductions after it), which can
  // only make the compute stream later. The tail is left out because ZeRO-1's one
  // reduce-scatter and gather at the step's end are what ZeRO-2/3 spread over the step.
  const bool sibling = !fast_walk_prices(given);
  models::ParallelSplit split = given;
  if (sibling) split.zero = 1;
  return lower_bounds(model, split, options, options.overlap_grad_reduce, !sibling, pricers, known);
}

double step_lower_bound(const models::ModelConfig& model, const models::ParallelSplit& split,
                        const models::StepProgramOptions& options, OpPricer& pricer) {
  return step_lower_bounds(model, split, options, {&pricer}, nullptr).front();
}

models::ParallelSplit bound_family(const models::ParallelSplit& split) {
  models::ParallelSplit family = split;
  family.recompute = models::Recompute::none;
  family.zero = 0;
  family.shard_group = 0;
  return family;
}

std::vector<double> family_lower_bounds(const models::ModelConfig& model, const models::ParallelSplit& split,
                                        const models::StepProgramOptions& options,
                                        const std::vector<OpPricer*>& pricers, BoundTemplates* known) {
  // The family's representative without recompute, ZeRO, gradient reductions or the
  // step-end tail: every member's templates hold its ops and more (sim_fast.hpp).
  return lower_bounds(model, bound_family(split), options, false, false, pricers, known);
}

}  // namespace ibt::topo
