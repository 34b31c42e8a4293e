"""What GLOW's weighting costs: encoding throughput of trained GLOW against trained BERT (same checkpoint,
layers, fields and batch), model-only and end to end (featurization included), on the test collection.

    python bench/glow.py --models <a bench-glow OUT or MODEL> --data <collection> --out <dir> [--docs 512]

The quality table is `make bench-glow` (the pipeline, configs/bench/glow.toml); this script only times the
models that run trained (target: GLOW / BERT ≥ 0.95).  Prints a table and writes ``throughput.md``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from irglow.data.collection import load_collection
from irglow.index.lucene_index import build_index
from irglow.index.stats import CollectionStats
from irglow.models.checkpoints import pick_device
from irglow.models.glow.model import GlowEncoder
from irglow.models.glow.runner import featurizer_for, forward_throughput
from irglow.models.source import reused_model
from irglow.utils.atomic import atomic_write_text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", required=True, help="a bench-glow output folder (its bert-train and glow-train)")
    ap.add_argument("--data", required=True, help="the collection whose documents are encoded")
    ap.add_argument("--out", required=True)
    ap.add_argument("--docs", type=int, default=0, help="documents timed (default: 2048 on CUDA, 512 on CPU)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--data-dir")
    args = ap.parse_args()
    device = pick_device()
    try:
        dirs = {v: reused_model(args.models, v) for v in ("bert", "glow")}
    except FileNotFoundError as e:
        print(f"throughput skipped: {e}")
        return
    coll = load_collection(args.data)
    index = build_index(coll, root=args.data_dir)
    stats = CollectionStats.load(index)
    n = args.docs or (2048 if device.type == "cuda" else 512)
    sample = [d for _, d in zip(range(n), coll.docs_iter())]
    rates = {}
    for name, model_dir in dirs.items():
        model = GlowEncoder.load(model_dir)
        rates[name] = forward_throughput(model, featurizer_for(model, index, stats), sample, args.batch, device)
    lines = [f"| encoder (batch {args.batch}, {len(sample)} documents, {device}) | model-only docs/s | "
             "end-to-end docs/s (incl. featurization) |", "|:--|--:|--:|",
             f"| BERT | {rates['bert'][0]:.1f} | {rates['bert'][1]:.1f} |",
             f"| GLOW | {rates['glow'][0]:.1f} | {rates['glow'][1]:.1f} |",
             f"| **GLOW / BERT** | **{rates['glow'][0] / rates['bert'][0]:.3f}** | "
             f"**{rates['glow'][1] / rates['bert'][1]:.3f}** |"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "throughput.md", "\n".join(lines) + "\n")
    atomic_write_text(out / "throughput.json", json.dumps({k: {"model_docs_per_s": a, "end_to_end_docs_per_s": b}
                                                           for k, (a, b) in rates.items()}, indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    from irglow.index.jvm import exit_process

    main()
    exit_process(0)
