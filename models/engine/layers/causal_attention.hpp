#pragma once
// One head's causal attention over one sequence, computed in blocks of query rows so
// that the key blocks wholly after a query block (all masked) are never multiplied:
// query rows [i0, i1) meet keys [0, i1) only. At a sequence of 4 blocks that skips
// 3/8 of the score and P·V GEMMs, and the share grows towards 1/2 with the sequence.
//
// The results equal the masked full computation (scores for all s x s pairs, masked
// to zero probability above the diagonal) to fp32 rounding: the only difference is
// which zero products a GEMM adds. The softmax probabilities are written in full
// ([seq, seq], zeros above the diagonal), as the unblocked code wrote them.
#include <cstdint>

namespace ibt::models {

// Query rows per block: small enough to skip most of the masked triangle, large enough
// that each GEMM still runs near the sgemm peak (measured at head_dim 64, seq 256).
constexpr int64_t kCausalBlockRows = 64;

// probs[seq, seq] = causal softmax(scale * q k^T); context[seq, d] (leading dimension
// ldc) = probs · v. q, k, v: [seq, d] with leading dimensions ldq, ldk, ldv.
void causal_attention_head_forward(const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
                                   int64_t ldv, int64_t seq, int64_t d, float scale, float* probs, float* context,
                                   int64_t ldc, int64_t block = kCausalBlockRows);

// The backward of causal_attention_head_forward given its probs and d_context ([seq, d],
// leading dimension ldo): dq (overwritten, leading dimension ldq) and dk, dv (leading
// dimension ldkv; added to when accumulate_kv, else overwritten: a KV head serves
// several query heads). ds: scratch of seq * seq floats.
void causal_attention_head_backward(const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
                                    int64_t ldv, const float* probs, const float* d_context, int64_t ldo, int64_t seq,
                                    int64_t d, float scale, float* ds, float* dq, float* dk, float* dv, int64_t ldkv,
                                    bool accumulate_kv, int64_t block = kCausalBlockRows);

}  // namespace ibt::models
