"""GLOW / BISON benchmark: the papers' ablation grid trained on TRAIN, searched with faiss on TEST.

    make bench-glow TRAIN=<data> TRAIN_SPLIT=<split> TEST=<data> TEST_SPLIT=<split> OUT=<dir> [MODEL=<dir>]

Writes minilm.run (the initial checkpoint, zero-shot, mean pooling), bert.run, glow.run, glow-idf.run,
glow-tw.run, glow-us.run, glow-wt.run and a table of nDCG@10 / R@100 with significance marks
against ``bert``, plus encoding throughput of GLOW vs the same BERT without weights. Every model
shares initialisation, steps and seed; the attention reading (key-side Eq. 2 or row-side Eq. 4) is
chosen on the validation split carved from TRAIN and recorded. MODEL: a previous OUT/models folder
(variants found there are reused, the rest trained).
"""

from __future__ import annotations

import copy
import logging
import time
from pathlib import Path

from common import section, train_test_parser

from irglow.config import write_manifest
from irglow.data.collection import load_collection
from irglow.dense.encode import MeanPoolEncoder, dense_search, encode, encode_corpus, faiss_index, load_embeddings
from irglow.eval.compare import compare
from irglow.eval.report import write_report
from irglow.index.lucene_index import build_index
from irglow.index.stats import CollectionStats
from irglow.models.checkpoints import pick_device
from irglow.models.glow.model import VARIANTS, GlowEncoder
from irglow.models.glow.runner import featurizer_for, forward_throughput, glow_run, read_training
from irglow.models.glow.train import GlowTrainConfig, GlowTrainer

log = logging.getLogger("bench.glow")


def main() -> None:
    ap = train_test_parser(__doc__, "folder of trained variant directories to reuse", "configs/glow.toml")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--attention", choices=["key", "row", "auto"], default="auto")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = section(args.config, "glow", args.set, ("variants",))
    device = pick_device(cfg.get("device"))

    train_coll = load_collection(args.train)
    train_index = build_index(train_coll, root=args.data_dir)
    train_stats = CollectionStats.load(train_index)
    train_docs = {d.doc_id: d for d in train_coll.docs_iter()}
    train_q, train_qrels = train_coll.queries(args.train_split), train_coll.qrels(args.train_split)
    cfg.setdefault("model", {}).setdefault("fields", list(train_index.fields))
    reuse = Path(args.model) if args.model else None

    def trained(variant: str, attention: str) -> tuple[Path, dict]:
        name = variant if variant == "bert" else f"{variant}-{attention}"
        if reuse and (reuse / name / "best" / "glow.json").is_file():
            return reuse / name / "best", read_training(reuse / name / "best")
        c = copy.deepcopy(cfg)
        c["model"].update(variant=variant, attention=attention)
        t = time.perf_counter()
        best = GlowTrainer(GlowTrainConfig.from_dict(c), out / "models" / name).train(
            train_index, train_stats, train_docs, train_q, train_qrels)
        log.info("trained %s in %.0f s", name, time.perf_counter() - t)
        return best, read_training(best)

    variants = [v for v in args.variants.split(",") if v]
    models, info = {}, {}
    if args.attention == "auto":
        val = {}
        for mode in ("key", "row"):
            models[f"glow-{mode}"], info[f"glow-{mode}"] = trained("glow", mode)
            val[mode] = info[f"glow-{mode}"].get("state", {}).get("best", float("nan"))
        attention = max(val, key=lambda m: val[m])
        log.info("attention chosen on validation: %s (validation nDCG@10 key %.4f, row %.4f)", attention,
                 val["key"], val["row"])
    else:
        attention, val = args.attention, {}
    for v in variants:
        key = v if v == "bert" else f"{v}-{attention}"
        if key not in models:
            models[key], info[key] = trained(v, attention)

    test_coll = load_collection(args.test)
    test_index = build_index(test_coll, root=args.data_dir)
    test_stats = CollectionStats.load(test_index)
    docs = list(test_coll.docs_iter())
    queries, qrels = test_coll.queries(args.test_split), test_coll.qrels(args.test_split)
    runs, rates = {}, {}
    mp = MeanPoolEncoder("default", max_tokens=256, device=device, fields=test_index.fields)
    emb, rates["minilm"] = encode_corpus(docs, mp, out / "minilm.embeddings", 64)
    vectors, ids = load_embeddings(emb)
    runs["minilm"] = dense_search(faiss_index(vectors), ids, queries, encode(queries, mp, 64), args.depth, "minilm")
    for v in variants:
        key = v if v == "bert" else f"{v}-{attention}"
        model = GlowEncoder.load(models[key])
        runs[v], stats = glow_run(model, test_index, test_stats, docs, queries, out, v, args.depth, device=device)
        rates[v] = stats["docs_per_s"]
    for tag, run in runs.items():
        run.write(out / f"{tag}.run")

    # throughput: GLOW vs the same BERT (same layers, batch, fields) without weights, same documents
    sample = docs[: min(len(docs), 2048 if device.type == "cuda" else 512)]
    tp = {}
    for v in ("bert", "glow"):
        key = v if v == "bert" else f"glow-{attention}"
        if key in models:
            m = GlowEncoder.load(models[key])
            tp[v] = forward_throughput(m, featurizer_for(m, test_index, test_stats), sample, 64, device)

    cmp = compare(runs, qrels, ["nDCG@10", "R@100"], baseline="bert" if "bert" in runs else "minilm")
    lines = [f"# GLOW / BISON: train {args.train}/{args.train_split} → test {test_coll.name}/{args.test_split}",
             "", cmp.to_markdown(),
             f"- attention weighting: **{attention}**-side"
             + (f" (chosen on validation nDCG@10: key {val['key']:.4f}, row {val['row']:.4f})" if val else " (given)"),
             f"- device: {device}; layers {cfg['model'].get('num_layers', 3)}; fields {cfg['model']['fields']}",
             "- validation nDCG@10 per model: " + ", ".join(
                 f"{k} {i.get('state', {}).get('best', float('nan')):.4f}" for k, i in info.items()),
             "- training seconds: " + ", ".join(
                 f"{k} {i.get('state', {}).get('train_seconds', float('nan')):.0f}" for k, i in info.items())]
    if "bert" in tp and "glow" in tp:
        lines += ["", "| encoder (batch 64) | model-only docs/s | end-to-end docs/s (incl. featurization) |",
                  "|:--|--:|--:|",
                  f"| BERT | {tp['bert'][0]:.1f} | {tp['bert'][1]:.1f} |",
                  f"| GLOW | {tp['glow'][0]:.1f} | {tp['glow'][1]:.1f} |",
                  f"| **GLOW / BERT** | **{tp['glow'][0] / tp['bert'][0]:.3f}** | **{tp['glow'][1] / tp['bert'][1]:.3f}** |"]
    report = "\n".join(lines)
    write_report(out, cmp, report, f"GLOW on {test_coll.name}/{args.test_split}")
    write_manifest(out, {"glow": cfg, **vars(args)}, seed=cfg.get("seed", 13), attention=attention,
                   validation=val, throughput=tp, encode_docs_per_s=rates)


if __name__ == "__main__":
    from irglow.index.jvm import exit_process

    main()
    exit_process(0)  # no JVM + torch teardown at exit (see irglow.index.jvm.exit_process)
