#pragma once
// The step program: everything ONE rank does in one training step, as a flat list of
// ops in issue order (design.md, "One schedule, several executors"). The cpu executor
// runs it with real math and MPI; the sim executor prices it. It is plain data: no
// function pointers, no per-op allocation, so a 1T-parameter MoE stage with ~100
// microbatches is generated in milliseconds.
//
// Structure. The program expands each PipeAction of the rank's pipeline stage
// (schedule.hpp) into ops; op.action is the index of that action in
// program.actions, so an executor can walk actions and ops together.
//   forward(mb, chunk): [embedding (+ TP reduce) on virtual stage 0]
//     per layer of the chunk:
//       attn_norm, [sp_all_gather], qkv_gemm (mla: q_down_gemm, q_up_gemm,
//       kv_down_gemm, kv_up_gemm), attention_core, out_proj_gemm,
//       tp_all_reduce | sp_reduce_scatter,
//       mlp_norm, [sp_all_gather],
//       dense:  mlp_up_gemm, mlp_down_gemm
//       MoE:    router_gemm, moe_permute, [ep_counts, ep_dispatch, moe_permute],
//               expert_up_gemm, expert_down_gemm, [moe_permute, ep_combine],
//               moe_unpermute, [shared_up_gemm, shared_down_gemm]
//               (bracketed with ep > 1; moe_permute inside them = the EP regroup)
//       tp_all_reduce | sp_reduce_scatter
//     [final_norm, lm_head_gemm, loss (+ tp_all_reduce of the softmax statistics)
//      on the last virtual stage]
//     A parallel block (ModelConfig::parallel_block) has one norm and one TP pair per
//     layer: attn_norm, [sp_all_gather], the attention ops, the dense/MoE ops,
//     tp_all_reduce | sp_reduce_scatter (of the summed branch outputs); its backward
//     is [sp_all_gather], the MLP branch, the attention branch, tp_all_reduce |
//     sp_reduce_scatter, attn_norm (block.cpp's order).
//     With tp > kv_heads the qkv_gemm computes the rank's one replicated KV head (its
//     FLOPs are then more than 1/tp of the model's: hardware, not model, FLOPs).
//   backward(mb, chunk): the same compute ops in reverse order with phase backward
//     (GEMMs and attention at twice the forward FLOPs: input and weight gradients;
//     norms, embedding and loss appear once each). TP collectives sit at the
//     conjugate positions (Megatron's f/g operators): per block, without SP,
//       [block GEMMs backward], tp_all_reduce (of the input gradient), norm
//     and with SP
//       sp_all_gather (of the output gradient), [block GEMMs backward],
//       sp_reduce_scatter (of the input gradient), norm.
//     The embedding backward is preceded by an sp_all_gather with SP; the head
//     backward (loss, lm_head_gemm) is followed by the input-gradient tp_all_reduce
//     (SP: sp_reduce_scatter) and the final norm. MoE backward, in the cpu engine's
//     order: moe_unpermute, tp_all_reduce of the gate-weight gradient (tokens * top_k
//     fp32, tp > 1), [ep_combine, moe_permute], expert_down_gemm, expert_up_gemm,
//     [moe_permute, ep_dispatch], [shared_down_gemm, shared_up_gemm], moe_permute,
//     router_gemm (no counts exchange: the forward's counts are reused). With recompute=full each layer's forward ops
//     are re-run (phase recompute, with their collectives) just before its backward; with selective, the attention core
//     is re-run before its backward.
//   Context parallelism (cp > 1): every op above works on the rank's b*S/cp tokens
//     (chunks i and 2cp-1-i of each sequence) and the attention core on its queries
//     against the whole sequence (1/cp of the FLOPs). With cp_comm all_gather,
//     cp_kv_all_gather follows the QKV projections (the core waits for it) and
//     cp_kv_reduce_scatter follows the core's backward (the projections' backward
//     waits for it): neither is hidden. With ring, the core is cp ops of 1/cp of its
//     FLOPs each; K/V pass j (cp_kv_pass, j < cp-1) starts with part j and part j+1
//     waits for it, so a pass is hidden when a part takes longer. In the backward
//     the K/V passes run the same way and each block's dK/dV follow it one step
//     later (cp_dkv_pass j waits for part j-1, part j+1 waits for it); the last
//     dK/dV pass returns the blocks home after the last part, exposed.
//   With a split backward (zb-h1, splits_backward()): backward(mb, chunk) is B, the
//     same ops with every GEMM at its input-gradient half (the forward's FLOPs), and
//     weight(mb, chunk) is W, the weight-gradient halves of the same GEMMs in the same
//     order and nothing else (no collectives: weight gradients are reduced after the
//     schedule; norm and embedding gradients, elementwise, stay in B). The chunk's
//     overlapped gradient reduction follows its last W.
//   A paired F&B (dualpipev, PipeAction::overlapped): the forward's and the backward's
//     ops are issued interleaved, the issue order switching chunk after every op not on
//     the compute stream (each chunk's own order, and every wait, kept): a sim then
//     prices one chunk's all-to-alls behind the other's compute (sim_executor.hpp).
//   exchange: one pp_exchange op (the PipeAction holds the peers and messages).
//   After the schedule (or, with overlap_grad_reduce, right after the layer's last
//   backward): per layer ("bucket"), gradient ops on the grad_comm stream:
//     - tp all-reduce of TP-replicated weights whose gradients are partial sums over
//       TP: the MLA down projections + latent norms (their output gradients come from
//       TP-split consumers) and, with SP, the norms (each TP rank sees only its
//       sequence shard); not the MoE router: its gate gradient is TP-summed in the
//       backward, so its weight gradient is complete;
//     - tp_kv all-reduce of the replicated KV heads' Wk, Wv (tp > kv_heads: each
//       copy's gradient is only its query heads' share; rank_groups.hpp);
//     - dp all-reduce of the non-expert weights, expert_dp all-reduce of the expert
//       weights (zero >= 1: reduce-scatter instead, over dp_shard with a shard group,
//       and then, with a shard group, a dp_replica all-reduce of the 1/g shard); with
//       cp > 1 over dp_cp and expert_dp_cp (CP ranks are extra replicas of the weights);
//   then optimizer (compute, on the rank's shard with zero >= 1), then with aux-loss-free
//   balancing one load_all_reduce per MoE layer (dp, E fp64 counts), then with zero 1
//   or 2 one param_all_gather per bucket and group (ZeRO-1 and ZeRO-2 move the same
//   bytes; they differ in the gradient memory, accounting.hpp).
// ZeRO-3 / FSDP (parameters sharded). "Units" are the embedding, each layer and the
// head. Before each unit's forward AND again before its backward (parameters are
// freed after use) a param_all_gather over the shard group (dp, or dp_shard; expert
// weights over expert_dp) on the param_comm stream; the unit's first compute op waits
// for it. The gather of unit n waits for the end of unit n-2 (units counted in issue
// order over the whole step): so it runs while unit n-1 computes (FSDP's prefetch
// of the next unit, at most two units gathered at once), and the very first unit of
// the step has nothing to hide behind: its gather is exposed. ZeRO-2 and ZeRO-3: after
// each unit's backward, for every microbatch (FSDP reduces each backward, no no_sync;
// DeepSpeed ZeRO-2 likewise keeps no full gradient across micro-steps), its gradient
// reduce-scatter on grad_comm; with a shard group, one dp_replica all-reduce of each
// unit's shard, after the unit's last backward (overlap_grad_reduce) or after the
// schedule; ZeRO-3 has no gather after the optimizer. The sim prices the param_comm
// and grad_comm streams as independent: it does not model their sharing one link.
// MoE layers under TP and EP (what the cpu executor must implement to match): the
// MoE input is the full sequence on every TP rank (after the SP all-gather with SP);
// the router runs replicated on it; each TP rank dispatches its copy of the tokens to
// the EP peers with the same tp coordinate (ep_dispatch, routed = tokens * top_k
// rows of hidden); the experts' weights are TP-split like a dense MLP (up
// column-split, down row-split), so expert outputs are partial sums over TP; the
// combine all-to-all returns them, they are weighted by the gate and added to the
// shared experts' (also partial) output, and the block's TP all-reduce (or SP
// reduce-scatter) completes the sums. FLOPs of expert GEMMs assume perfect balance
// (every EP rank processes tokens * top_k rows).
// Comm ops on a group of size 1 are omitted (tp == 1 has no TP ops, ep == 1 no
// all-to-all, dp == 1 no gradient reduction).
//
// Streams and waits. Ops on one stream run in program order. An op may also wait for
// up to two ops on other streams (waits[], indices into program.ops, -1 = none). A
// collective on the comm stream waits for the compute op that produced its input; the
// compute op that consumes its output waits for it. The first op of a forward
// (backward) waits for the pp_exchange that received its activation (gradient); a
// pp_exchange that sends waits for the op that produced the data. Gradient
// reductions run on their own grad_comm stream so that they can overlap compute; the
// optimizer waits for the last of them. pp_exchange ops are on the p2p stream (a
// waiting send does not delay the TP collectives behind it); a blocking executor
// simply runs every op in list order, which is always valid.
//
// FLOPs and bytes are per rank (this rank's share). flops are floating-point ops the
// rank executes (a multiply-add = 2). For compute ops, bytes = the operands read and
// written once (a memory-bound op's cost; GEMM: A, B and C; a grouped expert GEMM
// reads every local expert's B). For comm ops, bytes =
// the buffer size as nccl-tests counts it (all-reduce: the buffer; all-gather: the
// gathered output; reduce-scatter: the input; all-to-all: what one rank sends in total;
// pp_exchange: the larger of the two halves). Elements are activation_bytes wide
// except gradient reductions (gradient_bytes) and param all-gathers (param_bytes).
//
// Model FLOPs identity (tested): summing flops over ops with phase forward/backward
// of every stage's program, multiplying the ops with tp_sharded == true by tp, gives
// accounting's model_flops_per_step() / (dp * cp) (one model replica's share).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/plan/model_config.hpp"
#include "models/plan/parallel_split.hpp"
#include "models/plan/rank_groups.hpp"
#include "models/plan/schedule.hpp"

namespace ibt::models {

enum class OpKind : std::uint8_t {
  // compute
  embedding,  // token lookup (vocab-parallel: this rank's vocab slice)
  attn_norm,
  qkv_gemm,        // standard attention: fused Q, K, V projection (column-parallel)
  q_down_gemm,     // MLA: hidden -> q_lora_rank (replicated over TP)
  q_up_gemm,       // MLA: q_lora_rank -> heads*qk_head_dim (column-parallel)
  kv_down_gemm,    // MLA: hidden -> kv_lora_rank + qk_rope_head_dim (replicated)
  kv_up_gemm,      // MLA: kv_lora_rank -> heads*(qk_nope + v) (column-parallel)
  attention_core,  // softmax(QK^T)V, causal, heads/tp heads
  out_proj_gemm,   // row-parallel
  mlp_norm,
  mlp_up_gemm,     // dense MLP up (SwiGLU: gate and up fused), column-parallel
  mlp_down_gemm,   // row-parallel
  router_gemm,     // hidden -> num_experts scores + top-k (replicated over TP)
  expert_up_gemm,  // this rank's experts on the tokens routed to them
  expert_down_gemm,
  shared_up_gemm,  // shared experts (a dense MLP of shared_experts*expert_ffn)
  shared_down_gemm,
  moe_permute,    // token rows to and from expert order (dispatch, EP regroup; memory-bound)
  moe_unpermute,  // gate-weighted combine of expert outputs into tokens (memory-bound)
  final_norm,
  lm_head_gemm,  // vocab-parallel logits
  loss,          // cross-entropy (vocab-parallel)
  optimizer,     // AdamW on this rank's parameters (its shard with zero1)
  // communication
  tp_all_reduce,
  sp_all_gather,
  sp_reduce_scatter,
  ep_counts,            // all-to-all of the per-expert row counts (fp64), before ep_dispatch
  ep_dispatch,          // all-to-all, tokens to their experts' ranks
  ep_combine,           // all-to-all, expert outputs back
  pp_exchange,          // blocking combined send/recv between pipeline stages
  grad_all_reduce,      // dp (non-expert) or expert_dp (expert) gradient all-reduce
  grad_reduce_scatter,  // zero >= 1
  param_all_gather,     // zero 1/2: after the optimizer; zero 3: before each unit's use
  load_all_reduce,      // aux-loss-free MoE balancing: per-expert loads summed over dp
  // context parallelism (group cp)
  cp_kv_all_gather,      // all_gather variant: this layer's K and V of the whole sequence
  cp_kv_reduce_scatter,  // all_gather variant, backward: dK, dV back to their owners
  cp_kv_pass,            // ring variant: one ring step of a K/V block (send next, recv prev)
  cp_dkv_pass,           // ring variant, backward: one ring step of a dK/dV block
};
std::string_view to_string(OpKind k);
bool is_comm(OpKind k);

enum class Phase : std::uint8_t { forward, backward, recompute, optimizer };
std::string_view to_string(Phase p);
// p2p: pipeline exchanges have a stream of their own (Megatron posts them as batched
// isend/irecv, overlapped with compute by default for the interleaved schedule,
// overlap_p2p_comm), so a send waiting for its peer never holds up a TP or EP
// collective of the next action.
// param_comm: ZeRO-3's parameter all-gathers (FSDP's unshard stream).
enum class Stream : std::uint8_t { compute, comm, grad_comm, p2p, param_comm };
inline constexpr int kNumStreams = 5;
std::string_view to_string(Stream s);

// Special layer indices for ops outside the transformer layers.
inline constexpr int kEmbeddingLayer = -1;
inline constexpr int kNoLayer = -2;  // exchanges, optimizer
// The head (final norm, LM head, loss) uses layer == model.layers.

// Which products a GEMM op runs, for pricing by shape (a bit set): the forward
// product C = A B, the input gradient dA = dC B^T and the weight gradient dB = A^T dC.
enum GemmPass : std::uint8_t { gemm_product = 1, gemm_input_grad = 2, gemm_weight_grad = 4 };

// The shape of a GEMM op: `groups` products of [rows x k] x [k x n] (groups > 1: a
// grouped GEMM, one product per local expert, rows = the tokens each expert gets under
// balanced routing), and which passes the op runs. Empty (passes == 0) on other ops.
// The forward product's output is rows x n, the input gradient's rows x k, the weight
// gradient's k x n: a pricer that knows the device's tiles prices each by its own.
struct GemmShape {
  float rows = 0, k = 0, n = 0;
  std::uint16_t groups = 1;
  std::uint8_t passes = 0;
  bool operator==(const GemmShape&) const = default;
};

struct Op {
  OpKind kind = OpKind::attn_norm;
  Phase phase = Phase::forward;
  Group group = Group::none;  // communicator of a comm op
  Stream stream = Stream::compute;
  bool tp_sharded = true;  // false: replicated on every TP rank (norms, router, MLA down)
  bool expert = false;     // grad ops: expert weights (expert_dp group)
  int layer = kNoLayer;
  int microbatch = -1;  // -1 for per-step ops (grad reduction, optimizer)
  int chunk = -1;       // -1 for per-step ops
  // Index into StepProgram::actions of the action the op belongs to; overlapped grad
  // reductions carry the backward action they are issued in; -1 after the schedule.
  int action = -1;
  double flops = 0;
  double bytes = 0;
  GemmShape gemm;  // GEMM ops only
  std::array<int, 2> waits{-1, -1};
};

struct StepProgramOptions {
  int activation_bytes = 4;               // 4: fp32 CPU engine; 2: bf16 on GPUs
  int gradient_bytes = 4;                 // element size of gradient reductions
  int param_bytes = 4;                    // element size of the zero1 parameter all-gather
  bool overlap_grad_reduce = false;       // reduce each layer's grads after its last backward
  double optimizer_flops_per_param = 12;  // AdamW, roughly; not model FLOPs
};

// Element sizes of the two engines: the CPU engine runs everything in fp32; GPUs in
// bf16 mixed precision (bf16 activations, gradients reduced in bf16 and parameters
// gathered in bf16, as design.md's 2 + 2 + 12 bytes per parameter assumes).
inline StepProgramOptions cpu_fp32_options() { return {4, 4, 4, false, 12}; }
inline StepProgramOptions gpu_bf16_options() { return {2, 2, 2, true, 12}; }

struct StepProgram {
  int rank = 0;
  RankCoord coord;
  int stage = 0;                    // == coord.pp
  std::vector<PipeAction> actions;  // this stage's schedule
  std::vector<Op> ops;
  // Sums, by phase, of this rank's flops (index by static_cast<int>(Phase)).
  std::array<double, 4> flops_by_phase{};
};

// One line per op for traces and debugging, e.g.
// "#12 fwd mb0 c0 L1 qkv_gemm compute flops=1.2e+06 bytes=3.4e+04 waits=11".
std::string describe(const Op& op, int index);

// The program of `rank` for (model, split): validates the split first (UsageError).
StepProgram build_step_program(const ModelConfig& model, const ParallelSplit& split, int rank,
                               const StepProgramOptions& options = {});
// Same, with a schedule built once and shared across ranks (the sim calls this for one
// rank per stage).
StepProgram build_step_program(const ModelConfig& model, const ParallelSplit& split, const PipelineSchedule& schedule,
                               int rank, const StepProgramOptions& options = {});

// Fast path for pricing. Every forward (backward) action of a chunk expands to the
// same ops whatever its microbatch, so a sim can price each (stage, chunk, pass) once
// and walk the schedule with those costs:
// - build_chunk_ops: the ops one forward or backward action of `chunk` on `stage`
//   expands to in build_step_program (same kinds, flops, bytes, groups and order;
//   microbatch and action are -1; waits index this list; the wait on the received
//   activation/gradient is omitted; no gradient reduction even with
//   overlap_grad_reduce, except ZeRO-3's per-unit gathers and reduce-scatters, which
//   belong to every forward and backward);
// - build_gradient_ops: the gradient reduction and optimizer tail of the stage in
//   the non-overlapped order (waits index this list).
// Action templates for the sim's fast walk (topologies/sim/sim_fast.hpp). Like the above,
// but a wait that reaches outside the list is kept as a marker instead of dropped:
// - kWaitReceived: the pp_exchange that received the action's activation (gradient)
//   -- every op that waits for it in the full program, not only the first;
// - kWaitLastCompute: the last compute op issued before the list (the tail's
//   gradient reductions wait for the last backward);
// - kWaitLastGrad: the last grad_comm op issued before the list (the optimizer after
//   overlapped reductions).
// build_action_template: one forward, backward or W of `chunk` for any microbatch;
// reduce_grads (the pass that completes the gradients: backward, or W with a split
// backward) = the chunk's last such action with overlap_grad_reduce,
// the layers' gradient ops interleaved as build_step_program places them. producer is
// the op whose output the next send carries (-1 = none): a send waits for it when it
// is not on the comm stream.
// build_tail_template: what follows the schedule's last action; with
// overlap_grad_reduce chunk_order lists the chunks in the order of their last backward
// (the order their buckets were reduced in), otherwise it is unused.
// pipeline_message_bytes: the bytes of every pp_exchange of the split (op.bytes).
double pipeline_message_bytes(const ModelConfig& model, const ParallelSplit& split,
                              const StepProgramOptions& options = {});
inline constexpr int kWaitReceived = -2;
inline constexpr int kWaitLastCompute = -3;
inline constexpr int kWaitLastGrad = -4;
struct ActionTemplate {
  std::vector<Op> ops;
  int producer = -1;
};
ActionTemplate build_action_template(const ModelConfig& model, const ParallelSplit& split, int stage, int chunk,
                                     Pass pass, bool reduce_grads, const StepProgramOptions& options = {});
std::vector<Op> build_tail_template(const ModelConfig& model, const ParallelSplit& split, int stage,
                                    const std::vector<int>& chunk_order, const StepProgramOptions& options = {});

// build_action_template's chunk one part at a time, for summaries composed part by part
// (topologies/sim/chunk_parts.hpp): a chunk of a few dozen layers repeats the same two
// layers (dense, MoE) over and over, and a search meets thousands of such chunks.
// The parts, in the order a chunk runs them: forward the embedding (first virtual
// stage), its layers up, the head (last virtual stage); backward and W the head, the
// layers down, the embedding (W: none, its gradient is B's). The part's input, the
// previous part's output or the action's received message, is kWaitReceived: every op
// of the part that waits for it, as the chunk's would wait for the op before (or not,
// when on the same stream: it is as late through its stream). producer: the part's
// output (the next part's input; a send's data), kWaitReceived where the part adds
// nothing to the chain (its output is its input). Without the overlapped gradient
// reductions (reduce_grads false); ZeRO-2/3 splits, whose parts reach across layers,
// are refused (std::logic_error).
enum class ChunkPart { embedding, layer, head };
ActionTemplate build_part_template(const ModelConfig& model, const ParallelSplit& split, int stage, Pass pass,
                                   ChunkPart part, int layer, const StepProgramOptions& options = {});

std::vector<Op> build_chunk_ops(const ModelConfig& model, const ParallelSplit& split, int stage, int chunk, Pass pass,
                                const StepProgramOptions& options = {});
std::vector<Op> build_gradient_ops(const ModelConfig& model, const ParallelSplit& split, int stage,
                                   const StepProgramOptions& options = {});

}  // namespace ibt::models
