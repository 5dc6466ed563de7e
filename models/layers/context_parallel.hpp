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
// The ring variant (K/V blocks passed around the CP ring) is priced by the sim
// (models/step_program.hpp) but not implemented here.
#include <cstdint>
#include <vector>

#include "models/data.hpp"
#include "models/tensor.hpp"

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

// K or V rows of every CP rank, gathered and put in sequence order [batch*S, width].
Tensor cp_gather_sequence(const Tensor& local, int batch, int seq, ContextExchange& cp);
// The reverse: sums the full-sequence gradient over the CP group and returns this
// rank's local rows [batch*S/cp, width].
Tensor cp_scatter_sequence(const Tensor& full, int batch, int seq, ContextExchange& cp);

}  // namespace ibt::models
