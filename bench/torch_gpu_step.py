#!/usr/bin/env python3
"""The step a PyTorch user would run on one GPU, for the model and batch of `ibt train --executor cuda`.

ibt's cuda executor must be measured against what a user would run instead on the same
GPU: the same model (bench/torch_reference.py's modules, built from the model's JSON),
fp32 master weights with bf16 autocast GEMMs (as the executor's bf16 precision), fused
torch.optim.AdamW with ibt's hyper-parameters, the same microbatches x micro-batch size x
sequence length per step, gradients accumulated over the microbatches. Attention is
PyTorch's fused scaled_dot_product_attention (flash or memory-efficient kernels), as a
user would write it today; --attention naive uses torch_reference.py's explicit softmax
instead, closer to the executor's own kernels.

The weights are random (same shapes, not ibt's values: a GPU-sized model's dump would be
gigabytes), so the losses are not compared; the parameter count is printed and checked
against the count implied by the model file, which is what ties the two timings to one
model. Prints one line per step and a summary:
  torch_gpu <model> params <P> tokens/step <T> median_step_s <t> tflops <F>
where F counts 6 x matmul parameters x tokens plus causal attention, as ibt's MFU does.

  python3 bench/torch_gpu_step.py --model-file models/catalog/megatron-1.7b.json \
      --micro-batch-size 2 --microbatches 4 --steps 6
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import torch_reference as ref


def shapes(m):
    """Name -> shape of every parameter torch_reference.Model asks for."""
    h, heads = m["hidden"], m["heads"]
    d = h // heads
    kv = (m.get("kv_heads") or heads) * d
    out = {"embedding.weight": (m["vocab"], h), "final_norm.weight": (h,)}
    if m.get("norm") == "layernorm":
        out["final_norm.bias"] = (h,)
    if not m.get("tied_embeddings"):
        out["lm_head.weight"] = (m["vocab"], h)
    for layer in range(m["layers"]):
        p = f"layers.{layer}."
        for n in ("attn_norm", "ffn_norm"):
            out[p + n + ".weight"] = (h,)
            if m.get("norm") == "layernorm":
                out[p + n + ".bias"] = (h,)
        out[p + "attention.wq"] = (heads * d, h)
        out[p + "attention.wk"] = (kv, h)
        out[p + "attention.wv"] = (kv, h)
        out[p + "attention.wo"] = (h, heads * d)
        out[p + "mlp.w_up"] = (m["ffn_hidden"], h)
        out[p + "mlp.w_down"] = (h, m["ffn_hidden"])
        if m.get("activation", "swiglu") == "swiglu":
            out[p + "mlp.w_gate"] = (m["ffn_hidden"], h)
    return out


def sdpa_forward(self, x, batch, seq):
    d, h, kv = self.head_dim, self.heads, self.kv_heads
    q = (x @ self.wq.t()).view(batch, seq, h, d).transpose(1, 2)
    k = (x @ self.wk.t()).view(batch, seq, kv, d).transpose(1, 2)
    v = (x @ self.wv.t()).view(batch, seq, kv, d).transpose(1, 2)
    if h != kv:  # GQA: each K/V head serves h / kv query heads
        k, v = k.repeat_interleave(h // kv, dim=1), v.repeat_interleave(h // kv, dim=1)
    ctx = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return ctx.transpose(1, 2).reshape(batch * seq, h * d) @ self.wo.t()


def naive_mask_on_device(self, x, batch, seq):
    # torch_reference builds its mask on the CPU; the same math with the mask on the GPU.
    d, h, kv = self.head_dim, self.heads, self.kv_heads
    q = (x @ self.wq.t()).view(batch, seq, h, d).transpose(1, 2)
    k = (x @ self.wk.t()).view(batch, seq, kv, d).transpose(1, 2).repeat_interleave(h // kv, dim=1)
    v = (x @ self.wv.t()).view(batch, seq, kv, d).transpose(1, 2).repeat_interleave(h // kv, dim=1)
    scores = (q @ k.transpose(-1, -2)) / (d ** 0.5)
    mask = torch.ones(seq, seq, dtype=torch.bool, device=x.device).triu(1)
    probs = scores.masked_fill(mask, float("-inf")).softmax(-1)
    return (probs @ v).transpose(1, 2).reshape(batch * seq, h * d) @ self.wo.t()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-file", required=True)
    ap.add_argument("--micro-batch-size", type=int, default=1)
    ap.add_argument("--microbatches", type=int, default=1)
    ap.add_argument("--steps", type=int, default=6, help="steps; the median leaves out step 0 (warm-up)")
    ap.add_argument("--attention", choices=("sdpa", "naive"), default="sdpa")
    ap.add_argument("--lr", type=float, default=3e-3, help="as ibt train --lr")
    ap.add_argument("--device", default="cuda", help="cuda, or cpu to try the script where there is no GPU")
    a = ap.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        print("torch_gpu_step: skipped: PyTorch sees no CUDA GPU")
        return 0
    m = json.load(open(a.model_file))
    if m.get("num_experts", 0) or m.get("attention", "standard") != "standard":
        sys.exit("torch_gpu_step: dense models with standard attention only (as the cuda executor)")
    ref.Attention.forward = sdpa_forward if a.attention == "sdpa" else naive_mask_on_device
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    gen = torch.Generator().manual_seed(1234)
    w = {n: (torch.randn(s, generator=gen) * 0.02 if len(s) > 1 else torch.ones(s)) for n, s in shapes(m).items()}
    model = ref.Model(m, w).to(dev)
    params = sum(p.numel() for p in model.parameters())
    if params != sum(t.numel() for t in w.values()):
        sys.exit(f"torch_gpu_step: model holds {params} parameters, the model file implies "
                 f"{sum(t.numel() for t in w.values())}")
    decay = [p for p in model.parameters() if p.dim() > 1]
    no_decay = [p for p in model.parameters() if p.dim() <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8,
                            **({"fused": True} if dev.type == "cuda" else {}))
    seq, mbs = m["seq_len"], a.micro_batch_size
    tokens = seq * mbs * a.microbatches
    # FLOPs as ibt counts model FLOPs: 6 x matmul weights x tokens (embedding lookup excluded,
    # the head included) plus causal attention's two products (6 x 2 x seq x hidden x tokens / 2).
    matmul = params - m["vocab"] * m["hidden"] * (0 if m.get("tied_embeddings") else 1) \
        - sum(t.numel() for n, t in w.items() if t.dim() == 1)
    flops = 6 * matmul * tokens + 6 * m["layers"] * seq * m["hidden"] * tokens
    times = []
    for step in range(a.steps):
        batches = [torch.randint(0, m["vocab"], (mbs, seq + 1), device=dev) for _ in range(a.microbatches)]
        sync()
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        for b in batches:
            with torch.autocast(dev.type, dtype=torch.bfloat16):
                loss = model(b[:, :-1], b[:, 1:]) / a.microbatches
            loss.backward()
        opt.step()
        sync()
        times.append(time.perf_counter() - start)
        print(f"torch_gpu_step {step} loss {loss.item() * a.microbatches:.4f} {times[-1]:.4f} s", flush=True)
    t = statistics.median(times[1:]) if len(times) > 1 else times[0]
    print(f"torch_gpu {m['name']} attention {a.attention} params {params} tokens/step {tokens} "
          f"median_step_s {t:.4f} tflops {flops / t / 1e12:.1f} peak_mem_gib "
          f"{torch.cuda.max_memory_allocated() / 2**30 if dev.type == 'cuda' else 0:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
