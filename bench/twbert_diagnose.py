"""Why does (or doesn't) TW-BERT's stage 2 learn?  One feature set, many training variants.

    make bench-twbert-diagnose TRAIN=<data> TRAIN_SPLIT=<split> OUT=<dir> [VARIANTS=a,b,…]

Builds the training / validation features once (Lucene candidates, term vectors), then trains
each variant from the same checkpoint and seed, recording per evaluation the training loss,
nDCG@10 on (a fixed sample of) the *training* queries and on the validation queries.  Also runs a
finite-difference check of the scorer's gradient on real training queries.  Writes
``diagnose.md`` (table), ``curves.json`` and ``curves.png``.  Nothing here touches a test split.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

import torch
from common import section

from irglow.config import write_manifest
from irglow.data.collection import load_collection
from irglow.index.lucene_index import build_index
from irglow.index.stats import CollectionStats
from irglow.models.twbert.model import TWBert
from irglow.models.twbert.scorer import collate
from irglow.models.twbert.train import TrainConfig, Trainer, scaled_scores
from irglow.utils.atomic import atomic_write_text

log = logging.getLogger("bench.twbert_diagnose")

PAPER = {"model.head": "relu", "stage1_epochs": 1, "loss": "amse+listmle", "add_unretrieved_relevant": True,
         "lr": 3e-5}
VARIANTS: dict[str, dict] = {
    # the paper's stage 2 as it landed, and one change at a time
    "paper": PAPER,
    "paper-amse-only": {**PAPER, "loss": "amse"},
    "paper-listmle-only": {**PAPER, "loss": "listmle"},
    "paper-scale-uniform": {**PAPER, "scale_by": "uniform"},
    "paper-retrieved-only": {**PAPER, "add_unretrieved_relevant": False},
    "paper-lr-bert-1e-5": {**PAPER, "lr": 1e-5},
    "paper-head-lr-1e-4": {**PAPER, "head_lr": 1e-4},
    "paper-frozen-bert": {**PAPER, "freeze_encoder": True},
    # the new default (configs/twbert.toml), and one change at a time
    "default": {},
    "default+unretrieved": {"add_unretrieved_relevant": True},
    "default-scale-uniform": {"scale_by": "uniform"},
    "default-exp-labels": {"label_scale": "exp"},
    "default-binary-labels": {"label_scale": "binary"},
    "default-frozen-bert": {"freeze_encoder": True},
    "default-lr-bert-3e-5": {"lr": 3e-5},
    "default-head-lr-1e-4": {"head_lr": 1e-4},
    "default-relu-head": {"model.head": "relu", "stage1_epochs": 1},
}


def gradient_check(trainer: Trainer, data, model: TWBert, n_queries: int = 8) -> float:
    """Largest relative difference between autograd and central differences, d loss / d weights (float64)."""
    feats = data.train[:n_queries]
    batch = collate(feats, dtype=torch.float64)
    w0 = torch.rand(batch["idf"].shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) + 0.5
    target = batch["labels"]

    def f(w):
        s = scaled_scores(w, batch, trainer.config.model.k3, trainer.config.scale_by)
        return ((s - target) ** 2 * batch["doc_mask"]).sum()

    w = w0.clone().requires_grad_(True)
    f(w).backward()
    worst, eps = 0.0, 1e-6
    valid = batch["term_valid"] > 0
    for i, m in valid.nonzero().tolist():
        plus, minus = w0.clone(), w0.clone()
        plus[i, m] += eps
        minus[i, m] -= eps
        numeric = (f(plus) - f(minus)).item() / (2 * eps)
        worst = max(worst, abs(numeric - w.grad[i, m].item()) / max(1e-8, abs(numeric)))
    return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", required=True)
    ap.add_argument("--train-split", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--config", default="configs/twbert.toml")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, from {list(VARIANTS)}")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--data-dir")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    out = Path(args.out)
    base = section(args.config, "twbert", args.set, ("rm3", "model_dir"))
    base.update(epochs=args.epochs, patience=10 ** 6)  # full curves: no early stop here
    names = [v for v in args.variants.split(",") if v]
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variants {unknown}; offered: {list(VARIANTS)}")

    coll = load_collection(args.train)
    index = build_index(coll, root=args.data_dir)
    stats = CollectionStats.load(index)
    prep = Trainer(TrainConfig.from_dict(base), out / "features")
    data = prep.prepare(index, stats, coll.queries(args.train_split), coll.qrels(args.train_split))
    grad_err = gradient_check(prep, data, TWBert.from_pretrained_bert(prep.config.model))

    rows, curves = [], {}
    for name in names:
        cfg = json.loads(json.dumps(base))
        for key, value in VARIANTS[name].items():
            target = cfg
            *path, last = key.split(".")
            for p in path:
                target = target.setdefault(p, {})
            target[last] = value
        done = out / name / "training.json"
        if done.is_file() and json.loads(done.read_text()).get("variant") == VARIANTS[name]:
            log.info("%s: finished in an earlier run of this OUT, reused", name)
            saved = json.loads(done.read_text())
            seconds = saved.get("seconds", float("nan"))
        else:
            t = time.perf_counter()
            trainer = Trainer(TrainConfig.from_dict(cfg), out / name)
            trainer.fit(data, resume=False)
            seconds = time.perf_counter() - t
            saved = json.loads(done.read_text())
            atomic_write_text(done, json.dumps({**saved, "variant": VARIANTS[name], "seconds": seconds}, indent=1))
        state = saved["state"]
        hist = state["history"]
        curves[name] = hist
        start, best = hist[0], max(hist, key=lambda h: h["val_ndcg@10"] if h["val_ndcg@10"] is not None else -1)
        end = hist[-1]
        rows.append(f"| {name} | {start['val_ndcg@10']:.4f} | {best['val_ndcg@10']:.4f} (step {best['step']}) | "
                    f"{end['val_ndcg@10']:.4f} | {start['train_ndcg@10']:.4f} → {end['train_ndcg@10']:.4f} | "
                    f"{_fmt(hist[1]['loss'] if len(hist) > 1 else None)} → {_fmt(end['loss'])} | {seconds:.0f} |")
        _write(out, coll, args, data, state, base, grad_err, rows, curves)  # after every variant: a partial table
    write_manifest(out, {"twbert": base, **vars(args)}, seed=base.get("seed", 13))
    print((out / "diagnose.md").read_text())


def _write(out, coll, args, data, state, base, grad_err, rows, curves) -> None:
    head = (f"# TW-BERT stage-2 diagnosis: {coll.name}/{args.train_split}\n\n"
            f"{len(data.train)} training queries, {len(data.val)} validation queries; BM25 on the validation "
            f"candidates {state['val_bm25']:.4f}, fixed prior (bm25-ngram) {state['val_prior']:.4f}; training "
            f"sample BM25 {state['train_bm25']:.4f}, prior {state['train_prior']:.4f}.  Each variant: "
            f"{args.epochs} epochs from the same checkpoint and seed, evaluated every {base.get('eval_every', 0)} "
            f"steps and at epoch ends.\n\nGradient check (autograd vs central differences, float64, "
            f"{min(8, len(data.train))} training queries): max relative error {grad_err:.2e}.\n\n"
            "| variant | val start | val best | val end | train nDCG@10 start → end | loss first → last | s |\n"
            "|:--|--:|--:|--:|--:|--:|--:|\n")
    atomic_write_text(out / "diagnose.md", head + "\n".join(rows) + "\n")
    atomic_write_text(out / "curves.json", json.dumps(curves, indent=1))
    _plot(curves, out / "curves.png")


def _fmt(x) -> str:
    return "–" if x is None or x != x else f"{x:.4f}"


def _plot(curves: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5), sharex=True)
    for name, hist in curves.items():
        steps = [h["step"] for h in hist]
        line, = axes[0].plot(steps, [h["val_ndcg@10"] for h in hist], label=name)
        axes[1].plot(steps, [h["train_ndcg@10"] for h in hist], color=line.get_color())
    axes[0].set_title("validation nDCG@10")
    axes[1].set_title("training-query nDCG@10")
    for ax in axes:
        ax.set_xlabel("stage-2 step")
        ax.grid(alpha=0.3)
    fig.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


if __name__ == "__main__":
    from irglow.index.jvm import exit_process

    main()
    exit_process(0)  # no JVM + torch teardown at exit (see irglow.index.jvm.exit_process)
