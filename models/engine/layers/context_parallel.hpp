#pragma once
// Context parallelism (CP) in the engine: each sequence of S tokens is cut into 2*cp
// chunks of S/(2cp) and CP rank i holds chunks i and 2cp-1-i, in that order, as its
// S/cp local tokens (the pairing Llama 3 and Megatron-Core use: under a causal mask an
// early chunk has little work and a late one much, so every rank gets the same).
// Everything but attention is token-wise and runs unchanged on the local tokens.
//
// Attention is Llama 3's all-gather variant: the rank's K and V rows are all-gathered
// over the CP group and put back into sequence order, the local queries attend to the
// whole sequence under the causal mask of their global positions, and in the backward
// the full-sequence dK and dV are reduce-scattered back to the ranks owning the rows.
// The gathered K/V are kept for the backward (GQA makes them kv_heads/heads of Q).
//
// The ring variant (cp_comm ring; Liu et al. 2023's ring attention, Megatron-Core's
// p2p CP) never holds the whole sequence's K/V. In cp steps, step s computes the local
// queries against the K/V block of CP rank (rank - s) mod cp, under the causal mask of
// both blocks' global positions, while that block is passed on to the next rank and
// the following one received (MPI point-to-point, started before the step's compute
// and waited for after it). The partial outputs are merged with the online softmax
// (running row max and sum, the accumulated output rescaled when the max grows), and
// one log-sum-exp per query and head is kept for the backward, which recomputes each
// block's probabilities from it (blockwise, as FlashAttention does). In the backward
// the K/V blocks travel the ring again and each block's dK/dV travel with them one
// step behind: a rank adds its contribution to the partial sum that the previous rank
// sends, and the last pass returns every block's complete dK/dV to its owner. The
// dK/dV of the block in hand are computed into a fresh buffer while the previous
// step's partial sums are in flight, so both passes overlap the compute (where MPI
// progresses them during it).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/engine/data.hpp"
#include "models/engine/tensor.hpp"

namespace ibt::models {

// The CP group's collectives, seen from one rank. The layers never talk to MPI
// themselves (as with TpReducer and ExpertExchange); the cpu executor implements it.
class ContextExchange {
 public:
  virtual ~ContextExchange() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;
  // full = the members' `local` tensors stacked in CP-rank order.
  virtual void all_gather_rows(const Tensor& local, Tensor& full) = 0;
  // local = this rank's block (rank order) of the sum of every member's `full`.
  virtual void reduce_scatter_rows(const Tensor& full, Tensor& local) = 0;
  // Whether attention uses the ring variant (cp_ring_attention_*) instead of the
  // all-gather one.
  virtual bool ring() const = 0;
  // Starts one ring pass: n floats of `send` to the next CP rank ((rank + 1) mod size)
  // and n floats from the previous one into `recv`. Neither buffer may be touched until
  // finish_ring(id). Several passes may be in flight; every member starts the same
  // passes in the same order.
  virtual int start_ring(const float* send, float* recv, size_t n) = 0;
  virtual void finish_ring(int id) = 0;
};

// Global position (0..seq-1) of local row r (0..seq/cp-1) of CP rank `rank`.
int64_t cp_position(int64_t r, int64_t seq, int cp, int rank);
// The CP rank's tokens of every sequence of `b` (chunks rank and 2cp-1-rank), with
// seq_len = b.seq_len / cp. Needs b.seq_len % (2*cp) == 0 (validate() ensures it).
Batch cp_local_batch(const Batch& b, int cp, int rank);

// The attention core under CP for one microbatch of `batch` sequences: q [batch*sl,
// heads*d] local rows, k_full/v_full [batch*S, kv_heads*d] in sequence order, where
// sl = S/cp. Writes probs [batch, heads, sl, S] and context [batch*sl, heads*d].
void cp_attention_forward(const Tensor& q, const Tensor& k_full, const Tensor& v_full, int batch, int seq,
                          int64_t heads, int64_t kv_heads, int64_t head_dim, int cp, int rank, Tensor& probs,
                          Tensor& context);
// Backward of cp_attention_forward: dq local (overwritten), dk_full/dv_full for the
// whole sequence (overwritten; this rank's queries' share only).
void cp_attention_backward(const Tensor& q, const Tensor& k_full, const Tensor& v_full, const Tensor& probs,
                           const Tensor& d_context, int batch, int seq, int64_t heads, int64_t kv_heads,
                           int64_t head_dim, Tensor& dq, Tensor& dk_full, Tensor& dv_full);

// Ring attention (cp.ring()): q [batch*sl, heads*d], k, v [batch*sl, kv_heads*d] this
// rank's local rows (sl = seq/cp, seq the whole sequence). Writes context [batch*sl,
// heads*d] and lse [batch, heads, sl], the log-sum-exp of each query's scaled scores.
void cp_ring_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, int batch, int seq, int64_t heads,
                               int64_t kv_heads, int64_t head_dim, ContextExchange& cp, Tensor& lse, Tensor& context);
// Its backward: dq, dk, dv for the local rows (overwritten); dk and dv are the sums
// over every CP rank's queries.
void cp_ring_attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& context,
                                const Tensor& lse, const Tensor& d_context, int batch, int seq, int64_t heads,
                                int64_t kv_heads, int64_t head_dim, ContextExchange& cp, Tensor& dq, Tensor& dk,
                                Tensor& dv);

// K or V rows of every CP rank, gathered and put in sequence order [batch*S, width].
Tensor cp_gather_sequence(const Tensor& local, int batch, int seq, ContextExchange& cp);
// The reverse: sums the full-sequence gradient over the CP group and returns this
// rank's local rows [batch*S/cp, width].
Tensor cp_scatter_sequence(const Tensor& full, int batch, int seq, ContextExchange& cp);

}  // namespace ibt::models
