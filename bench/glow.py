"""GLOW / BISON benchmark: the papers' ablation grid trained on TRAIN, searched with faiss on TEST,
and hybrid runs with Lucene's BM25F.

    make bench-glow TRAIN=<data> TRAIN_SPLIT=<split> TEST=<data> TEST_SPLIT=<split> OUT=<dir>
                    [MODEL=<a previous OUT/models>] [VARIANTS=bert,glow]

Writes, for TEST:
* ``minilm.run`` — the starting checkpoint zero-shot as its authors use it (mean pooling, 256 tokens);
  ``minilm-fields.run`` / ``minilm-glow.run`` — the same checkpoint, untrained, in GLOW's multi-field
  input without / with the BM25/BM25F weighting: what the weights give a pretrained model before any step;
* ``bert.run``, ``glow.run`` and the ablation variants (``glow-idf``, ``glow-tw``, ``glow-us``, ``glow-wt``),
  all trained from the same checkpoint with the same settings, steps and seed;
* ``bm25f.run`` and ``bm25f+minilm.run``, ``bm25f+bert.run``, ``bm25f+glow.run`` — min-max score fusion, the
  convex weight tuned on the validation queries carved from TRAIN (never trained on, never TEST);
* a table with significance against ``bert``, and GLOW / BERT encoding throughput (target ≥ 0.95).

Settings come from configs/glow.toml (``--set key=value``).  ``--select key=v1,v2 …`` trains ``glow`` for
every combination and keeps the one with the best validation nDCG@10 for all variants; the attention
reading (key-side Eq. 2 or row-side Eq. 4) is chosen the same way (``--attention auto``).  Nothing is
chosen on TEST.  MODEL: a previous OUT/models folder (variants found there are reused).
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import logging
import time
from pathlib import Path

from common import section, train_test_parser

from irglow.config import apply_override, write_manifest
from irglow.data.collection import load_collection
from irglow.dense.encode import MeanPoolEncoder, dense_search, encode, encode_corpus, faiss_index, load_embeddings
from irglow.eval.compare import compare
from irglow.eval.report import write_report
from irglow.index.lucene_index import build_index
from irglow.index.stats import CollectionStats
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
from irglow.models.checkpoints import pick_device, read_training
from irglow.models.glow.model import VARIANTS, GlowConfig, GlowEncoder
from irglow.models.glow.runner import featurizer_for, forward_throughput, glow_run, hybrid_runs, validation_queries
from irglow.models.glow.train import GlowTrainConfig, GlowTrainer

log = logging.getLogger("bench.glow")


def _best(info: dict) -> float:
    return info.get("state", {}).get("best", float("nan"))


def main() -> None:
    ap = train_test_parser(__doc__, "folder of trained variant directories to reuse", "configs/glow.toml")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="models to train and test (default: the grid)")
    ap.add_argument("--attention", choices=["key", "row", "auto"], default="auto")
    ap.add_argument("--zero-shot-tokens", type=int, default=256, help="minilm.run: tokens per document")
    ap.add_argument("--select", action="append", default=[], metavar="KEY=V1,V2",
                    help="training settings to choose on validation, e.g. loss=contrastive,bce")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = section(args.config, "glow", args.set, ("variants", "fuse_with"))
    device = pick_device(cfg.get("device"))

    train_coll = load_collection(args.train)
    train_index = build_index(train_coll, root=args.data_dir)
    train_stats = CollectionStats.load(train_index)
    train_docs = {d.doc_id: d for d in train_coll.docs_iter()}
    train_q, train_qrels = train_coll.queries(args.train_split), train_coll.qrels(args.train_split)
    cfg.setdefault("model", {}).setdefault("fields", list(train_index.fields))
    reuse = Path(args.model) if args.model else None

    def trained(name: str, settings: dict) -> tuple[Path, dict]:
        if reuse and (reuse / name / "best" / "glow.json").is_file():
            return reuse / name / "best", read_training(reuse / name / "best")
        t = time.perf_counter()
        best = GlowTrainer(GlowTrainConfig.from_dict(settings), out / "models" / name).train(
            train_index, train_stats, train_docs, train_q, train_qrels)
        log.info("trained %s in %.0f s (validation nDCG@10 %.4f)", name, time.perf_counter() - t,
                 _best(read_training(best)))
        return best, read_training(best)

    def settings(variant: str, attention: str, base: dict | None = None) -> dict:
        c = copy.deepcopy(base or cfg)
        c["model"].update(variant=variant, attention=attention)
        return c

    # 1. training settings chosen on validation (with glow, key-side), then used for every model
    selection = []
    if args.select:
        grid = [[f"{k}={v}" for v in vs.split(",")] for k, _, vs in (s.partition("=") for s in args.select)]
        for combo in itertools.product(*grid):
            c = copy.deepcopy(cfg)
            for item in combo:
                apply_override(c, item)
            name = "select-" + "-".join(i.replace("=", "_").replace(".", "") for i in combo)
            path, i = trained(name, settings("glow", "key", c))
            selection.append((combo, _best(i), i.get("state", {}).get("train_seconds", float("nan")), path))
        chosen, _, _, chosen_path = max(selection, key=lambda x: x[1])
        for item in chosen:
            apply_override(cfg, item)
        log.info("training settings chosen on validation: %s", chosen)

    # 2. the attention reading, chosen on validation
    variants = [v for v in args.variants.split(",") if v]
    models, info, val = {}, {}, {}
    if selection:  # the chosen model *is* glow, key-side, with these settings: not trained twice
        models["glow-key"], info["glow-key"] = chosen_path, read_training(chosen_path)
    if args.attention == "auto" and any(v != "bert" for v in variants):
        for mode in ("key", "row"):
            if f"glow-{mode}" not in models:
                models[f"glow-{mode}"], info[f"glow-{mode}"] = trained(f"glow-{mode}", settings("glow", mode))
            val[mode] = _best(info[f"glow-{mode}"])
        attention = max(val, key=lambda m: val[m])
        log.info("attention chosen on validation: %s (key %.4f, row %.4f)", attention, val["key"], val["row"])
    else:
        attention = "key" if args.attention == "auto" else args.attention
    key_of = {v: v if v == "bert" else f"{v}-{attention}" for v in variants}
    for v in variants:
        if key_of[v] not in models:
            models[key_of[v]], info[key_of[v]] = trained(key_of[v], settings(v, attention))

    # 3. TEST: zero-shot checkpoint, trained models, lexical and hybrid runs
    same = Path(str(args.test)).resolve() == Path(str(args.train)).resolve() or args.test == args.train
    test_coll = train_coll if same else load_collection(args.test)
    test_index = train_index if same else build_index(test_coll, root=args.data_dir)
    test_stats = train_stats if same else CollectionStats.load(test_index)
    docs = list(test_coll.docs_iter())
    queries, qrels = test_coll.queries(args.test_split), test_coll.qrels(args.test_split)
    any_model = next(iter(models.values()), None)
    tune_q, tune_qrels = validation_queries(any_model, train_q, train_qrels) if any_model else ([], [])
    runs, rates, tune_runs = {}, {}, {}

    def dense(tag: str, model: GlowEncoder) -> None:
        runs[tag], st = glow_run(model, test_index, test_stats, docs, queries, out, tag, args.depth, device=device,
                                 also={"tune": tune_q} if same else None)
        rates[tag] = st["docs_per_s"]
        if same:
            tune_runs[tag] = st["also"].get("tune")
        elif tune_q:  # tuning queries live in the training collection: search its corpus too
            r, _ = glow_run(model, train_index, train_stats, list(train_docs.values()), tune_q, out / "tuning", tag,
                            args.depth, device=device)
            tune_runs[tag] = r

    mp = MeanPoolEncoder("default", max_tokens=args.zero_shot_tokens, device=device, fields=test_index.fields)
    emb, rates["minilm"] = encode_corpus(docs, mp, out / "minilm.embeddings", 64)
    vectors, ids = load_embeddings(emb)
    runs["minilm"] = dense_search(faiss_index(vectors), ids, queries, encode(queries, mp, 64), args.depth, "minilm")
    if tune_q:
        if same:
            tune_runs["minilm"] = dense_search(faiss_index(vectors), ids, tune_q, encode(tune_q, mp, 64), args.depth)
        else:
            e2, _ = encode_corpus(list(train_docs.values()), mp, out / "tuning" / "minilm.embeddings", 64)
            v2, i2 = load_embeddings(e2)
            tune_runs["minilm"] = dense_search(faiss_index(v2), i2, tune_q, encode(tune_q, mp, 64), args.depth)
    untrained = GlowConfig(**{**cfg["model"], "attention": attention})
    for tag, variant in (("minilm-fields", "bert"), ("minilm-glow", "glow")):
        m = GlowEncoder.from_pretrained_bert(dataclasses.replace(untrained, variant=variant))
        if variant == "glow":  # the weights' query-length normaliser, as training sets it
            m.config.weights["avg_query_len"] = featurizer_for(m, train_index, train_stats).weighter.set_avg_query_len(
                [q.text for q in train_q])
        dense(tag, m)
    for v in variants:
        dense(v, GlowEncoder.load(models[key_of[v]]))
    for tag, run in runs.items():
        run.write(out / f"{tag}.run")

    lx = LexicalSearcher(test_index, LexicalConfig("bm25f", depth=args.depth))
    runs["bm25f"] = lx.search(queries, tag="bm25f")
    runs["bm25f"].write(out / "bm25f.run")
    fusion = {}
    if tune_q:
        lex_tune = LexicalSearcher(train_index, LexicalConfig("bm25f", depth=args.depth)).search(tune_q)
        pairs = {t: (runs[t], tune_runs[t]) for t in ("minilm", "bert", "glow") if t in runs and tune_runs.get(t)}
        fused, fusion = hybrid_runs(pairs, test_index, queries, tune_q, tune_qrels, "bm25f", depth=args.depth,
                                    out_dir=out, lexical_runs=(runs["bm25f"], lex_tune))
        runs.update(fused)

    # throughput: GLOW vs the same BERT (same layers, batch, fields) without weights, same documents
    sample = docs[: min(len(docs), 2048 if device.type == "cuda" else 512)]
    tp = {}
    for v in ("bert", "glow"):
        if key_of.get(v) in models:
            m = GlowEncoder.load(models[key_of[v]])
            tp[v] = forward_throughput(m, featurizer_for(m, test_index, test_stats), sample, 64, device)

    baseline = "bert" if "bert" in runs else "minilm"
    cmp = compare(runs, qrels, ["nDCG@10", "R@100"], baseline=baseline)
    layers = cfg["model"].get("num_layers") or "all (the checkpoint's)"
    lines = [f"# GLOW / BISON: train {args.train}/{args.train_split} → test {test_coll.name}/{args.test_split}",
             "", cmp.to_markdown(),
             f"- attention weighting: **{attention}**-side"
             + (f" (chosen on validation nDCG@10: key {val['key']:.4f}, row {val['row']:.4f})" if val else " (given)"),
             f"- device: {device}; layers {layers}; fields {cfg['model']['fields']}; loss {cfg.get('loss', 'contrastive')}"
             f"; α ramp {cfg.get('alpha_ramp', 0.0)}",
             "- validation nDCG@10 (the checkpoint at step 0 → the kept model, its step): " + ", ".join(
                 f"{k} {_start(i):.4f} → {_best(i):.4f} (step {i.get('state', {}).get('best_step')})"
                 for k, i in info.items()),
             "- training seconds: " + ", ".join(
                 f"{k} {i.get('state', {}).get('train_seconds', float('nan')):.0f}" for k, i in info.items())]
    if selection:
        lines += ["", "| training settings (glow, key-side) | validation nDCG@10 | s |", "|:--|--:|--:|"]
        lines += [f"| {' '.join(c)} | {s:.4f} | {t:.0f} |" for c, s, t, _ in selection]
    if fusion:
        lines += ["", "| hybrid run | weights (bm25f, dense) | tuning nDCG@10 | tuning queries |", "|:--|:--|--:|--:|"]
        lines += [f"| {t} | {', '.join(f'{w:.2f}' for w in f['weights'])} | {f['tuning_nDCG@10']:.4f} | "
                  f"{f['tuning_queries']} |" for t, f in fusion.items()]
    if "bert" in tp and "glow" in tp:
        lines += ["", "| encoder (batch 64) | model-only docs/s | end-to-end docs/s (incl. featurization) |",
                  "|:--|--:|--:|",
                  f"| BERT | {tp['bert'][0]:.1f} | {tp['bert'][1]:.1f} |",
                  f"| GLOW | {tp['glow'][0]:.1f} | {tp['glow'][1]:.1f} |",
                  f"| **GLOW / BERT** | **{tp['glow'][0] / tp['bert'][0]:.3f}** | **{tp['glow'][1] / tp['bert'][1]:.3f}** |"]
    report = "\n".join(lines)
    write_report(out, cmp, report, f"GLOW on {test_coll.name}/{args.test_split}",
                 {n: i.get("state", {}).get("history", []) for n, i in info.items()})
    write_manifest(out, {"glow": cfg, **vars(args)}, seed=cfg.get("seed", 13), attention=attention,
                   validation=val, selection=[(list(c), s) for c, s, _, _ in selection], fusion=fusion,
                   throughput=tp, encode_docs_per_s=rates)


def _start(info: dict) -> float:
    hist = info.get("state", {}).get("history", [])
    return hist[0]["val_ndcg@10"] if hist and hist[0].get("step") == 0 else float("nan")


if __name__ == "__main__":
    from irglow.index.jvm import exit_process

    main()
    exit_process(0)  # no JVM + torch teardown at exit (see irglow.index.jvm.exit_process)
