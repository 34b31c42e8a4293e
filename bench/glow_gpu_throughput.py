"""Encoder throughput of GLOW's weighted attention against the same BERT without weights, on GPU or CPU.

    python bench/glow_gpu_throughput.py [--layers 3] [--hidden 384] [--heads 12] [--seq 128 256] [--batch 64 256]

Model-only: the same architecture as the packaged MiniLM's first layers, randomly initialised
(weights do not change speed), fp32 and bf16 autocast where CUDA is present; inputs are random
token ids with a realistic padding pattern and random positive token weights. Prints a table
and GLOW/BERT ratios (target ≥ 0.95).
"""

from __future__ import annotations

import argparse
import time

import torch
from transformers import BertConfig, BertModel

from irglow.models.glow.attention import install


def build(layers, hidden, heads, mode, device):
    cfg = BertConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                     intermediate_size=4 * hidden, type_vocab_size=4, attn_implementation="sdpa")
    torch.manual_seed(0)
    model = BertModel(cfg).to(device).eval()
    attn = install(model, mode)
    return model, attn


@torch.no_grad()
def bench(model, attn, batch, seq, device, dtype, weighted, reps=20):
    ids = torch.randint(1000, 30000, (batch, seq), device=device)
    mask = torch.ones(batch, seq, dtype=torch.long, device=device)
    lengths = torch.randint(seq // 3, seq + 1, (batch,), device=device)
    mask[torch.arange(seq, device=device)[None, :] >= lengths[:, None]] = 0
    types = torch.zeros_like(ids)
    w = torch.rand(batch, seq, device=device) * 2 + 0.1
    for a in attn:
        a.token_weights = w if weighted else None
    ctx = torch.autocast(device.type, dtype=dtype) if dtype is not None else torch.autocast(device.type, enabled=False)
    with ctx:
        for _ in range(3):
            model(input_ids=ids, attention_mask=mask, token_type_ids=types)
        if device.type == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(reps):
            model(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state[:, 0]
        if device.type == "cuda":
            torch.cuda.synchronize()
    return batch * reps / (time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--hidden", type=int, default=384)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seq", type=int, nargs="+", default=[128, 256])
    ap.add_argument("--batch", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtypes = [None, torch.bfloat16] if device.type == "cuda" else [None]
    name = torch.cuda.get_device_name() if device.type == "cuda" else "cpu"
    print(f"device: {name}; torch {torch.__version__}; layers {args.layers}, hidden {args.hidden}\n")
    print("| dtype | batch | seq | BERT docs/s | GLOW key docs/s | GLOW row docs/s | key/BERT | row/BERT |")
    print("|:--|--:|--:|--:|--:|--:|--:|--:|")
    for dtype in dtypes:
        for batch in args.batch:
            for seq in args.seq:
                res = {}
                for mode in ("none", "key", "row"):
                    model, attn = build(args.layers, args.hidden, args.heads, mode, device)
                    res[mode] = max(bench(model, attn, batch, seq, device, dtype, mode != "none", args.reps)
                                    for _ in range(2))
                print(f"| {'bf16' if dtype else 'fp32'} | {batch} | {seq} | {res['none']:.0f} | {res['key']:.0f} | "
                      f"{res['row']:.0f} | {res['key'] / res['none']:.3f} | {res['row'] / res['none']:.3f} |")


if __name__ == "__main__":
    main()
