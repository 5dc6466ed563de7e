#pragma once
// How one training step is split over ranks: data (dp), tensor (tp), pipeline (pp) and
// expert (ep) parallelism, the pipeline schedule and the memory-saving options.
//
// Rules ibt adopts (validate() enforces each, naming it when it fails):
// - world size = dp * tp * pp * cp. EP is not a separate factor: the EP group is carved out
//   of the DP group, as Megatron does. ep must divide dp; the dp replicas of a stage
//   split into dp/ep "expert-data-parallel" (expert_dp) groups of ep consecutive DP
//   ranks each (rank_groups.hpp gives the exact order). Expert weights are sharded
//   num_experts/ep per rank and replicated over expert_dp; non-expert weights are
//   replicated over all of dp.
// - Expert FFNs are tensor-parallel with the same tp as the dense layers (no separate
//   expert-TP degree): each expert's up projection is column-split and its down
//   projection row-split over the TP group, so expert_ffn_hidden % tp == 0.
// - TP (Megatron): heads, ffn_hidden, vocab (vocab-parallel embedding and loss)
//   divisible by tp; with sequence parallelism also seq_len % tp == 0. kv_heads
//   divisible by tp, or, when tp > kv_heads (GQA with few KV heads, MQA), tp a multiple
//   of kv_heads: each KV head is then replicated on tp/kv_heads consecutive TP ranks
//   (the ranks whose query heads use it), their K/V weight gradients summed over that
//   replica group (rank_groups.hpp: tp_kv) so that the copies stay identical.
// - PP: layers >= pp * vpp. Virtual stage i holds consecutive layers,
//   layers/(pp*vpp) each when that divides; otherwise the remainder r goes one extra
//   layer each to r consecutive MIDDLE virtual stages, so the first and last ones
//   (which also hold the embedding, resp. the LM head and loss) get fewer
//   (schedule.hpp: stage_layers() is the one place that decides). Uneven splits are
//   needed for real shapes: DeepSeek-V3 and Kimi K2 have 61 layers, a prime.
//   The embedding lives on virtual stage 0, the final norm, LM head and loss on the
//   last one.
// - Schedules: afab (GPipe: all forwards then all backwards) and 1f1b need vpp == 1;
//   interleaved needs pp >= 2, vpp >= 2 and microbatches % pp == 0 (Megatron's rule).
//   1f1b needs microbatches >= pp (otherwise it degenerates into afab; ask for afab).
//   dualpipev needs pp >= 2, vpp == 2 (its V: rank s holds virtual stages s and
//   2pp-1-s, virtual_stage_of() below) and microbatches >= 2 pp (DualPipeV's rule).
// - CP (context parallelism): each sequence is cut into 2*cp chunks and CP rank i
//   holds chunks i and 2cp-1-i (causal load balance, as Llama 3 and Megatron-Core
//   pair them), so seq_len % (2*cp) == 0; with sequence parallelism each TP rank then
//   holds 1/tp of the CP rank's tokens, so seq_len % (cp*tp) == 0 as well. CP ranks
//   hold the same weights and join the gradient reduction (and the ZeRO-1 shards) as
//   extra data-parallel replicas (rank_groups.hpp: the dp_cp groups). The global
//   batch does not grow with cp: CP ranks share their sequences.
// - Options that would have no effect are rejected so that every split has one
//   spelling: sequence_parallel needs tp > 1, zero >= 1 needs dp * cp > 1, ep > 1 needs an
//   MoE model, shard_group is 0 unless it is a proper divisor of dp.
// - Sharded data parallelism (ZeRO, Rajbhandari et al. 2020; FSDP): zero = 1 shards
//   the optimizer states over the DP group, 2 also the gradients (each rank keeps the
//   reduced 1/d slice), 3 also the parameters (gathered layer by layer before its
//   forward and again before its backward, the next layer's gather prefetched).
//   Expert weights are sharded over expert_dp, the rest over dp; with cp > 1 each of
//   these groups times the cp ranks (CP ranks are gradient replicas: rank_groups.hpp's
//   dp_shard and expert_dp_cp), so ZeRO needs dp * cp > 1.
// - Hybrid sharding (HSDP; PyTorch HYBRID_SHARD, ZeRO++'s hpZ): shard_group = g > 0
//   shards the states inside groups of g consecutive DP ranks and replicates them
//   over the dp/g groups: gradients are reduce-scattered inside the shard group, then
//   the shards all-reduced across the replicas. Needs zero >= 1, 1 < g < dp, g | dp
//   and ep | g. With cp > 1 a shard group is g DP ranks x all cp ranks. With EP a
//   shard group holds g/ep whole EP groups: expert states shard over its g/ep ranks
//   with the same experts (x cp; rank_groups.hpp's expert_dp_shard) and are
//   all-reduced across the dp/g replicas like the dense shards.
// - The global batch, in sequences, is dp * microbatches * micro_batch_size.
#include <string>
#include <string_view>
#include <vector>

#include "models/plan/model_config.hpp"

namespace ibt::models {

// zb_h1: Qi et al.'s ZB-H1 zero-bubble schedule (schedule.hpp): 1F1B with every
// backward split into B (input gradients) and W (weight gradients), W deferred.
// dualpipev: DeepSeek's DualPipe in its V-shaped "cut-in-half" form (schedule.hpp):
// two chunks per rank placed in a V, forward and backward chunks paired, B and W split.
enum class ScheduleKind { afab, one_f_one_b, interleaved, zb_h1, dualpipev };
// Whether the schedule splits each backward into B and W actions (schedule.hpp).
inline bool splits_backward(ScheduleKind k) { return k == ScheduleKind::zb_h1 || k == ScheduleKind::dualpipev; }
// Whether chunks sit on the ranks in a V (dualpipev) rather than round-robin.
inline bool v_shaped(ScheduleKind k) { return k == ScheduleKind::dualpipev; }

// Where the layers of a virtual stage run. Round-robin (every schedule but dualpipev):
// virtual stage vs = chunk * pp + stage, so data flows 0 -> pp-1 on every chunk and
// the last rank hands chunk c to rank 0's chunk c+1. V-shaped (dualpipev, the DualPipe
// README's DualPipeV: "4 PP ranks (8 PP stages)"): chunk 0 of rank s is virtual stage
// s and chunk 1 is 2pp-1-s, so data flows down the ranks on chunk 0 and back up on
// chunk 1; the last rank passes chunk 0's output to its own chunk 1, and rank 0 holds
// both the embedding (virtual stage 0) and the loss (virtual stage 2pp-1).
struct StageChunk {
  int stage = 0;
  int chunk = 0;
};
inline int virtual_stage_of(ScheduleKind k, int pp, int stage, int chunk) {
  if (v_shaped(k)) return chunk == 0 ? stage : 2 * pp - 1 - stage;
  return chunk * pp + stage;
}
inline StageChunk placement_of(ScheduleKind k, int pp, int virtual_stage) {
  if (v_shaped(k)) return virtual_stage < pp ? StageChunk{virtual_stage, 0} : StageChunk{2 * pp - 1 - virtual_stage, 1};
  return {virtual_stage % pp, virtual_stage / pp};
}
// selective: Korthikanti et al.'s selective recompute (the attention core is
// recomputed in the backward pass; with a fused FlashAttention-style core, which keeps
// no scores anyway, it frees only the log-sum-exp: accounting.hpp); full: each layer's
// whole forward is recomputed.
enum class Recompute { none, selective, full };

// How context-parallel attention gets the other ranks' keys and values:
// all_gather: Llama 3's variant, K and V all-gathered once per layer (dK, dV
// reduce-scattered in the backward); ring: K/V blocks passed around the CP ring, cp-1
// steps, each hidden behind the attention of the block in hand when that is long
// enough (Megatron-Core's p2p; dK/dV travel back around the ring in the backward).
enum class CpComm { all_gather, ring };

std::string_view to_string(ScheduleKind k);          // "afab", "1f1b", "interleaved", "zb-h1", "dualpipev"
std::string_view to_string(CpComm c);                // "all_gather", "ring"
CpComm parse_cp_comm(std::string_view name);         // throws UsageError naming the value
std::string_view to_string(Recompute r);             // "none", "selective", "full"
ScheduleKind parse_schedule(std::string_view name);  // throws UsageError naming the value
Recompute parse_recompute(std::string_view name);    // throws UsageError naming the value

struct ParallelSplit {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int ep = 1;                // divides dp (EP drawn from DP)
  int vpp = 1;               // model chunks (virtual stages) per pipeline rank
  int microbatches = 1;      // per DP replica per step (gradient accumulation steps)
  int micro_batch_size = 1;  // sequences per microbatch
  ScheduleKind schedule = ScheduleKind::one_f_one_b;
  bool sequence_parallel = false;
  int zero = 0;  // ZeRO stage 0..3: what is sharded over dp (above)
  Recompute recompute = Recompute::none;
  int cp = 1;  // context-parallel degree (sequence split over cp ranks)
  CpComm cp_comm = CpComm::all_gather;
  int shard_group = 0;  // HSDP: DP ranks per shard group; 0 = all of dp

  // DP ranks that share one copy of the sharded states, and how many copies there are.
  int zero_shard() const { return shard_group > 0 ? shard_group : dp; }
  int zero_replicas() const { return dp / zero_shard(); }

  int world_size() const { return dp * tp * pp * cp; }
  // The group a non-expert weight's gradient is reduced over: dp replicas times cp.
  int grad_replicas() const { return dp * cp; }
  int expert_dp() const { return dp / ep; }
  long long global_batch() const { return static_cast<long long>(dp) * microbatches * micro_batch_size; }
  int virtual_stages() const { return pp * vpp; }
  int virtual_stage(int stage, int chunk) const { return virtual_stage_of(schedule, pp, stage, chunk); }
  bool operator==(const ParallelSplit&) const = default;
};

// One line, e.g. "dp2 tp2 pp2 ep1 vpp1 m4 b1 1f1b sp zero1 recompute=none"; with
// context parallelism " cp2" (" cp2 ring" for the ring variant) follows pp (absent at
// cp 1, so older lines are unchanged); ZeRO stages 1..3 as "zero1".."zero3", a shard
// group as "shard8" after them.
std::string describe(const ParallelSplit& s);
// describe() as a table row shows it in 120 columns: parallel degrees of 1, the micro-batch
// size 1, recompute=none and the schedule when it is the one implied (none without PP,
// 1f1b with PP, interleaved with vpp > 1) left out, e.g. "dp16 tp2 pp2 m128 sp" for
// "dp16 tp2 pp2 ep1 vpp1 m128 b1 1f1b sp recompute=none"; "dp8 pp4 m32 zb-h1" keeps its schedule
// (the HDF5 rows and --wide keep describe()'s words).
std::string compact_label(const ParallelSplit& s);
// The strategy in the field's words, for tables and search results: the data-parallel
// flavour ("ddp", "zero1", "zero2", "fsdp" for ZeRO-3 over all of dp, "hsdp8" for
// ZeRO-3 sharded over groups of 8 with replicas across them, "hsdp8-zero2" ...), then
// "tpN" (+"sp"), "ppN" (+"vN"), "epN" where > 1, e.g. "fsdp tp4 sp", "zero1 tp8 sp pp16".
// With dp == 1 and no ZeRO the first word is omitted (a single replica: "tp8 pp16");
// ZeRO at dp 1 shards over the CP ranks and keeps its word ("fsdp cp8").
std::string strategy_label(const ParallelSplit& s);

// Throws UsageError naming the first failed constraint, e.g.
// "split dp2 tp3 ...: heads (4) not divisible by tp (3)".
void validate(const ParallelSplit& split, const ModelConfig& model, int world_size);
// The same check without throwing: empty when valid, else the message.
std::string check(const ParallelSplit& split, const ModelConfig& model, int world_size);

// What enumerate_splits() searches. Every combination of the listed values with every
// (dp, tp, pp, ep) factorisation of the world size is tried and kept if valid.
struct SplitSearch {
  // Global batch in sequences. > 0: microbatches = global_batch / (dp * mbs), only
  // where that divides exactly (microbatch_counts is then ignored).
  long long global_batch = 0;
  std::vector<int> microbatch_counts = {1, 2, 4, 8};  // used when global_batch == 0
  std::vector<int> micro_batch_sizes = {1};
  std::vector<ScheduleKind> schedules = {ScheduleKind::afab, ScheduleKind::one_f_one_b, ScheduleKind::interleaved};
  std::vector<int> interleave_chunks = {2};  // vpp values tried for interleaved
  std::vector<Recompute> recomputes = {Recompute::none};
  // ZeRO stages tried when dp > 1 (stage 0 always, whatever the list says, so that
  // every search has the plain replicated split to compare with).
  std::vector<int> zero_stages = {0};
  // HSDP shard-group sizes tried with ZeRO-3 (those that properly divide dp).
  std::vector<int> shard_groups = {};
  // Also try, with ZeRO-3, for each of these scale-up domain sizes the largest shard
  // group that fits in one domain (the largest divisor g of dp with g * tp <= domain):
  // the usual HSDP placement, shard inside the node or rack, replicate across.
  std::vector<int> shard_domains = {};
  // false: ZeRO-2/3 and HSDP only where pp == 1 (the pruned projection search: FSDP
  // is the no-PP strategy, and DeepSpeed refuses ZeRO-2/3 with its pipeline engine).
  bool sharded_with_pp = true;
  // Micro-batch sizes also tried for ZeRO-3 splits (after micro_batch_sizes): FSDP
  // gathers every unit's weights once per microbatch, so fewer, larger microbatches
  // are how it is run at scale.
  std::vector<int> sharded_micro_batch_sizes = {};
  bool try_sequence_parallel = true;    // also emit the SP variant when tp > 1
  bool only_sequence_parallel = false;  // when tp > 1, emit only the SP variant
  int max_tp = 0;                       // 0 = no limit (e.g. the scale-up domain size for projection)
  int max_pp = 0;                       // 0 = no limit; 1 = no pipeline parallelism
  int min_pp = 1;                       // 2 = pipeline parallel splits only
  int max_ep = 0;                       // 0 = no limit
  // Context-parallel degrees tried: every divisor c of world/(pp*tp) with
  // 2c | seq_len up to max_cp (1 = no CP, the default; 0 = no limit), with each
  // variant listed.
  int max_cp = 1;
  std::vector<CpComm> cp_comms = {CpComm::all_gather, CpComm::ring};
};

// Every valid split for the model and world size, in a deterministic order (pp, tp,
// cp, ep, then the option lists in their given order). With pp == 1 only the 1f1b
// schedule is emitted (afab and 1f1b are the same step for one stage, save
// activation memory). Fast: for 16,384 ranks it is a few thousand validate() calls.
std::vector<ParallelSplit> enumerate_splits(const ModelConfig& model, int world_size, const SplitSearch& search = {});

// Divisors of n in increasing order.
std::vector<int> divisors(int n);

}  // namespace ibt::models
