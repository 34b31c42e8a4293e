"""Re-ranker benchmark: train monoBERT and NRM-F on TRAIN (or reuse --model), re-rank TEST's BM25 top k.

    make bench-rerank TRAIN=<data> TRAIN_SPLIT=<split> TEST=<data> TEST_SPLIT=<split> OUT=<dir> [MODEL=<OUT/models>]

Writes ``bm25.run``, ``monobert.run``, ``nrmf.run`` and the NRM-F ablations (``nrmf-<field>`` one field
only, ``nrmf-shared-query`` one query representation, ``nrmf-no-mask`` missing instances averaged in,
``nrmf-field-dropout`` 0.1 per field, or ``nrmf-no-field-dropout`` where the config turns it on), each re-ranking BM25's top ``--rerank-depth``; ``bm25+<model>`` fuses a
re-ranked run with BM25 (min-max, convex weight tuned on the held-out training queries, never on test).
Significance against ``bm25``, training times and re-ranking throughput (pairs/s) in the report.
Trained models go to OUT/models; ``--model`` reuses them, so zero-shot on another TEST needs no training.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from common import train_test_parser

from irglow.config import load_config, merged, write_manifest
from irglow.data.collection import load_collection
from irglow.eval.compare import compare
from irglow.eval.report import write_report
from irglow.index.lucene_index import build_index
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
from irglow.models.checkpoints import read_training
from irglow.models.rerank.rerank import load_reranker, rerank
from irglow.models.rerank.train import RerankTrainConfig, RerankTrainer
from irglow.runs.fusion import fuse_tuned
from irglow.runs.trec import Run

log = logging.getLogger("bench.rerank")


def ablations(fields: list[str], model: dict) -> dict[str, dict]:
    """The paper's ablations, each one switch away from the configured NRM-F (``model``: its settings)."""
    out = {"nrmf": {}}
    if len(fields) > 1:
        out.update({f"nrmf-{f}": {"fields": [f]} for f in fields})
    out.update({"nrmf-shared-query": {"query_per_field": False}, "nrmf-no-mask": {"mask_instances": False}})
    if model.get("default_field_dropout", 0.0) > 0 or any(model.get("field_dropout", {}).values()):
        out["nrmf-no-field-dropout"] = {"default_field_dropout": 0.0, "field_dropout": {}}
    else:
        out["nrmf-field-dropout"] = {"default_field_dropout": 0.1}
    return out


def main() -> None:
    ap = train_test_parser(__doc__, "folder of trained model directories (a previous OUT/models) to reuse",
                           "configs/rerank.toml")
    ap.add_argument("--rerank-depth", type=int, default=100, help="re-rank BM25's top k (default 100)")
    ap.add_argument("--models", default="monobert,nrmf", help="monobert, nrmf (with its ablations), or both")
    ap.add_argument("--no-ablations", action="store_true", help="NRM-F with all fields only")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = load_config(args.config) if Path(args.config).is_file() else {}
    for item in args.set:  # --set monobert.epochs=2, --set nrmf.model.dim=128
        from irglow.config import apply_override

        apply_override(cfg, item)
    reuse = Path(args.model) if args.model else None

    train_coll = load_collection(args.train)
    train_index = build_index(train_coll, root=args.data_dir)
    train_docs = {d.doc_id: d for d in train_coll.docs_iter()}
    train_q, train_qrels = train_coll.queries(args.train_split), train_coll.qrels(args.train_split)
    fields = list(train_index.fields)
    same = Path(str(args.test)).resolve() == Path(str(args.train)).resolve() or args.test == args.train
    test_coll = train_coll if same else load_collection(args.test)
    test_index = train_index if same else build_index(test_coll, root=args.data_dir)
    docs = train_docs if same else {d.doc_id: d for d in test_coll.docs_iter()}
    queries, qrels = test_coll.queries(args.test_split), test_coll.qrels(args.test_split)

    systems: dict[str, tuple[str, dict]] = {}
    kinds = [k for k in args.models.split(",") if k]
    if "monobert" in kinds:
        systems["monobert"] = ("monobert", {})
    if "nrmf" in kinds:
        grid = {"nrmf": {}} if args.no_ablations else ablations(fields, cfg.get("nrmf", {}).get("model", {}))
        for name, model in grid.items():
            systems[name] = ("nrmf", model)

    lx = LexicalConfig("bm25", depth=args.depth)
    runs = {"bm25": LexicalSearcher(test_index, lx).search(queries, tag="bm25")}
    runs["bm25"].write(out / "bm25.run")
    tune_bm25 = None
    info, rates, fusion = {}, {}, {}
    for name, (kind, model_over) in systems.items():
        settings = merged(cfg.get(kind, {}), {"kind": kind, "model": model_over})
        settings.pop("enabled", None)
        if reuse and (reuse / name / "best").is_dir():
            best = reuse / name / "best"
        else:
            t = time.perf_counter()
            best = RerankTrainer(RerankTrainConfig.from_dict(settings), out / "models" / name).train(
                train_index, train_docs, train_q, train_qrels, fields=settings["model"].get("fields", fields))
            log.info("trained %s in %.0f s", name, time.perf_counter() - t)
        info[name] = read_training(best)
        model = load_reranker(best)
        t = time.perf_counter()
        runs[name] = rerank(model, runs["bm25"], queries, docs, args.rerank_depth, tag=name, desc=name)
        pairs = sum(min(args.rerank_depth, len(r)) for r in runs["bm25"].ranking.values())
        rates[name] = pairs / (time.perf_counter() - t)
        runs[name].write(out / f"{name}.run")
        # fusion with BM25, weight tuned on the model's held-out training queries (re-ranked the same way)
        val_ids = set(info[name].get("val_query_ids", []))
        tune_q = [q for q in train_q if q.query_id in val_ids]
        if name in ("monobert", "nrmf") and tune_q:
            tune_qrels = [r for r in train_qrels if r.query_id in val_ids]
            tune_bm25 = LexicalSearcher(train_index, lx).search(tune_q, tag="bm25")
            tune_run = rerank(model, tune_bm25, tune_q, train_docs, args.rerank_depth, desc=f"{name} (tuning)")
            tag = f"bm25+{name}"
            top = lambda r: Run({q: d[: args.rerank_depth] for q, d in r.ranking.items()}, r.tag)  # noqa: E731
            # only the re-ranked block is fused: the kept-below tail's placeholder scores would stretch min-max
            runs[tag], fusion[tag] = fuse_tuned([runs["bm25"], top(runs[name])], [tune_bm25, top(tune_run)],
                                                tune_qrels, "wsum", "min-max", depth=args.depth, tag=tag)
            runs[tag].write(out / f"{tag}.run")

    cmp = compare(runs, qrels, ["nDCG@10", "AP", "R@100"], baseline="bm25")
    lines = [f"# Re-rankers: train {args.train}/{args.train_split} → test {test_coll.name}/{args.test_split}", "",
             cmp.to_markdown(),
             f"- every re-ranker re-ranks BM25's top {args.rerank_depth}; fields {fields}",
             "- validation nDCG@10 (untrained → kept, step): " + ", ".join(
                 f"{n} {_val(i, 0):.4f} → {i.get('state', {}).get('best', float('nan')):.4f} "
                 f"({i.get('state', {}).get('best_step')})" for n, i in info.items()),
             "- training seconds: " + ", ".join(
                 f"{n} {i.get('state', {}).get('train_seconds', float('nan')):.0f}" for n, i in info.items()),
             "- re-ranking throughput (query-document pairs/s, featurization included): " + ", ".join(
                 f"{n} {r:.1f}" for n, r in rates.items()),
             *(f"- {t}: BM25 weight {f['weights'][0]:.2f}, model {f['weights'][1]:.2f} (tuning nDCG@10 "
               f"{f['tuning_nDCG@10']:.4f} on {f['tuning_queries']} held-out training queries)"
               for t, f in fusion.items())]
    write_report(out, cmp, "\n".join(lines), f"re-rankers on {test_coll.name}/{args.test_split}",
                 {n: i.get("state", {}).get("history", []) for n, i in info.items()})
    write_manifest(out, {"rerank": cfg, **vars(args)}, seed=13, training={n: i.get("state") for n, i in info.items()},
                   pairs_per_s=rates, fusion=json.loads(json.dumps(fusion, default=str)))


def _val(info: dict, i: int) -> float:
    hist = info.get("state", {}).get("history", [])
    return hist[i]["val_ndcg@10"] if len(hist) > i else float("nan")


if __name__ == "__main__":
    from irglow.index.jvm import exit_process

    main()
    exit_process(0)
