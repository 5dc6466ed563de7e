#pragma once
// Mixture-of-experts layer, split into the stages an expert-parallel executor puts
// all-to-alls between:
//   route    router logits [T, E]; top-k selection on logits + selection_bias; gate
//            weights = softmax over the k selected logits (the bias never enters them)
//   dispatch copy each token once per selected expert into a buffer grouped by expert
//            id (ascending), so the rows for the experts of EP rank j are contiguous:
//            an all-to-allv sends counts summed over rank j's experts
//   experts  each local expert's MLP on its contiguous rows
//   combine  y[t] += weight[t, j] * expert_out[row of (t, j)]
// plus shared experts (one MLP of shared_experts * expert_ffn_hidden applied to every
// token, DeepSeek-style) whose output is added to y.
//
// Balancing (ModelConfig::balance):
//  - aux_loss_free (DeepSeek-V3): after each step, update_bias() nudges each expert's
//    bias by bias_update_rate toward equal load: b_i += rate * sign(mean_load - load_i).
//    The bias only changes which experts are selected, never the gate weights.
//  - aux_loss: the classic balance loss, computed per sequence (as DeepSeek-V3's
//    sequence-wise variant) so it does not depend on how the batch is split:
//        L_aux = coeff * mean over sequences of E * sum_i f_i * P_i
//    with f_i the fraction of the sequence's k*S selections that chose expert i and
//    P_i the mean router probability (softmax over all E logits) of expert i.
//
// Tensor parallelism: experts (routed and shared) are TP-sharded like the dense MLP,
// so combine() + shared output are PARTIAL SUMS (the caller all-reduces y over TP).
// In backward, the gate-weight gradient comes out partial as well: the caller
// all-reduces it over TP before route_backward(). The router is replicated; its input
// gradient is complete on every TP rank, so route_backward() adds it only on TP shard
// 0 to keep dx a partial sum like the other contributions.
#include <cstdint>
#include <optional>
#include <vector>

#include "models/engine/layers/mlp.hpp"
#include "models/engine/tensor.hpp"
#include "models/plan/model_config.hpp"

namespace ibt::models {

struct Routing {
  int64_t tokens = 0;
  int top_k = 0;
  Tensor logits;                // [T, E]
  std::vector<int32_t> expert;  // [T*k] selected experts, slot t*k+j
  std::vector<float> weight;    // [T*k] gate weights (softmax over selected logits)
  std::vector<int64_t> load;    // [E] selections per expert
};

struct Dispatch {
  std::vector<int64_t> counts;  // [E] rows per expert in `rows`
  std::vector<int64_t> slot;    // [T*k] rows[r] is a copy of token slot[r] / k
  std::vector<int64_t> row_of;  // [T*k] inverse: the row holding slot s
  Tensor rows;                  // [T*k, hidden], grouped by expert id
};

struct MoeCache {
  Tensor x;
  Routing routing;
  Dispatch dispatch;
  std::vector<MlpCache> experts;  // one per local expert
  Tensor expert_out;              // [rows, hidden] outputs of the experts in dispatch order (partial over TP)
  MlpCache shared;
  // Expert parallelism only (ExpertExchange): rows per peer each way, and how the
  // received rows (grouped by source peer, then local expert) map onto rows grouped
  // by local expert: grouped[r] = received[from_received[r]].
  std::vector<int64_t> send_rows, recv_rows, local_counts, from_received;
};

class MoeLayer {
 public:
  MoeLayer(const ModelConfig& m, uint64_t seed, int layer, Shard tp, Shard ep);

  // --- stages (communication points between them) ---
  void route(const Tensor& x, Routing& r) const;
  static void dispatch(const Tensor& x, const Routing& r, int num_experts, Dispatch& d);
  // rows grouped by LOCAL expert with counts[i] rows for local expert i.
  void experts_forward(const Tensor& rows, const std::vector<int64_t>& counts, Tensor& out,
                       std::vector<MlpCache>& caches) const;
  void experts_backward(const std::vector<MlpCache>& caches, const std::vector<int64_t>& counts, const Tensor& d_out,
                        Tensor& d_rows);
  static void combine(const Routing& r, const Dispatch& d, const Tensor& expert_out, Tensor& y);
  // d_expert_out: the gradient of each dispatched row; d_weight: [T*k] (partial over TP).
  static void combine_backward(const Routing& r, const Dispatch& d, const Tensor& expert_out, const Tensor& dy,
                               Tensor& d_expert_out, std::vector<float>& d_weight);
  static void dispatch_backward(const Dispatch& d, int top_k, const Tensor& d_rows, Tensor& dx);
  // Router gradient from the (TP-summed) gate-weight gradient and, with aux_loss, the
  // balance loss of each whole sequence of `seq` tokens scaled by aux_weight_per_sequence.
  // dx is accumulated into (shard 0 only, see above).
  void route_backward(const Tensor& x, const Routing& r, const std::vector<float>& d_weight, int seq,
                      double aux_weight_per_sequence, Tensor& dx);

  // --- whole layer with EP = 1 (the serial reference; TP partial sums as above) ---
  void forward(const Tensor& x, int seq, Tensor& y, MoeCache& cache) const;
  // aux_weight_per_sequence: aux_loss_coeff / sequences in the global batch (0 if unused).
  void backward(MoeCache& cache, int seq, const Tensor& dy, double aux_weight_per_sequence, Tensor& dx);

  // Sum over the sequences of E * sum_i f_i * P_i (multiply by coeff / global sequences).
  double balance_loss_sum(const Routing& r, int seq) const;
  // Aux-loss-free balancing: one bias step from the load summed over the whole step
  // (all microbatches and all data-parallel ranks).
  void update_bias(const std::vector<int64_t>& step_load);

  std::vector<Param*> params();
  int num_experts() const { return num_experts_; }
  int first_local_expert() const { return first_local_; }
  int local_experts() const { return static_cast<int>(experts_.size()); }
  bool uses_aux_loss() const { return balance_ == RoutingBalance::aux_loss; }

  Param router;                       // [E, hidden], replicated over TP and EP
  std::vector<float> selection_bias;  // [E], not trained by gradients
  std::vector<Mlp> experts_;          // local experts
  std::optional<Mlp> shared;

 private:
  int64_t hidden_;
  int num_experts_, top_k_, first_local_;
  Shard tp_;
  RoutingBalance balance_;
  double bias_update_rate_;
};

}  // namespace ibt::models
