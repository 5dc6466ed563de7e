#include "models/engine/layers/moe.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/errors.hpp"
#include "models/engine/blas.hpp"
#include "models/engine/init.hpp"

namespace ibt::models {

MoeLayer::MoeLayer(const ModelConfig& m, uint64_t seed, int layer, Shard tp, Shard ep)
    : hidden_(m.hidden),
      num_experts_(m.num_experts),
      top_k_(m.top_k),
      tp_(tp),
      balance_(m.balance),
      bias_update_rate_(m.bias_update_rate) {
  if (m.top_k < 1 || m.top_k > m.num_experts)
    throw UsageError("model " + m.name + ": top_k must be between 1 and num_experts");
  const std::string p = "layers." + std::to_string(layer) + ".";
  router = make_param(p + "router.weight",
                      init_normal(seed, p + "router.weight", {m.num_experts, m.hidden}, init_std(m)), true);
  selection_bias.assign(m.num_experts, 0.0f);
  const int local = static_cast<int>(ep.size_of(m.num_experts, "num_experts"));
  first_local_ = static_cast<int>(ep.begin_of(m.num_experts, "num_experts"));
  const MlpShape expert{m.hidden, m.expert_ffn_hidden, m.activation};
  for (int e = first_local_; e < first_local_ + local; ++e)
    experts_.emplace_back(expert, seed, p + "experts." + std::to_string(e) + ".", tp, init_std(m),
                          residual_init_std(m));
  if (m.shared_experts > 0)
    shared.emplace(MlpShape{m.hidden, static_cast<int64_t>(m.shared_experts) * m.expert_ffn_hidden, m.activation}, seed,
                   p + "shared_experts.", tp, init_std(m), residual_init_std(m));
}

std::vector<Param*> MoeLayer::params() {
  std::vector<Param*> out{&router};
  for (Mlp& e : experts_)
    for (Param* q : e.params()) out.push_back(q);
  if (shared)
    for (Param* q : shared->params()) out.push_back(q);
  return out;
}

void MoeLayer::route(const Tensor& x, Routing& r) const {
  const int64_t T = x.rows(), E = num_experts_, k = top_k_;
  r.tokens = T;
  r.top_k = top_k_;
  r.logits.reset({T, E});
  linear_forward(x.ptr(), router.value.ptr(), r.logits.ptr(), T, hidden_, E);
  r.expert.assign(T * k, 0);
  r.weight.assign(T * k, 0.0f);
  r.load.assign(E, 0);
  std::vector<int32_t> order(E);
  for (int64_t t = 0; t < T; ++t) {
    const float* z = r.logits.row(t);
    std::iota(order.begin(), order.end(), 0);
    // Highest biased score first; ties go to the lower expert id (deterministic).
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
      const float sa = z[a] + selection_bias[a], sb = z[b] + selection_bias[b];
      return sa != sb ? sa > sb : a < b;
    });
    float mx = z[order[0]];
    for (int64_t j = 1; j < k; ++j) mx = std::max(mx, z[order[j]]);
    float sum = 0;
    for (int64_t j = 0; j < k; ++j) {
      r.expert[t * k + j] = order[j];
      sum += (r.weight[t * k + j] = std::exp(z[order[j]] - mx));
      ++r.load[order[j]];
    }
    for (int64_t j = 0; j < k; ++j) r.weight[t * k + j] /= sum;
  }
}

void MoeLayer::dispatch(const Tensor& x, const Routing& r, int num_experts, Dispatch& d) {
  const int64_t slots = r.tokens * r.top_k, h = x.row_size();
  d.counts.assign(num_experts, 0);
  for (int32_t e : r.expert) ++d.counts[e];
  std::vector<int64_t> next(num_experts, 0);  // first free row of each expert
  for (int e = 1; e < num_experts; ++e) next[e] = next[e - 1] + d.counts[e - 1];
  d.slot.assign(slots, 0);
  d.row_of.assign(slots, 0);
  d.rows.reset({slots, h});
  for (int64_t s = 0; s < slots; ++s) {  // slot order keeps tokens ascending per expert
    const int64_t row = next[r.expert[s]]++;
    d.slot[row] = s;
    d.row_of[s] = row;
    std::copy_n(x.row(s / r.top_k), h, d.rows.row(row));
  }
}

void MoeLayer::experts_forward(const Tensor& rows, const std::vector<int64_t>& counts, Tensor& out,
                               std::vector<MlpCache>& caches) const {
  const int64_t h = hidden_;
  out.reset({rows.rows(), h});
  caches.resize(experts_.size());
  int64_t first = 0;
  Tensor part, part_out;
  for (size_t e = 0; e < experts_.size(); ++e) {
    part = slice_rows(rows, first, counts[e]);
    experts_[e].forward(part, part_out, caches[e]);
    std::copy_n(part_out.ptr(), counts[e] * h, out.row(first));
    first += counts[e];
  }
}

void MoeLayer::experts_backward(const std::vector<MlpCache>& caches, const std::vector<int64_t>& counts,
                                const Tensor& d_out, Tensor& d_rows) {
  const int64_t h = hidden_;
  d_rows.reset({d_out.rows(), h});
  int64_t first = 0;
  Tensor part, part_dx;
  for (size_t e = 0; e < experts_.size(); ++e) {
    part = slice_rows(d_out, first, counts[e]);
    experts_[e].backward(caches[e], part, part_dx);
    std::copy_n(part_dx.ptr(), counts[e] * h, d_rows.row(first));
    first += counts[e];
  }
}

void MoeLayer::combine(const Routing& r, const Dispatch& d, const Tensor& expert_out, Tensor& y) {
  const int64_t h = expert_out.row_size();
  y.reset({r.tokens, h});
  for (int64_t s = 0; s < r.tokens * r.top_k; ++s) {
    const float w = r.weight[s];
    const float* src = expert_out.row(d.row_of[s]);
    float* dst = y.row(s / r.top_k);
    for (int64_t j = 0; j < h; ++j) dst[j] += w * src[j];
  }
}

void MoeLayer::combine_backward(const Routing& r, const Dispatch& d, const Tensor& expert_out, const Tensor& dy,
                                Tensor& d_expert_out, std::vector<float>& d_weight) {
  const int64_t h = dy.row_size(), slots = r.tokens * r.top_k;
  d_expert_out.reset({slots, h});
  d_weight.assign(slots, 0.0f);
  for (int64_t s = 0; s < slots; ++s) {
    const float* g = dy.row(s / r.top_k);
    const float* o = expert_out.row(d.row_of[s]);
    float* dst = d_expert_out.row(d.row_of[s]);
    double dot = 0;
    for (int64_t j = 0; j < h; ++j) {
      dst[j] = r.weight[s] * g[j];
      dot += static_cast<double>(g[j]) * o[j];
    }
    d_weight[s] = static_cast<float>(dot);
  }
}

void MoeLayer::dispatch_backward(const Dispatch& d, int top_k, const Tensor& d_rows, Tensor& dx) {
  const int64_t h = d_rows.row_size();
  for (int64_t row = 0; row < d_rows.rows(); ++row) {
    const float* src = d_rows.row(row);
    float* dst = dx.row(d.slot[row] / top_k);
    for (int64_t j = 0; j < h; ++j) dst[j] += src[j];
  }
}

namespace {
// Softmax of one row of E logits into p.
void softmax_row(const float* z, int64_t n, std::vector<double>& p) {
  p.resize(n);
  const float mx = *std::max_element(z, z + n);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += (p[i] = std::exp(static_cast<double>(z[i]) - mx));
  for (int64_t i = 0; i < n; ++i) p[i] /= sum;
}

// f_i of each sequence: fraction of its k*S selections that chose expert i. [seqs][E]
std::vector<std::vector<double>> selection_fractions(const Routing& r, int seq, int experts) {
  const int64_t seqs = r.tokens / seq;
  std::vector<std::vector<double>> f(seqs, std::vector<double>(experts, 0.0));
  for (int64_t s = 0; s < r.tokens * r.top_k; ++s)
    f[s / r.top_k / seq][r.expert[s]] += 1.0 / (static_cast<double>(seq) * r.top_k);
  return f;
}
}  // namespace

double MoeLayer::balance_loss_sum(const Routing& r, int seq) const {
  const int64_t E = num_experts_, seqs = r.tokens / seq;
  const auto f = selection_fractions(r, seq, num_experts_);
  double total = 0;
  std::vector<double> p;
  for (int64_t s = 0; s < seqs; ++s) {
    std::vector<double> mean_p(E, 0.0);
    for (int64_t t = s * seq; t < (s + 1) * seq; ++t) {
      softmax_row(r.logits.row(t), E, p);
      for (int64_t i = 0; i < E; ++i) mean_p[i] += p[i] / seq;
    }
    for (int64_t i = 0; i < E; ++i) total += E * f[s][i] * mean_p[i];
  }
  return total;
}

void MoeLayer::route_backward(const Tensor& x, const Routing& r, const std::vector<float>& d_weight, int seq,
                              double aux_weight_per_sequence, Tensor& dx) {
  const int64_t T = r.tokens, E = num_experts_, k = top_k_;
  Tensor d_logits({T, E});
  // Gate weights w = softmax(z_selected): dz_j = w_j * (dw_j - sum_i w_i dw_i).
  for (int64_t t = 0; t < T; ++t) {
    double dot = 0;
    for (int64_t j = 0; j < k; ++j) dot += static_cast<double>(r.weight[t * k + j]) * d_weight[t * k + j];
    for (int64_t j = 0; j < k; ++j) {
      const int64_t s = t * k + j;
      d_logits.row(t)[r.expert[s]] += static_cast<float>(r.weight[s] * (d_weight[s] - dot));
    }
  }
  if (uses_aux_loss() && aux_weight_per_sequence != 0.0) {
    // d/dz_tj of E * sum_i f_i * P_i, P_i = mean_t p_ti:  (E/S) * p_tj * (f_j - sum_i f_i p_ti).
    const auto f = selection_fractions(r, seq, num_experts_);
    std::vector<double> p;
    for (int64_t t = 0; t < T; ++t) {
      const auto& fs = f[t / seq];
      softmax_row(r.logits.row(t), E, p);
      double fp = 0;
      for (int64_t i = 0; i < E; ++i) fp += fs[i] * p[i];
      for (int64_t j = 0; j < E; ++j)
        d_logits.row(t)[j] += static_cast<float>(aux_weight_per_sequence * E / seq * p[j] * (fs[j] - fp));
    }
  }
  linear_backward_weight(d_logits.ptr(), x.ptr(), router.grad.ptr(), T, hidden_, E);
  if (tp_.index == 0) linear_backward_input(d_logits.ptr(), router.value.ptr(), dx.ptr(), T, hidden_, E, true);
}

void MoeLayer::forward(const Tensor& x, int seq, Tensor& y, MoeCache& c) const {
  (void)seq;
  if (first_local_ != 0 || local_experts() != num_experts_)
    throw std::logic_error("MoeLayer::forward is the EP = 1 path; an EP shard needs the staged API");
  c.x = x;
  route(x, c.routing);
  dispatch(x, c.routing, num_experts_, c.dispatch);
  experts_forward(c.dispatch.rows, c.dispatch.counts, c.expert_out, c.experts);
  combine(c.routing, c.dispatch, c.expert_out, y);
  if (shared) {
    Tensor s;
    shared->forward(x, s, c.shared);
    add_into(y, s);
  }
}

void MoeLayer::backward(MoeCache& c, int seq, const Tensor& dy, double aux_weight_per_sequence, Tensor& dx) {
  if (tp_.count != 1)
    throw std::logic_error("MoeLayer::backward is the TP = 1 path; a TP shard must sum d_weight over TP");
  Tensor d_expert_out, d_rows;
  std::vector<float> d_weight;
  combine_backward(c.routing, c.dispatch, c.expert_out, dy, d_expert_out, d_weight);
  experts_backward(c.experts, c.dispatch.counts, d_expert_out, d_rows);
  if (shared) {
    shared->backward(c.shared, dy, dx);
  } else {
    dx.reset({c.x.rows(), hidden_});
  }
  dispatch_backward(c.dispatch, top_k_, d_rows, dx);
  route_backward(c.x, c.routing, d_weight, seq, aux_weight_per_sequence, dx);
}

void MoeLayer::update_bias(const std::vector<int64_t>& step_load) {
  if (balance_ != RoutingBalance::aux_loss_free) return;
  double mean = 0;
  for (int64_t l : step_load) mean += static_cast<double>(l) / num_experts_;
  for (int i = 0; i < num_experts_; ++i) {
    const double gap = mean - static_cast<double>(step_load[i]);
    const float sign = gap > 0 ? 1.0f : (gap < 0 ? -1.0f : 0.0f);
    selection_bias[i] += static_cast<float>(bias_update_rate_) * sign;
  }
}

}  // namespace ibt::models
