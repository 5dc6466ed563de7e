// The activation accounting (models/plan/accounting.hpp) against the tensors the CPU engine
// actually keeps for its backward pass: one block's forward on tiny models, every float
// the block's cache holds, counted. The engine is fp32 with unfused attention (it keeps
// the softmax probabilities), which is fp32_adam()'s Precision.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine_test_util.hpp"
#include "models/engine/layers/block.hpp"
#include "models/plan/accounting.hpp"
#include "models/plan/model_file.hpp"

namespace ibt::models {
namespace {

double floats(const Tensor& t) { return static_cast<double>(t.numel()); }
double floats(const NormCache& c) { return floats(c.x) + static_cast<double>(c.mean.size() + c.rstd.size()); }
double floats(const MlpCache& c) { return floats(c.x) + floats(c.gate) + floats(c.up) + floats(c.act); }

// Every float a block's cache holds after one forward, in bytes.
// With tp > 1, shard 0 of the block (heads and ffn columns split, no sequence
// parallelism: the identity reducer stands in for the TP peers, sizes are unaffected).
// Context parallelism's collectives for a size count in one process: the gather stacks
// this rank's rows cp times, as cp peers would send theirs (same shapes, other values);
// the reduce-scatter keeps the first block. Only sizes are measured here; the values
// are checked under mpiexec (engine_conformance_cp*).
// A ring pass likewise hands back the rank's own block as the previous peer's.
class ReplicatingContext final : public ContextExchange {
 public:
  ReplicatingContext(int n, bool ring) : n_(n), ring_(ring) {}
  int size() const override { return n_; }
  int rank() const override { return 0; }
  void all_gather_rows(const Tensor& local, Tensor& full) override {
    full.reset({local.rows() * n_, local.row_size()});
    for (int j = 0; j < n_; ++j) std::copy(local.data.begin(), local.data.end(), full.data.begin() + j * local.numel());
  }
  void reduce_scatter_rows(const Tensor& full, Tensor& local) override {
    local.reset({full.rows() / n_, full.row_size()});
    std::copy_n(full.data.begin(), local.numel(), local.data.begin());
  }
  bool ring() const override { return ring_; }
  int start_ring(const float* send, float* recv, size_t n) override {
    std::copy_n(send, n, recv);
    return 0;
  }
  void finish_ring(int) override {}

 private:
  int n_;
  bool ring_;
};

double cached_bytes(const ModelConfig& m, int layer, int batch, int tp_shards = 1, int cp = 1, bool ring = false) {
  TransformerBlock block(m, 7, layer, Shard{0, tp_shards}, Shard{0, 1});
  const int seq = m.seq_len / cp;  // this CP rank's tokens of each sequence
  const Tensor x = test::random_tensor({static_cast<int64_t>(batch) * seq, m.hidden}, 11);
  Tensor y;
  BlockCache c;
  IdentityTp tp;
  ReplicatingContext context(cp, ring);
  block.forward(x, batch, seq, y, c, tp, nullptr, cp > 1 ? &context : nullptr);
  double n = floats(c.attn_norm) + floats(c.ffn_norm);
  const AttentionCache& a = c.attention;
  n += floats(a.x) + floats(a.q) + floats(a.k) + floats(a.v) + floats(a.probs) + floats(a.context);
  n += floats(a.k_full) + floats(a.v_full) + floats(a.lse);
  n += floats(c.mlp);
  const MoeCache& e = c.moe;
  n += floats(e.x) + floats(e.routing.logits) + static_cast<double>(e.routing.weight.size()) + floats(e.dispatch.rows) +
       floats(e.expert_out) + floats(e.shared);
  for (const MlpCache& ex : e.experts) n += floats(ex);
  return 4.0 * n;
}

// The engine's RMSNorm also fills a per-row mean (zeros, kept for the shared LayerNorm
// code path) that an RMSNorm does not need: 2 floats per token the accounting leaves out.
constexpr double kRmsNormZeroMeans = 2;

TEST(EngineActivationMemory, DenseBlockKeepsWhatTheAccountingCounts) {
  const ModelConfig m = load_model("tiny-dense");
  ParallelSplit s{1, 1, 1, 1, 1, 1, 2, ScheduleKind::one_f_one_b};
  const double tokens = 2.0 * m.seq_len;
  EXPECT_EQ(cached_bytes(m, 0, 2), activation_bytes_per_layer(m, s, fp32_adam(), 0) + tokens * 4.0 * kRmsNormZeroMeans);
  s.tp = 2;  // Q, K, V, context, probabilities and SwiGLU halve; norm rows stay whole
  EXPECT_EQ(cached_bytes(m, 0, 2, 2),
            activation_bytes_per_layer(m, s, fp32_adam(), 0) + tokens * 4.0 * kRmsNormZeroMeans);
}

// In an MoE layer the engine also keeps two copies the accounting counts once: the
// shared experts' input (the same normed rows as moe.x, counted with the norms) and each
// routed expert's input (the same rows as dispatch.rows): (1 + top_k)*h floats per token.
TEST(EngineActivationMemory, MoeBlockKeepsTheAccountingPlusItsCopies) {
  const ModelConfig m = load_model("tiny-moe");
  ParallelSplit s{1, 1, 1, 1, 1, 1, 2, ScheduleKind::one_f_one_b};
  const double tokens = 2.0 * m.seq_len;
  EXPECT_EQ(cached_bytes(m, 0, 2), activation_bytes_per_layer(m, s, fp32_adam(), 0) + tokens * 4.0 * kRmsNormZeroMeans);
  const double copies = (1.0 + m.top_k) * m.hidden;
  EXPECT_EQ(cached_bytes(m, 1, 2),
            activation_bytes_per_layer(m, s, fp32_adam(), 1) + tokens * 4.0 * (kRmsNormZeroMeans + copies));
}

// An explicit head_dim (heads x head_dim != hidden): Q, K, V and the context follow it.
TEST(EngineActivationMemory, ExplicitHeadDimBlockKeepsWhatTheAccountingCounts) {
  ModelConfig m = load_model("tiny-dense");
  m.explicit_head_dim = 24;
  ParallelSplit s{1, 2, 1, 1, 1, 1, 2, ScheduleKind::one_f_one_b};
  const double tokens = 2.0 * m.seq_len;
  EXPECT_EQ(cached_bytes(m, 0, 2, 2),
            activation_bytes_per_layer(m, s, fp32_adam(), 0) + tokens * 4.0 * kRmsNormZeroMeans);
}

// Replicated KV heads (tp 4 > 2 KV heads; one KV head at tp 2): each shard keeps one
// whole KV head's K and V, as the accounting counts.
TEST(EngineActivationMemory, ReplicatedKvHeadsBlockKeepsWhatTheAccountingCounts) {
  ModelConfig m = load_model("tiny-dense");
  for (int kv : {2, 1})
    for (int tp : {2, 4}) {
      m.kv_heads = kv;
      ParallelSplit s{1, tp, 1, 1, 1, 1, 2, ScheduleKind::one_f_one_b};
      const double tokens = 2.0 * m.seq_len;
      EXPECT_EQ(cached_bytes(m, 0, 2, tp),
                activation_bytes_per_layer(m, s, fp32_adam(), 0) + tokens * 4.0 * kRmsNormZeroMeans)
          << "kv_heads " << kv << " tp " << tp;
    }
}

// A parallel block keeps one norm's cache; its attention and MLP each keep a copy of
// the same normed input, which the accounting counts once: h floats per token more.
TEST(EngineActivationMemory, ParallelBlockKeepsTheAccountingPlusTheSharedInputCopy) {
  ModelConfig m = load_model("tiny-dense");
  m.parallel_block = true;
  for (int tp : {1, 2}) {
    ParallelSplit s{1, tp, 1, 1, 1, 1, 2, ScheduleKind::one_f_one_b};
    const double tokens = 2.0 * m.seq_len;
    EXPECT_EQ(cached_bytes(m, 0, 2, tp),
              activation_bytes_per_layer(m, s, fp32_adam(), 0) + tokens * 4.0 * (kRmsNormZeroMeans / 2 + m.hidden))
        << "tp " << tp;
  }
}

// Context parallelism (all_gather variant): 1/cp of the tokens, the probabilities of
// the local queries against the whole sequence, and the gathered K/V of the sequence.
TEST(EngineActivationMemory, ContextParallelBlockKeepsWhatTheAccountingCounts) {
  for (const char* name : {"tiny-dense", "tiny-moe"}) {
    const ModelConfig m = load_model(name);
    for (int cp : {2, 4}) {
      for (int tp : {1, 2}) {
        ParallelSplit s{1, tp, 1, 1, 1, 1, 2, ScheduleKind::one_f_one_b};
        s.cp = cp;
        const double tokens = 2.0 * m.seq_len / cp;
        const double copies = m.is_moe() ? (1.0 + m.top_k) * m.hidden : 0.0;  // layer 1 of tiny-moe is MoE
        EXPECT_EQ(cached_bytes(m, 1, 2, tp, cp),
                  activation_bytes_per_layer(m, s, fp32_adam(), 1) + tokens * 4.0 * (kRmsNormZeroMeans + copies))
            << name << " cp" << cp << " tp" << tp;
      }
    }
  }
}

// Ring context parallelism: 1/cp of the tokens, only the local K/V, and one
// log-sum-exp per query and head instead of the probabilities (the K/V blocks in
// flight are transient: cp_transient_bytes()).
TEST(EngineActivationMemory, RingContextParallelBlockKeepsWhatTheAccountingCounts) {
  for (const char* name : {"tiny-dense", "tiny-moe"}) {
    const ModelConfig m = load_model(name);
    for (int cp : {2, 4}) {
      for (int tp : {1, 2}) {
        ParallelSplit s{1, tp, 1, 1, 1, 1, 2, ScheduleKind::one_f_one_b};
        s.cp = cp;
        s.cp_comm = CpComm::ring;
        const double tokens = 2.0 * m.seq_len / cp;
        const double copies = m.is_moe() ? (1.0 + m.top_k) * m.hidden : 0.0;
        EXPECT_EQ(cached_bytes(m, 1, 2, tp, cp, true),
                  activation_bytes_per_layer(m, s, fp32_adam(), 1) + tokens * 4.0 * (kRmsNormZeroMeans + copies))
            << name << " cp" << cp << " tp" << tp;
        // Less than the all-gather variant, which keeps the probabilities and the
        // gathered K/V.
        s.cp_comm = CpComm::all_gather;
        EXPECT_LT(cached_bytes(m, 1, 2, tp, cp, true), cached_bytes(m, 1, 2, tp, cp, false));
      }
    }
  }
}

}  // namespace
}  // namespace ibt::models
