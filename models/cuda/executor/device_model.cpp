#include "models/cuda/executor/device_model.hpp"

#include <algorithm>
#include <stdexcept>

#include "models/cuda/executor/train_kernels.hpp"
#include "models/engine/layers/norm.hpp"

namespace ibt::gpu {

namespace {
// Grows a buffer to n elements (contents undefined), allocating on `stream`.
template <typename T>
T* sized(DeviceBuffer<T>& b, std::int64_t n, cudaStream_t stream) {
  b.resize(static_cast<std::size_t>(n), stream);
  return b.get();
}
constexpr float kNormEps = models::NormLayer::kEps;
}  // namespace

DeviceChunk::DeviceChunk(models::Transformer& cpu, DeviceBlas& blas, cudaStream_t stream, AttentionKernels attention)
    : config_(cpu.config()), part_(cpu.part()), blas_(blas), stream_(stream), attention_(attention) {
  params_ = std::make_unique<DeviceParams>(cpu.params(), blas.precision(), stream);
  const DeviceParams& p = *params_;
  auto idx = [&](const models::Param& param) { return p.index_of(&param); };
  head_dim_ = config_.head_dim();
  if (cpu.embedding) {
    embedding_ = idx(cpu.embedding->table);
    vocab_begin_ = cpu.embedding->vocab_begin();
  }
  for (models::TransformerBlock& b : cpu.blocks) {
    if (!b.mlp) throw std::logic_error("DeviceChunk: MoE layers are not implemented on the GPU");
    BlockWeights w{};
    w.attn_norm = idx(b.attn_norm.gain);
    w.ffn_norm = idx(b.ffn_norm.gain);
    if (config_.norm == models::Norm::layernorm) {
      w.attn_norm_bias = idx(b.attn_norm.bias);
      w.ffn_norm_bias = idx(b.ffn_norm.bias);
    }
    w.wq = idx(b.attention.wq);
    w.wk = idx(b.attention.wk);
    w.wv = idx(b.attention.wv);
    w.wo = idx(b.attention.wo);
    w.w_up = idx(b.mlp->w_up);
    w.w_down = idx(b.mlp->w_down);
    if (config_.activation == models::Activation::swiglu) w.w_gate = idx(b.mlp->w_gate);
    heads_ = static_cast<int>(b.attention.wq.value.rows() / head_dim_);
    kv_heads_ = static_cast<int>(b.attention.wk.value.rows() / head_dim_);
    ffn_local_ = b.mlp->w_up.value.rows();
    // A block's parameters are consecutive in Transformer::params(): one range.
    w.grads_begin = p.info(w.attn_norm).offset;
    w.grads_end = w.grads_begin;
    for (models::Param* param : b.params()) {
      const DeviceParamInfo& info = p.info(idx(*param));
      w.grads_begin = std::min(w.grads_begin, info.offset);
      w.grads_end = std::max(w.grads_end, info.offset + info.count);
    }
    blocks_.push_back(w);
  }
  if (cpu.head) {
    final_norm_ = idx(cpu.final_norm->gain);
    if (config_.norm == models::Norm::layernorm) final_norm_bias_ = idx(cpu.final_norm->bias);
    head_ = idx(cpu.head->weight());  // the embedding's entry when tied
    vocab_local_ = cpu.head->weight().value.rows();
    vocab_begin_ = cpu.head->vocab_begin();
    // The final norm and an untied head are the last entries of params().
    head_grads_.begin = p.info(final_norm_).offset;
    head_grads_.end = p.total();
  }
  if (embedding_ != kNone) {
    embedding_grads_.begin = p.info(embedding_).offset;
    embedding_grads_.end = embedding_grads_.begin + p.info(embedding_).count;
  }
}

void* DeviceChunk::operand(Operand& dst, std::int64_t n) {
  dst.resize(static_cast<std::size_t>(n) * operand_bytes(blas_.precision()), stream_);
  return dst.get();
}

void DeviceChunk::cast(const float* src, Operand& dst, std::int64_t n) {
  to_operand(src, operand(dst, n), n, blas_.bf16(), stream_);
}

double DeviceChunk::forward(const models::Batch& mb, const DeviceTensor* input, DeviceTensor* output,
                            DeviceStageCache& c, DeviceTpReducer& tp) {
  const std::int64_t h = config_.hidden;
  const std::int64_t T = static_cast<std::int64_t>(mb.sequences) * mb.seq_len;
  c.batch = mb.sequences;
  c.seq = mb.seq_len;
  c.tokens.upload(mb.inputs.data(), mb.inputs.size(), stream_);
  c.targets.upload(mb.targets.data(), mb.targets.size(), stream_);
  DeviceBuffer<float> x(static_cast<std::size_t>(T * h), stream_), y(static_cast<std::size_t>(T * h), stream_);
  if (embedding_ != kNone) {
    // Vocab-parallel embedding: partial rows, summed over TP.
    embedding_forward(c.tokens.get(), T, params_->master(embedding_), params_->info(embedding_).shape[0], vocab_begin_,
                      h, x.get(), stream_);
    tp.sum(x.get(), T * h);
  } else {
    if (!input || input->numel() != T * h) throw std::logic_error("DeviceChunk::forward: missing or mis-sized input");
    check_cuda(cudaMemcpyAsync(x.get(), input->get(), sizeof(float) * T * h, cudaMemcpyDeviceToDevice, stream_),
               "copy of the stage input");
  }
  c.blocks.resize(blocks_.size());
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    block_forward(blocks_[i], x.get(), T, c.batch, c.seq, y.get(), c.blocks[i], tp);
    std::swap(x, y);
  }
  if (head_ == kNone) {
    if (!output) throw std::logic_error("DeviceChunk::forward: a chunk without the head needs an output");
    output->reset(T, h, stream_);
    check_cuda(cudaMemcpyAsync(output->get(), x.get(), sizeof(float) * T * h, cudaMemcpyDeviceToDevice, stream_),
               "copy of the stage output");
    return 0.0;
  }
  const std::int64_t V = vocab_local_;
  c.final_x = std::move(x);
  norm_forward(c.final_x.get(), params_->master(final_norm_), bias_or_null(final_norm_bias_), T, h,
               config_.norm == models::Norm::layernorm, kNormEps, operand_out(c.normed_op, T * h),
               sized(c.final_mean, T, stream_), sized(c.final_rstd, T, stream_), stream_);
  blas_.linear_forward(c.normed_op.get(), op(head_), sized(c.logits, T * V, stream_), T, h, V);
  // Vocab-parallel softmax: global max, then global sums (models/engine/loss.hpp).
  logits_row_max(c.logits.get(), T, V, sized(c.row_max, T, stream_), stream_);
  tp.max(c.row_max.get(), T);
  logits_sum_exp_and_target(c.logits.get(), c.targets.get(), T, V, vocab_begin_, c.row_max.get(),
                            sized(c.sum_exp, T, stream_), sized(c.target_logit, T, stream_), stream_);
  tp.sum(c.sum_exp.get(), T);
  tp.sum(c.target_logit.get(), T);
  DeviceBuffer<double> rows(static_cast<std::size_t>(T), stream_);
  cross_entropy_rows(c.row_max.get(), c.sum_exp.get(), c.target_logit.get(), T, rows.get(), stream_);
  double ce = 0;
  for (double r : rows.download(stream_)) ce += r;
  return ce;
}

void DeviceChunk::backward(DeviceStageCache& c, const DeviceTensor* d_output, float ce_per_token, DeviceTensor* d_input,
                           DeviceTpReducer& tp, const GradsFinal& grads_final) {
  auto final_range = [&](Range r) {
    if (grads_final && r.end > r.begin) grads_final(r.begin, r.end - r.begin);
  };
  const std::int64_t h = config_.hidden;
  const std::int64_t T = static_cast<std::int64_t>(c.batch) * c.seq;
  DeviceBuffer<float> dy(static_cast<std::size_t>(T * h), stream_), dx(static_cast<std::size_t>(T * h), stream_);
  if (head_ != kNone) {
    const std::int64_t V = vocab_local_;
    DeviceBuffer<float> d_logits(static_cast<std::size_t>(T * V), stream_),
        d_normed(static_cast<std::size_t>(T * h), stream_);
    logits_grad(c.logits.get(), c.targets.get(), T, V, vocab_begin_, c.row_max.get(), c.sum_exp.get(), ce_per_token,
                d_logits.get(), stream_);
    Operand d_logits_op;
    cast(d_logits.get(), d_logits_op, T * V);
    blas_.linear_backward_weight(d_logits_op.get(), c.normed_op.get(), params_->grad(head_), T, h, V);
    blas_.linear_backward_input(d_logits_op.get(), op(head_), d_normed.get(), T, h, V, false);
    tp.sum(d_normed.get(), T * h);  // vocab-parallel head: partial input gradient
    norm_backward(c.final_x.get(), params_->master(final_norm_), c.final_mean.get(), c.final_rstd.get(), d_normed.get(),
                  T, h, config_.norm == models::Norm::layernorm, dy.get(), params_->grad(final_norm_),
                  bias_grad_or_null(final_norm_bias_), stream_);
    c.logits = DeviceBuffer<float>();  // the largest buffer of the step: free it early
    // (A tied head has no entry of its own: its gradient is the embedding's, final after
    // the embedding's backward, so head_grads_ then holds the final norm only.)
    final_range(head_grads_);
  } else {
    if (!d_output || d_output->numel() != T * h)
      throw std::logic_error("DeviceChunk::backward: missing or mis-sized output gradient");
    check_cuda(cudaMemcpyAsync(dy.get(), d_output->get(), sizeof(float) * T * h, cudaMemcpyDeviceToDevice, stream_),
               "copy of the output gradient");
  }
  for (std::size_t i = blocks_.size(); i-- > 0;) {
    block_backward(blocks_[i], c.blocks[i], T, c.batch, c.seq, dy.get(), dx.get(), tp);
    final_range({blocks_[i].grads_begin, blocks_[i].grads_end});
    std::swap(dy, dx);
  }
  c.blocks.clear();
  if (embedding_ != kNone) {
    embedding_backward(c.tokens.get(), T, dy.get(), params_->info(embedding_).shape[0], vocab_begin_, h,
                       params_->grad(embedding_), stream_);
    final_range(embedding_grads_);
  } else if (d_input) {
    d_input->reset(T, h, stream_);
    check_cuda(cudaMemcpyAsync(d_input->get(), dy.get(), sizeof(float) * T * h, cudaMemcpyDeviceToDevice, stream_),
               "copy of the input gradient");
  }
}

void DeviceChunk::block_forward(const BlockWeights& w, const float* x, std::int64_t T, int batch, int seq, float* y,
                                DeviceBlockCache& c, DeviceTpReducer& tp) {
  const std::int64_t h = config_.hidden, qw = std::int64_t(heads_) * head_dim_, f = ffn_local_;
  const bool ln = config_.norm == models::Norm::layernorm;
  check_cuda(cudaMemcpyAsync(sized(c.x, T * h, stream_), x, sizeof(float) * T * h, cudaMemcpyDeviceToDevice, stream_),
             "copy of the block input");
  DeviceBuffer<float> partial(static_cast<std::size_t>(T * h), stream_);
  // h = x + Wo . attention(norm(x)); the norms and activations write their GEMM operands directly.
  norm_forward(x, params_->master(w.attn_norm), bias_or_null(w.attn_norm_bias), T, h, ln, kNormEps,
               operand_out(c.normed1_op, T * h), sized(c.mean1, T, stream_), sized(c.rstd1, T, stream_), stream_);
  attention_core_forward(c.normed1_op, w, T, batch, seq, c);
  blas_.linear_forward(c.context_op.get(), op(w.wo), partial.get(), T, qw, h);
  tp.sum(partial.get(), T * h);  // row-parallel Wo
  float* hres = sized(c.h, T * h, stream_);
  check_cuda(cudaMemcpyAsync(hres, x, sizeof(float) * T * h, cudaMemcpyDeviceToDevice, stream_), "residual copy");
  add_into(hres, partial.get(), T * h, stream_);
  // y = h + W_down . act(W_up . norm(h))
  norm_forward(hres, params_->master(w.ffn_norm), bias_or_null(w.ffn_norm_bias), T, h, ln, kNormEps,
               operand_out(c.normed2_op, T * h), sized(c.mean2, T, stream_), sized(c.rstd2, T, stream_), stream_);
  if (w.w_gate != kNone) {
    blas_.linear_forward(c.normed2_op.get(), op(w.w_gate), sized(c.gate, T * f, stream_), T, h, f);
    blas_.linear_forward(c.normed2_op.get(), op(w.w_up), sized(c.up, T * f, stream_), T, h, f);
    swiglu_forward(c.gate.get(), c.up.get(), operand_out(c.act_op, T * f), T * f, stream_);
  } else {
    blas_.linear_forward(c.normed2_op.get(), op(w.w_up), sized(c.gate, T * f, stream_), T, h, f);
    gelu_forward(c.gate.get(), operand_out(c.act_op, T * f), T * f, stream_);
  }
  blas_.linear_forward(c.act_op.get(), op(w.w_down), partial.get(), T, f, h);
  tp.sum(partial.get(), T * h);  // row-parallel W_down
  check_cuda(cudaMemcpyAsync(y, hres, sizeof(float) * T * h, cudaMemcpyDeviceToDevice, stream_), "residual copy");
  add_into(y, partial.get(), T * h, stream_);
}

void DeviceChunk::attention_core_forward(const Operand& normed, const BlockWeights& w, std::int64_t T, int batch,
                                         int seq, DeviceBlockCache& c) {
  const std::int64_t h = config_.hidden, qw = std::int64_t(heads_) * head_dim_,
                     kw = std::int64_t(kv_heads_) * head_dim_;
  const std::int64_t squares = std::int64_t(batch) * heads_ * seq * seq;
  const AttentionShape s{batch, seq, heads_, kv_heads_, head_dim_};
  if (attention_ == AttentionKernels::gemm) {
    // q, k, v straight out of their GEMMs as operands; fp32 scores only as scratch in bf16 runs.
    blas_.linear_forward_to_operand(normed.get(), op(w.wq), operand(c.q_op, T * qw), T, h, qw);
    blas_.linear_forward_to_operand(normed.get(), op(w.wk), operand(c.k_op, T * kw), T, h, kw);
    blas_.linear_forward_to_operand(normed.get(), op(w.wv), operand(c.v_op, T * kw), T, h, kw);
    void* probs = operand(c.probs_op, squares);
    DeviceBuffer<float> scratch;
    float* scores = blas_.bf16() ? sized(scratch, squares, stream_) : static_cast<float*>(probs);
    attention_forward_gemm(blas_, s, c.q_op.get(), c.k_op.get(), c.v_op.get(), scores, probs,
                           operand(c.context_op, T * qw), stream_);
    return;
  }
  blas_.linear_forward(normed.get(), op(w.wq), sized(c.q, T * qw, stream_), T, h, qw);
  blas_.linear_forward(normed.get(), op(w.wk), sized(c.k, T * kw, stream_), T, h, kw);
  blas_.linear_forward(normed.get(), op(w.wv), sized(c.v, T * kw, stream_), T, h, kw);
  DeviceBuffer<float> context(static_cast<std::size_t>(T * qw), stream_);
  attention_forward(s, c.q.get(), c.k.get(), c.v.get(), sized(c.probs, squares, stream_), context.get(), stream_);
  cast(context.get(), c.context_op, T * qw);
}

void DeviceChunk::block_backward(const BlockWeights& w, DeviceBlockCache& c, std::int64_t T, int batch, int seq,
                                 const float* dy, float* dx, DeviceTpReducer& tp) {
  const std::int64_t h = config_.hidden, qw = std::int64_t(heads_) * head_dim_,
                     kw = std::int64_t(kv_heads_) * head_dim_, f = ffn_local_;
  const bool ln = config_.norm == models::Norm::layernorm;
  DeviceBuffer<float> d_act(static_cast<std::size_t>(T * f), stream_),
      d_normed(static_cast<std::size_t>(T * h), stream_), d_branch(static_cast<std::size_t>(T * h), stream_);
  Operand dy_op, d_gate_op, d_up_op;
  // MLP: dW_down += dy^T act; d_act = dy W_down; through the activation (whose kernels
  // write the GEMM operands directly); the column-parallel first GEMMs give a partial
  // input gradient, summed over TP.
  cast(dy, dy_op, T * h);
  blas_.linear_backward_weight(dy_op.get(), c.act_op.get(), params_->grad(w.w_down), T, f, h);
  blas_.linear_backward_input(dy_op.get(), op(w.w_down), d_act.get(), T, f, h, false);
  if (w.w_gate != kNone) {
    swiglu_backward(c.gate.get(), c.up.get(), d_act.get(), operand_out(d_gate_op, T * f), operand_out(d_up_op, T * f),
                    T * f, stream_);
    blas_.linear_backward_weight(d_gate_op.get(), c.normed2_op.get(), params_->grad(w.w_gate), T, h, f);
    blas_.linear_backward_weight(d_up_op.get(), c.normed2_op.get(), params_->grad(w.w_up), T, h, f);
    blas_.linear_backward_input(d_gate_op.get(), op(w.w_gate), d_normed.get(), T, h, f, false);
    blas_.linear_backward_input(d_up_op.get(), op(w.w_up), d_normed.get(), T, h, f, true);
  } else {
    gelu_backward(c.gate.get(), d_act.get(), operand_out(d_gate_op, T * f), T * f, stream_);
    blas_.linear_backward_weight(d_gate_op.get(), c.normed2_op.get(), params_->grad(w.w_up), T, h, f);
    blas_.linear_backward_input(d_gate_op.get(), op(w.w_up), d_normed.get(), T, h, f, false);
  }
  tp.sum(d_normed.get(), T * h);
  norm_backward(c.h.get(), params_->master(w.ffn_norm), c.mean2.get(), c.rstd2.get(), d_normed.get(), T, h, ln,
                d_branch.get(), params_->grad(w.ffn_norm), bias_grad_or_null(w.ffn_norm_bias), stream_);
  // dh = dy + d_branch (held in dx until the attention's branch is added).
  float* dh = dx;
  check_cuda(cudaMemcpyAsync(dh, dy, sizeof(float) * T * h, cudaMemcpyDeviceToDevice, stream_), "residual gradient");
  add_into(dh, d_branch.get(), T * h, stream_);
  // Attention: dWo += dh^T context; the core gives dq, dk, dv; then Wq, Wk, Wv.
  Operand dh_op, dq_op, dk_op, dv_op;
  cast(dh, dh_op, T * h);
  blas_.linear_backward_weight(dh_op.get(), c.context_op.get(), params_->grad(w.wo), T, qw, h);
  attention_core_backward(dh_op, w, c, T, batch, seq, dq_op, dk_op, dv_op);
  blas_.linear_backward_weight(dq_op.get(), c.normed1_op.get(), params_->grad(w.wq), T, h, qw);
  blas_.linear_backward_weight(dk_op.get(), c.normed1_op.get(), params_->grad(w.wk), T, h, kw);
  blas_.linear_backward_weight(dv_op.get(), c.normed1_op.get(), params_->grad(w.wv), T, h, kw);
  blas_.linear_backward_input(dq_op.get(), op(w.wq), d_normed.get(), T, h, qw, false);
  blas_.linear_backward_input(dk_op.get(), op(w.wk), d_normed.get(), T, h, kw, true);
  blas_.linear_backward_input(dv_op.get(), op(w.wv), d_normed.get(), T, h, kw, true);
  tp.sum(d_normed.get(), T * h);  // column-parallel Wq, Wk, Wv
  norm_backward(c.x.get(), params_->master(w.attn_norm), c.mean1.get(), c.rstd1.get(), d_normed.get(), T, h, ln,
                d_branch.get(), params_->grad(w.attn_norm), bias_grad_or_null(w.attn_norm_bias), stream_);
  add_into(dx, d_branch.get(), T * h, stream_);
  // The scratch buffers are freed on return: cudaFree waits for the device first, so
  // the kernels queued above still see them.
}

void DeviceChunk::attention_core_backward(const Operand& dh, const BlockWeights& w, DeviceBlockCache& c, std::int64_t T,
                                          int batch, int seq, Operand& dq, Operand& dk, Operand& dv) {
  const std::int64_t h = config_.hidden, qw = std::int64_t(heads_) * head_dim_,
                     kw = std::int64_t(kv_heads_) * head_dim_;
  const std::int64_t squares = std::int64_t(batch) * heads_ * seq * seq;
  const AttentionShape s{batch, seq, heads_, kv_heads_, head_dim_};
  DeviceBuffer<float> d_probs(static_cast<std::size_t>(squares), stream_),
      dk_f(static_cast<std::size_t>(T * kw), stream_), dv_f(static_cast<std::size_t>(T * kw), stream_);
  if (attention_ == AttentionKernels::gemm) {
    // d_context = dh Wo as an operand; dS in the operand precision (in place over dP in fp32 runs).
    Operand d_context, d_scores_op;
    blas_.linear_backward_input_to_operand(dh.get(), op(w.wo), operand(d_context, T * qw), T, qw, h);
    void* d_scores = blas_.bf16() ? operand(d_scores_op, squares) : static_cast<void*>(d_probs.get());
    attention_backward_gemm(blas_, s, c.q_op.get(), c.k_op.get(), c.v_op.get(), c.probs_op.get(), d_context.get(),
                            d_probs.get(), d_scores, operand(dq, T * qw), dk_f.get(), dv_f.get(), stream_);
  } else {
    DeviceBuffer<float> d_context(static_cast<std::size_t>(T * qw), stream_),
        dq_f(static_cast<std::size_t>(T * qw), stream_);
    blas_.linear_backward_input(dh.get(), op(w.wo), d_context.get(), T, qw, h, false);
    attention_backward(s, c.q.get(), c.k.get(), c.v.get(), c.probs.get(), d_context.get(), d_probs.get(), dq_f.get(),
                       dk_f.get(), dv_f.get(), stream_);
    cast(dq_f.get(), dq, T * qw);
  }
  cast(dk_f.get(), dk, T * kw);  // fp32 until here: a KV head sums its group's gradients
  cast(dv_f.get(), dv, T * kw);
}

}  // namespace ibt::gpu
