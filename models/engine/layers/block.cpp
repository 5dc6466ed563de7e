#include "models/engine/layers/block.hpp"

#include <algorithm>
#include <stdexcept>

#include "models/engine/init.hpp"

namespace ibt::models {

namespace {
std::string layer_prefix(int layer) { return "layers." + std::to_string(layer) + "."; }
}  // namespace

TransformerBlock::TransformerBlock(const ModelConfig& m, uint64_t seed, int layer, Shard tp, Shard ep)
    : attn_norm(m.norm, m.hidden, layer_prefix(layer) + "attn_norm"),
      ffn_norm(m.norm, m.hidden, layer_prefix(layer) + "ffn_norm"),
      attention(m, seed, layer, tp),
      layer_(layer),
      parallel_(m.parallel_block) {
  if (m.layer_is_moe(layer)) {
    moe.emplace(m, seed, layer, tp, ep);
  } else {
    mlp.emplace(MlpShape{m.hidden, m.ffn_hidden, m.activation}, seed, layer_prefix(layer) + "mlp.", tp, init_std(m),
                residual_init_std(m));
  }
}

std::vector<Param*> TransformerBlock::params() {
  std::vector<Param*> out = attn_norm.params();
  for (Param* p : attention.params()) out.push_back(p);
  if (!parallel_)
    for (Param* p : ffn_norm.params()) out.push_back(p);
  for (Param* p : mlp ? mlp->params() : moe->params()) out.push_back(p);
  return out;
}

void TransformerBlock::forward(const Tensor& x, int batch, int seq, Tensor& y, BlockCache& c, TpReducer& tp,
                               ExpertExchange* ep, ContextExchange* cp) const {
  if (parallel_) return parallel_forward(x, batch, seq, y, c, tp, ep, cp);
  // With sequence parallelism x, h and y hold this rank's rows only; the attention and
  // FFN see all rows (gathered) and their partial outputs are reduce-scattered.
  const bool sp = tp.sequence_parallel();
  Tensor normed, gathered, partial, reduced;
  attn_norm.forward(x, normed, c.attn_norm);
  if (sp) tp.all_gather_rows(normed, gathered);
  attention.forward(sp ? gathered : normed, batch, seq, partial, c.attention, cp);
  if (sp)
    tp.reduce_scatter_rows(partial, reduced);
  else
    tp.sum(partial);  // row-parallel Wo
  Tensor h = x;
  add_into(h, sp ? reduced : partial);
  ffn_norm.forward(h, normed, c.ffn_norm);
  if (sp) tp.all_gather_rows(normed, gathered);
  if (mlp) {
    mlp->forward(sp ? gathered : normed, partial, c.mlp);
  } else {
    moe_forward(sp ? gathered : normed, partial, c.moe, ep);
  }
  if (sp)
    tp.reduce_scatter_rows(partial, reduced);
  else
    tp.sum(partial);  // row-parallel W_down (dense, experts, shared experts)
  y = std::move(h);
  add_into(y, sp ? reduced : partial);
}

void TransformerBlock::backward(BlockCache& c, int batch, int seq, const Tensor& dy, double aux_weight_per_sequence,
                                Tensor& dx, TpReducer& tp, ExpertExchange* ep, ContextExchange* cp) {
  if (parallel_) return parallel_backward(c, batch, seq, dy, aux_weight_per_sequence, dx, tp, ep, cp);
  const bool sp = tp.sequence_parallel();
  Tensor d_normed, d_branch, d_full, d_local;
  if (sp) tp.all_gather_rows(dy, d_full);
  const Tensor& dy_ffn = sp ? d_full : dy;
  if (mlp) {
    mlp->backward(c.mlp, dy_ffn, d_normed);
  } else {
    moe_backward(c.moe, seq, dy_ffn, aux_weight_per_sequence, d_normed, tp, ep);
  }
  // Column-parallel first GEMM(s): the input gradient is partial.
  if (sp)
    tp.reduce_scatter_rows(d_normed, d_local);
  else
    tp.sum(d_normed);
  ffn_norm.backward(c.ffn_norm, sp ? d_local : d_normed, d_branch);
  Tensor dh = dy;
  add_into(dh, d_branch);
  if (sp) tp.all_gather_rows(dh, d_full);
  attention.backward(c.attention, batch, seq, sp ? d_full : dh, d_normed, cp);
  if (sp)
    tp.reduce_scatter_rows(d_normed, d_local);
  else
    tp.sum(d_normed);  // column-parallel Wq, Wk, Wv
  attn_norm.backward(c.attn_norm, sp ? d_local : d_normed, d_branch);
  dx = std::move(dh);
  add_into(dx, d_branch);
}

// y = x + Attention(Norm(x)) + FFN(Norm(x)): both branches read the same (gathered)
// normed input, and their row-parallel partial outputs are added before ONE TP
// all-reduce (reduce-scatter with SP) instead of one per branch.
void TransformerBlock::parallel_forward(const Tensor& x, int batch, int seq, Tensor& y, BlockCache& c, TpReducer& tp,
                                        ExpertExchange* ep, ContextExchange* cp) const {
  const bool sp = tp.sequence_parallel();
  Tensor normed, gathered, partial, ffn_partial, reduced;
  attn_norm.forward(x, normed, c.attn_norm);
  if (sp) tp.all_gather_rows(normed, gathered);
  const Tensor& in = sp ? gathered : normed;
  attention.forward(in, batch, seq, partial, c.attention, cp);
  if (mlp) {
    mlp->forward(in, ffn_partial, c.mlp);
  } else {
    moe_forward(in, ffn_partial, c.moe, ep);
  }
  add_into(partial, ffn_partial);
  if (sp)
    tp.reduce_scatter_rows(partial, reduced);
  else
    tp.sum(partial);
  y = x;
  add_into(y, sp ? reduced : partial);
}

// The output gradient reaches both branches whole (gathered once with SP); their
// partial input gradients are added before ONE TP all-reduce (reduce-scatter with SP),
// then go through the shared norm.
void TransformerBlock::parallel_backward(BlockCache& c, int batch, int seq, const Tensor& dy, double aux_w, Tensor& dx,
                                         TpReducer& tp, ExpertExchange* ep, ContextExchange* cp) {
  const bool sp = tp.sequence_parallel();
  Tensor d_normed, d_attn, d_full, d_local, d_branch;
  if (sp) tp.all_gather_rows(dy, d_full);
  const Tensor& d_out = sp ? d_full : dy;
  if (mlp) {
    mlp->backward(c.mlp, d_out, d_normed);
  } else {
    moe_backward(c.moe, seq, d_out, aux_w, d_normed, tp, ep);
  }
  attention.backward(c.attention, batch, seq, d_out, d_attn, cp);
  add_into(d_normed, d_attn);
  if (sp)
    tp.reduce_scatter_rows(d_normed, d_local);
  else
    tp.sum(d_normed);
  attn_norm.backward(c.attn_norm, sp ? d_local : d_normed, d_branch);
  dx = dy;
  add_into(dx, d_branch);
}

void TransformerBlock::moe_forward(const Tensor& x, Tensor& y, MoeCache& c, ExpertExchange* ep) const {
  c.x = x;
  moe->route(x, c.routing);
  MoeLayer::dispatch(x, c.routing, moe->num_experts(), c.dispatch);
  run_experts_forward(c, ep);
  MoeLayer::combine(c.routing, c.dispatch, c.expert_out, y);
  if (moe->shared) {
    Tensor s;
    moe->shared->forward(x, s, c.shared);
    add_into(y, s);
  }
}

void TransformerBlock::moe_backward(MoeCache& c, int seq, const Tensor& dy, double aux_w, Tensor& dx, TpReducer& tp,
                                    ExpertExchange* ep) {
  Tensor d_expert_out, d_rows;
  std::vector<float> d_weight;
  MoeLayer::combine_backward(c.routing, c.dispatch, c.expert_out, dy, d_expert_out, d_weight);
  tp.sum(d_weight);  // expert outputs are partial over TP, so is dy . expert_out
  run_experts_backward(c, d_expert_out, d_rows, ep);
  if (moe->shared) {
    moe->shared->backward(c.shared, dy, dx);
  } else {
    dx.reset({c.x.rows(), c.x.row_size()});
  }
  MoeLayer::dispatch_backward(c.dispatch, c.routing.top_k, d_rows, dx);
  moe->route_backward(c.x, c.routing, d_weight, seq, aux_w, dx);
}

namespace {
// rows[r] -> out[index[r]] (index_is_destination) or rows[index[r]] -> out[r].
Tensor permute_rows(const Tensor& rows, const std::vector<int64_t>& index, bool index_is_destination) {
  const int64_t h = rows.row_size();
  Tensor out({static_cast<int64_t>(index.size()), h});
  for (size_t r = 0; r < index.size(); ++r) {
    const int64_t src = index_is_destination ? static_cast<int64_t>(r) : index[r];
    const int64_t dst = index_is_destination ? index[r] : static_cast<int64_t>(r);
    std::copy_n(rows.row(src), h, out.row(dst));
  }
  return out;
}
}  // namespace

void TransformerBlock::run_experts_forward(MoeCache& c, ExpertExchange* ep) const {
  const int experts = moe->num_experts();
  if (moe->local_experts() == experts) {
    moe->experts_forward(c.dispatch.rows, c.dispatch.counts, c.expert_out, c.experts);
    return;
  }
  if (!ep) throw std::logic_error("TransformerBlock: an expert-parallel MoE layer needs an ExpertExchange");
  const int peers = ep->size(), local = moe->local_experts();
  // Rows for global expert j*local + i go to peer j; dispatch already grouped them so.
  std::vector<int64_t> recv_counts;  // [peer * local + i]: rows from peer for local expert i
  ep->exchange_counts(c.dispatch.counts, recv_counts);
  c.send_rows.assign(peers, 0);
  c.recv_rows.assign(peers, 0);
  c.local_counts.assign(local, 0);
  for (int j = 0; j < peers; ++j)
    for (int i = 0; i < local; ++i) {
      c.send_rows[j] += c.dispatch.counts[j * local + i];
      c.recv_rows[j] += recv_counts[j * local + i];
      c.local_counts[i] += recv_counts[j * local + i];
    }
  Tensor received;
  ep->exchange_rows(c.dispatch.rows, c.send_rows, received, c.recv_rows);
  // Regroup the received rows (peer-major) by local expert (expert-major).
  std::vector<int64_t> peer_start(peers, 0);
  for (int j = 1; j < peers; ++j) peer_start[j] = peer_start[j - 1] + c.recv_rows[j - 1];
  c.from_received.clear();
  for (int i = 0; i < local; ++i)
    for (int j = 0; j < peers; ++j) {
      int64_t offset = peer_start[j];
      for (int i2 = 0; i2 < i; ++i2) offset += recv_counts[j * local + i2];
      for (int64_t r = 0; r < recv_counts[j * local + i]; ++r) c.from_received.push_back(offset + r);
    }
  const Tensor grouped = permute_rows(received, c.from_received, false);
  Tensor out_grouped;
  moe->experts_forward(grouped, c.local_counts, out_grouped, c.experts);
  ep->exchange_rows(permute_rows(out_grouped, c.from_received, true), c.recv_rows, c.expert_out, c.send_rows);
}

void TransformerBlock::run_experts_backward(MoeCache& c, const Tensor& d_expert_out, Tensor& d_rows,
                                            ExpertExchange* ep) {
  if (moe->local_experts() == moe->num_experts()) {
    moe->experts_backward(c.experts, c.dispatch.counts, d_expert_out, d_rows);
    return;
  }
  Tensor d_received, d_in_grouped;
  ep->exchange_rows(d_expert_out, c.send_rows, d_received, c.recv_rows);
  moe->experts_backward(c.experts, c.local_counts, permute_rows(d_received, c.from_received, false), d_in_grouped);
  ep->exchange_rows(permute_rows(d_in_grouped, c.from_received, true), c.recv_rows, d_rows, c.send_rows);
}

}  // namespace ibt::models
