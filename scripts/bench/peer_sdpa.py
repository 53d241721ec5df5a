#!/usr/bin/env python3
"""The `relpos bench` step written in plain PyTorch with scaled_dot_product_attention: the peer
that relpos's step time is compared with on the same device (docs/performance.md, "Fused attention
(GPU)").

The model is relpos's bench model (configs/base.yaml + configs/bench.yaml unless told otherwise):
token embedding, the position variant, L pre-LN blocks (attention with q, k, v and output
projections; GELU feed-forward), a final LayerNorm and the MLM head (dense, GELU, LayerNorm,
decoder tied to the embedding, bias); dropout 0.1 on embeddings, residual branches and attention
probabilities (relpos's defaults). A step: random tokens, cross-entropy against random targets at
every position, backward, and with --optimizer an AdamW step; timed with a device
synchronisation after each step, the median over the measured steps, as relpos bench does.

Variants: none, learned (an absolute table added to the embeddings), rope (q and k rotated),
alibi (its bias as SDPA's float mask) and rel_bias (a trainable bias per head and distance i - j,
2T - 1 values per head laid out as a (1, H, T, T) float mask: the peer of relpos's t5_bias, tisa
and kerple, whose mask needs a gradient where ALiBi's does not). Prints one line per configuration and, with --json, a
JSON list of the measurements.

Usage: scripts/bench/peer_sdpa.py [--variants none,rope] [--lengths 512] [--layers 4 --width 256
       --heads 4 --ff 1024 --batch 8] [--precision fp32|bf16] [--steps 10 --warmup 3]
       [--device cuda] [--optimizer] [--json FILE] [--profile N]

--profile N: after the measured steps, one more step under torch.profiler, and the N operators
with the most device (or CPU) self time printed: where a variant's extra time goes.
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, width, heads, ff, dropout):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.norm1, self.norm2 = nn.LayerNorm(width, eps=1e-5), nn.LayerNorm(width, eps=1e-5)
        self.q, self.k, self.v, self.o = (nn.Linear(width, width) for _ in range(4))
        self.ff1, self.ff2 = nn.Linear(width, ff), nn.Linear(ff, width)
        self.drop = nn.Dropout(dropout)

    def split(self, x):  # (B,T,D) -> (B,H,T,d)
        B, T, D = x.shape
        return x.view(B, T, self.heads, D // self.heads).transpose(1, 2)

    def forward(self, x, rotate=None, bias=None):
        h = self.norm1(x)
        q, k, v = self.split(self.q(h)), self.split(self.k(h)), self.split(self.v(h))
        if rotate is not None:
            q, k = rotate(q), rotate(k)
        p = self.dropout if self.training else 0.0
        mask = None if bias is None else bias.to(q.dtype)  # bfloat16 under autocast
        z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)  # (B,H,T,d)
        B, H, T, d = z.shape
        x = x + self.drop(self.o(z.transpose(1, 2).reshape(B, T, H * d)))
        return x + self.drop(self.ff2(F.gelu(self.ff1(self.norm2(x)))))


class Model(nn.Module):
    def __init__(self, variant, vocab, length, width, heads, layers, ff, dropout=0.1):
        super().__init__()
        self.variant, self.heads = variant, heads
        self.embed = nn.Embedding(vocab, width)
        nn.init.normal_(self.embed.weight, std=0.02)  # relpos's init_std
        self.pos = nn.Embedding(length, width) if variant == "learned" else None
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(Block(width, heads, ff, dropout) for _ in range(layers))
        self.norm = nn.LayerNorm(width, eps=1e-5)
        self.dense, self.head_norm = nn.Linear(width, width), nn.LayerNorm(width, eps=1e-5)
        self.bias = nn.Parameter(torch.zeros(vocab))
        d = width // heads
        theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)  # (d/2)
        angles = torch.arange(length, dtype=torch.float32)[:, None] * theta[None, :]  # (T,d/2)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)
        # ALiBi slopes of Press et al. for a power-of-two head count: 2^(-8h/H), h = 1..H.
        self.register_buffer("slopes", torch.tensor([2.0 ** (-8.0 * (h + 1) / heads)
                                                     for h in range(heads)]), persistent=False)
        # rel_bias: f_h(r) for r = -(T-1)..T-1, one table shared by the layers (as T5's).
        self.rel = nn.Parameter(torch.zeros(heads, 2 * length - 1)) if variant == "rel_bias" else None

    def rotate(self, x):  # (B,H,T,d): channel pairs (2m, 2m+1) rotated by position·θ_m
        T = x.shape[2]
        cos, sin = self.cos[:T].to(x.dtype), self.sin[:T].to(x.dtype)
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)

    def forward(self, tokens):
        T = tokens.shape[1]
        x = self.embed(tokens)
        if self.pos is not None:
            x = x + self.pos.weight[:T]
        x = self.drop(x)
        bias = None
        if self.variant == "alibi":
            pos = torch.arange(T, device=tokens.device, dtype=torch.float32)
            bias = -self.slopes.view(-1, 1, 1) * (pos[None, :] - pos[:, None]).abs()  # (H,T,T)
            bias = bias.unsqueeze(0)  # (1,H,T,T)
        elif self.variant == "rel_bias":
            # Window k of the 2T-1 values holds f[k .. k+T-1]; query i reads window T-1-i, so
            # bias[h,i,j] = f_h(j - i) at index T-1+j-i.
            bias = self.rel[:, : 2 * T - 1].unfold(1, T, 1).flip(1).unsqueeze(0)  # (1,H,T,T)
        rotate = self.rotate if self.variant == "rope" else None
        for b in self.blocks:
            x = b(x, rotate, bias)
        h = self.head_norm(F.gelu(self.dense(self.norm(x))))
        return h @ self.embed.weight.t() + self.bias  # (B,T,V)


def measure(args, variant, T, device):
    torch.manual_seed(1)
    model = Model(variant, args.vocab, T, args.width, args.heads, args.layers, args.ff).to(device)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4) if args.optimizer else None
    tokens = torch.randint(0, args.vocab, (args.batch, T), device=device)
    targets = torch.randint(0, args.vocab, (args.batch, T), device=device)
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    times = []
    for s in range(args.warmup + args.steps):
        if cuda:
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        model.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            logits = model(tokens)
            loss = F.cross_entropy(logits.view(-1, args.vocab).float(), targets.view(-1))
        loss.backward()
        if opt is not None:
            opt.step()
        if cuda:
            torch.cuda.synchronize(device)
        if s >= args.warmup:
            times.append((time.perf_counter() - t0) * 1000.0)
    step_ms = statistics.median(times)
    if args.profile:
        profile_step(args, model, tokens, targets, device, f"{variant} T={T}")
    return {"variant": variant, "length": T, "batch": args.batch, "layers": args.layers,
            "width": args.width, "heads": args.heads, "ff_width": args.ff,
            "precision": args.precision, "device": str(device), "optimizer": args.optimizer,
            "step_ms": step_ms, "step_ms_min": min(times), "step_ms_max": max(times),
            "tokens_per_s": args.batch * T / (step_ms / 1000.0), "loss": float(loss),
            "cuda_peak_mb": torch.cuda.max_memory_allocated(device) / 2**20 if cuda else None,
            "torch": torch.__version__}


def profile_step(args, model, tokens, targets, device, title):
    """One training step under torch.profiler: the operators with the most self time."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as prof:
        model.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            loss = F.cross_entropy(model(tokens).view(-1, args.vocab).float(), targets.view(-1))
        loss.backward()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    # PyTorch >= 2.4 names the device column self_device_time_total, earlier ones self_cuda_...
    keys = (["self_device_time_total", "self_cuda_time_total"] if device.type == "cuda"
            else ["self_cpu_time_total"])
    for key in keys:
        try:
            table = prof.key_averages().table(sort_by=key, row_limit=args.profile)
        except (AttributeError, KeyError, ValueError):
            continue
        print(f"profile of one step, {title} (sorted by {key}):\n{table}", flush=True)
        return
    print(f"profile of one step, {title}: no device time column in this PyTorch", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variants", default="none,learned,rope,alibi")
    p.add_argument("--lengths", default="512")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ff", type=int, default=1024)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--optimizer", action="store_true")
    p.add_argument("--json")
    p.add_argument("--profile", type=int, default=0, metavar="N")
    args = p.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    for v in variants:
        if v not in ("none", "learned", "rope", "alibi", "rel_bias"):
            p.error(f"--variants: unknown variant '{v}' (expected none, learned, rope, alibi, "
                    "rel_bias)")
    try:
        lengths = [int(x) for x in args.lengths.split(",")]
    except ValueError:
        p.error(f"--lengths: '{args.lengths}' is not a comma-separated list of integers")
    if args.width % args.heads or (args.width // args.heads) % 2:
        p.error("--width must be a multiple of --heads with an even head width")
    device = torch.device(args.device)
    out = []
    print(f"peer (PyTorch {torch.__version__}, scaled_dot_product_attention): {args.layers} layers, "
          f"D={args.width}, H={args.heads}, ff={args.ff}, batch {args.batch}, {args.precision}, "
          f"device {device}; {args.warmup} warm-up + {args.steps} measured steps", flush=True)
    for T in lengths:
        for v in variants:
            try:
                r = measure(args, v, T, device)
            except torch.cuda.OutOfMemoryError as e:  # a measurement, as relpos bench reports it
                r = {"variant": v, "length": T, "error": str(e).splitlines()[0]}
                print(f"peer {v} T={T}: FAILED: {r['error']}", flush=True)
            else:
                mem = f", peak {r['cuda_peak_mb']:.0f} GPU MB" if r["cuda_peak_mb"] else ""
                print(f"peer {v} T={T}: {r['step_ms']:.1f} ms/step{mem}", flush=True)
            out.append(r)
            torch.cuda.empty_cache() if device.type == "cuda" else None
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
