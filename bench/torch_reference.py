#!/usr/bin/python3
"""The same model, weights and batches as an `ibt train --dump` file, trained in PyTorch.

ibt's CPU engine must be at least as fast as what a user would run instead; this is
that alternative: the model written as a PyTorch user would write it (fp32, eager,
torch.optim.AdamW), built from the initial weights and the per-step batches that
`ibt train --dump FILE` wrote, so both train exactly the same thing. Its losses are
compared with the ones ibt recorded in the dump (they agree to fp32 rounding), which is
what makes the timing comparison fair: same model, batch and weights.

  /usr/bin/python3 bench/torch_reference.py --dump D.h5 --model-file models/catalog/small-dense.json \
      --threads 1 --steps 5

Prints one line per step: `torch_step <k> <loss> <seconds>`; exits 1 when a loss
differs from ibt's by more than --loss-tolerance (relative). Driven by
bench/engine_vs_pytorch.sh, which pairs it with ibt in one run.
Mirrors models/layers/*: pre-norm blocks, RMSNorm/LayerNorm (eps 1e-5), causal GQA
attention without positional encoding, SwiGLU/GELU(tanh) MLPs, DeepSeek-style MoE
(top-k on logits + selection bias, gate = softmax over the selected logits, shared
experts, aux-loss-free bias update), untied or tied LM head, mean cross-entropy.
"""
import argparse
import json
import sys
import time

import h5py
import numpy as np
import torch
import torch.nn.functional as F

NORM_EPS = 1e-5


def load_dump(path):
    """The newest train_dump run of the file: initial weights, batches, ibt's losses."""
    with h5py.File(path, "r") as f:
        runs = [name for name in f["runs"] if f["runs"][name].attrs.get("kind", b"") in (b"train_dump", "train_dump")]
        if not runs:
            runs = list(f["runs"])
        run = f["runs"][sorted(runs)[-1]]
        params = {}
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                params[name] = np.asarray(obj, dtype=np.float32)
        run["params"].visititems(visit)
        batches = []
        step = 0
        while f"step{step}" in run["batch"]:
            g = run["batch"][f"step{step}"]
            batches.append((np.asarray(g["inputs"]).astype(np.int64), np.asarray(g["targets"]).astype(np.int64)))
            step += 1
        losses = np.asarray(run["losses"], dtype=np.float64)
    return params, batches, losses


class Norm(torch.nn.Module):
    def __init__(self, kind, w, b):
        super().__init__()
        self.kind = kind
        self.weight = torch.nn.Parameter(w)
        self.bias = torch.nn.Parameter(b) if b is not None else None

    def forward(self, x):
        if self.kind == "layernorm":
            return F.layer_norm(x, x.shape[-1:], self.weight, self.bias, NORM_EPS)
        rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + NORM_EPS)
        return x * rstd * self.weight


class Mlp(torch.nn.Module):
    def __init__(self, activation, w, prefix):
        super().__init__()
        self.activation = activation
        self.w_up = torch.nn.Parameter(w[prefix + "w_up"])
        self.w_down = torch.nn.Parameter(w[prefix + "w_down"])
        self.w_gate = torch.nn.Parameter(w[prefix + "w_gate"]) if activation == "swiglu" else None

    def forward(self, x):
        if self.w_gate is not None:
            a = F.silu(x @ self.w_gate.t()) * (x @ self.w_up.t())
        else:
            a = F.gelu(x @ self.w_up.t(), approximate="tanh")
        return a @ self.w_down.t()


class Attention(torch.nn.Module):
    def __init__(self, m, w, prefix):
        super().__init__()
        self.heads, self.kv_heads = m["heads"], m.get("kv_heads") or m["heads"]
        self.head_dim = m["hidden"] // m["heads"]
        for name in ("wq", "wk", "wv", "wo"):
            setattr(self, name, torch.nn.Parameter(w[prefix + name]))

    def forward(self, x, batch, seq):
        d, h, kv = self.head_dim, self.heads, self.kv_heads
        q = (x @ self.wq.t()).view(batch, seq, h, d).transpose(1, 2)
        k = (x @ self.wk.t()).view(batch, seq, kv, d).transpose(1, 2)
        v = (x @ self.wv.t()).view(batch, seq, kv, d).transpose(1, 2)
        k = k.repeat_interleave(h // kv, dim=1)
        v = v.repeat_interleave(h // kv, dim=1)
        scores = (q @ k.transpose(-1, -2)) / (d ** 0.5)
        mask = torch.ones(seq, seq, dtype=torch.bool).triu(1)
        probs = scores.masked_fill(mask, float("-inf")).softmax(-1)
        ctx = (probs @ v).transpose(1, 2).reshape(batch * seq, h * d)
        return ctx @ self.wo.t()


class Moe(torch.nn.Module):
    def __init__(self, m, w, prefix):
        super().__init__()
        self.top_k = m["top_k"]
        self.rate = m.get("bias_update_rate", 0.0) if m.get("balance", "none") == "aux_loss_free" else 0.0
        self.router = torch.nn.Parameter(w[prefix + "router.weight"])
        self.register_buffer("selection_bias", torch.zeros(m["num_experts"]))
        self.experts = torch.nn.ModuleList(
            Mlp(m["activation"], w, f"{prefix}experts.{e}.") for e in range(m["num_experts"]))
        self.shared = Mlp(m["activation"], w, prefix + "shared_experts.") if m.get("shared_experts", 0) else None
        self.load = torch.zeros(m["num_experts"], dtype=torch.int64)

    def forward(self, x):
        logits = x @ self.router.t()
        with torch.no_grad():
            # Highest biased score first; ties to the lower expert id as ibt does
            # (a stable sort of the negated scores).
            chosen = torch.sort(-(logits + self.selection_bias), dim=-1, stable=True).indices[:, : self.top_k]
            self.load += torch.bincount(chosen.flatten(), minlength=len(self.experts))
        gate = torch.gather(logits, 1, chosen).softmax(-1)
        y = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            token, slot = (chosen == e).nonzero(as_tuple=True)
            if token.numel():
                y = y.index_add(0, token, expert(x[token]) * gate[token, slot].unsqueeze(1))
        if self.shared is not None:
            y = y + self.shared(x)
        return y

    def update_bias(self):
        """Aux-loss-free balancing: one step toward the mean load (DeepSeek-V3)."""
        gap = self.load.double().mean() - self.load.double()
        self.selection_bias += self.rate * torch.sign(gap).float()
        self.load.zero_()


class Model(torch.nn.Module):
    def __init__(self, m, w):
        super().__init__()
        self.m = m
        self.embedding = torch.nn.Parameter(w["embedding.weight"])
        self.blocks = torch.nn.ModuleList()
        norm = m.get("norm", "rmsnorm")
        first_dense = m.get("first_dense_layers", 0)
        for layer in range(m["layers"]):
            p = f"layers.{layer}."
            block = torch.nn.Module()
            block.attn_norm = Norm(norm, w[p + "attn_norm.weight"], w.get(p + "attn_norm.bias"))
            block.attention = Attention(m, w, p + "attention.")
            block.ffn_norm = Norm(norm, w[p + "ffn_norm.weight"], w.get(p + "ffn_norm.bias"))
            is_moe = m.get("num_experts", 0) > 0 and layer >= first_dense
            block.ffn = Moe(m, w, p) if is_moe else Mlp(m["activation"], w, p + "mlp.")
            self.blocks.append(block)
        self.final_norm = Norm(norm, w["final_norm.weight"], w.get("final_norm.bias"))
        self.head = None if m.get("tied_embeddings") else torch.nn.Parameter(w["lm_head.weight"])

    def forward(self, inputs, targets):
        batch, seq = inputs.shape
        x = self.embedding[inputs.flatten()]
        for b in self.blocks:
            x = x + b.attention(b.attn_norm(x), batch, seq)
            x = x + b.ffn(b.ffn_norm(x))
        logits = self.final_norm(x) @ (self.embedding if self.head is None else self.head).t()
        return F.cross_entropy(logits, targets.flatten())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dump", required=True, help="file written by `ibt train --dump`")
    ap.add_argument("--model-file", required=True, help="the model's JSON (models/catalog/NAME.json)")
    ap.add_argument("--steps", type=int, default=0, help="steps to run (default: every batch in the dump)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lr", type=float, default=1e-3, help="as ibt train --lr")
    ap.add_argument("--loss-tolerance", type=float, default=0.0,
                    help="relative, against ibt's losses (default 1e-4 dense, 2e-3 MoE: under another GEMM's "
                         "rounding a near-tie in routing can send a token to another expert)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    m = json.load(open(a.model_file))
    if m.get("num_experts", 0) and m.get("balance", "none") == "aux_loss":
        sys.exit("torch_reference: the auxiliary balance loss is not mirrored here (aux_loss_free and none are)")
    if m.get("attention", "standard") != "standard":
        sys.exit("torch_reference: only standard (GQA) attention is mirrored here")
    params, batches, ibt_losses = load_dump(a.dump)
    steps = a.steps or len(batches)
    if steps > len(batches):
        sys.exit(f"torch_reference: the dump holds {len(batches)} batches, --steps {steps} asks for more")
    model = Model(m, {k: torch.from_numpy(v) for k, v in params.items()})
    # ibt's AdamW defaults (models/engine/optimizer.hpp); decay on matrices only.
    decay = [p for n, p in model.named_parameters() if p.dim() > 1]
    no_decay = [p for n, p in model.named_parameters() if p.dim() <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    moe = [b.ffn for b in model.blocks if isinstance(b.ffn, Moe)]
    worst = 0.0
    for s in range(steps):
        inputs, targets = (torch.from_numpy(t) for t in batches[s])
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(inputs, targets)
        loss.backward()
        opt.step()
        for layer in moe:
            layer.update_bias()
        seconds = time.perf_counter() - start
        rel = abs(loss.item() - ibt_losses[s]) / abs(ibt_losses[s]) if s < len(ibt_losses) else 0.0
        worst = max(worst, rel)
        print(f"torch_step {s} {loss.item():.7f} {seconds:.6f} ibt_loss {ibt_losses[s]:.7f} rel {rel:.2e}", flush=True)
    tolerance = a.loss_tolerance or (2e-3 if moe else 1e-4)
    if worst > tolerance:
        print(f"torch_reference: losses differ from ibt's by {worst:.2e} (relative) > {tolerance}: "
              "not the same model", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
