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
// - TP (Megatron): heads, kv_heads, ffn_hidden, vocab (vocab-parallel embedding and
//   loss) divisible by tp; with sequence parallelism also seq_len % tp == 0.
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
// - CP (context parallelism): each sequence is cut into 2*cp chunks and CP rank i
//   holds chunks i and 2cp-1-i (causal load balance, as Llama 3 and Megatron-Core
//   pair them), so seq_len % (2*cp) == 0; with sequence parallelism each TP rank then
//   holds 1/tp of the CP rank's tokens, so seq_len % (cp*tp) == 0 as well. CP ranks
//   hold the same weights and join the gradient reduction (and the ZeRO-1 shards) as
//   extra data-parallel replicas (rank_groups.hpp: the dp_cp groups). The global
//   batch does not grow with cp: CP ranks share their sequences.
// - Options that would have no effect are rejected so that every split has one
//   spelling: sequence_parallel needs tp > 1, zero1 needs dp > 1, ep > 1 needs an MoE
//   model.
// - The global batch, in sequences, is dp * microbatches * micro_batch_size.
#include <string>
#include <string_view>
#include <vector>

#include "models/model_config.hpp"

namespace ibt::models {

enum class ScheduleKind { afab, one_f_one_b, interleaved };
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

std::string_view to_string(ScheduleKind k);  // "afab", "1f1b", "interleaved"
std::string_view to_string(CpComm c);        // "all_gather", "ring"
CpComm parse_cp_comm(std::string_view name);  // throws UsageError naming the value
std::string_view to_string(Recompute r);     // "none", "selective", "full"
ScheduleKind parse_schedule(std::string_view name);  // throws UsageError naming the value
Recompute parse_recompute(std::string_view name);    // throws UsageError naming the value

struct ParallelSplit {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int ep = 1;                  // divides dp (EP drawn from DP)
  int vpp = 1;                 // model chunks (virtual stages) per pipeline rank
  int microbatches = 1;        // per DP replica per step (gradient accumulation steps)
  int micro_batch_size = 1;    // sequences per microbatch
  ScheduleKind schedule = ScheduleKind::one_f_one_b;
  bool sequence_parallel = false;
  bool zero1 = false;          // optimizer states sharded over dp (expert ones over expert_dp)
  Recompute recompute = Recompute::none;
  int cp = 1;                  // context-parallel degree (sequence split over cp ranks)
  CpComm cp_comm = CpComm::all_gather;

  int world_size() const { return dp * tp * pp * cp; }
  // The group a non-expert weight's gradient is reduced over: dp replicas times cp.
  int grad_replicas() const { return dp * cp; }
  int expert_dp() const { return dp / ep; }
  long long global_batch() const {
    return static_cast<long long>(dp) * microbatches * micro_batch_size;
  }
  int virtual_stages() const { return pp * vpp; }
  bool operator==(const ParallelSplit&) const = default;
};

// One line, e.g. "dp2 tp2 pp2 ep1 vpp1 m4 b1 1f1b sp zero1 recompute=none"; with
// context parallelism " cp2" (" cp2 ring" for the ring variant) follows pp (absent at
// cp 1, so older lines are unchanged).
std::string describe(const ParallelSplit& s);

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
  std::vector<ScheduleKind> schedules = {ScheduleKind::afab, ScheduleKind::one_f_one_b,
                                         ScheduleKind::interleaved};
  std::vector<int> interleave_chunks = {2};  // vpp values tried for interleaved
  std::vector<Recompute> recomputes = {Recompute::none};
  bool try_zero1 = false;             // also emit the zero1 variant when dp > 1
  bool try_sequence_parallel = true;  // also emit the SP variant when tp > 1
  bool only_sequence_parallel = false;  // when tp > 1, emit only the SP variant
  int max_tp = 0;  // 0 = no limit (e.g. the scale-up domain size for projection)
  int max_pp = 0;  // 0 = no limit; 1 = no pipeline parallelism
  int min_pp = 1;  // 2 = pipeline parallel splits only
  int max_ep = 0;  // 0 = no limit
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
std::vector<ParallelSplit> enumerate_splits(const ModelConfig& model, int world_size,
                                            const SplitSearch& search = {});

// Divisors of n in increasing order.
std::vector<int> divisors(int n);

}  // namespace ibt::models
