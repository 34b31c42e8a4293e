"""TW-BERT benchmark: train on TRAIN (or reuse --model), evaluate on TEST against BM25 (± RM3).

    make bench-twbert TRAIN=<data> TRAIN_SPLIT=<split> TEST=<data> TEST_SPLIT=<split> OUT=<dir> [MODEL=<dir>]

Zero-shot is the same command with a TEST collection other than TRAIN. Training settings come
from configs/twbert.toml (override with --set key=value); nothing is tuned on the test split.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from common import section, train_test_parser

from irglow.config import write_manifest
from irglow.data.collection import load_collection
from irglow.eval.compare import compare
from irglow.eval.report import write_report
from irglow.index.lucene_index import build_index
from irglow.index.stats import CollectionStats
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
from irglow.models.twbert.model import TWBert
from irglow.models.twbert.search import prior_queries, twbert_search, weigh_queries
from irglow.models.twbert.train import TrainConfig, Trainer


def main() -> None:
    ap = train_test_parser(__doc__, "an existing TW-BERT model directory: skip training", "configs/twbert.toml")
    ap.add_argument("--no-rm3", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = section(args.config, "twbert", args.set, ("rm3", "model_dir"))

    train_seconds = None
    if args.model:
        model_dir = Path(args.model)
    else:
        train_coll = load_collection(args.train)
        train_index = build_index(train_coll, root=args.data_dir)
        t = time.perf_counter()
        model_dir = Trainer(TrainConfig.from_dict(cfg), out / "train").train(
            train_index, CollectionStats.load(train_index), train_coll.queries(args.train_split),
            train_coll.qrels(args.train_split))
        train_seconds = time.perf_counter() - t
    model = TWBert.load(model_dir)

    test_coll = load_collection(args.test)
    index = build_index(test_coll, root=args.data_dir)
    queries, qrels = test_coll.queries(args.test_split), test_coll.qrels(args.test_split)
    k1, b = model.config.k1, model.config.b
    runs = {"bm25": LexicalSearcher(index, LexicalConfig("bm25", k1=k1, b=b, depth=args.depth)).search(queries)}
    # the same uni-/bi-gram Lucene query with the fixed prior weights and no model: what learning adds
    runs["bm25-ngram"] = twbert_search(None, index, queries, depth=args.depth, tag="bm25-ngram",
                                       weighted=prior_queries(index, queries, model.config), config=model.config)
    t = time.perf_counter()
    weighted = weigh_queries(model, index, queries)  # timed with the search: both are query-time work
    runs["twbert"] = twbert_search(model, index, queries, depth=args.depth, tag="twbert", weighted=weighted)
    twbert_qps = len(queries) / (time.perf_counter() - t)
    if not args.no_rm3:
        runs["bm25-rm3"] = LexicalSearcher(index, LexicalConfig("bm25", k1=k1, b=b, depth=args.depth, rm3=True)
                                           ).search(queries, tag="bm25-rm3")
        runs["twbert-rm3"] = twbert_search(model, index, queries, depth=args.depth, tag="twbert-rm3", expansion="rm3",
                                          weighted=weighted)
    for tag, run in runs.items():
        run.write(out / f"{tag}.run")
    cmp = compare(runs, qrels, ["nDCG@10", "AP", "R@100", "R@1000"], baseline="bm25")
    for frame in (cmp.means, cmp.pvalues, cmp.deltas):
        frame.rename(columns={"AP": "MAP"}, inplace=True)
    lines = [f"# TW-BERT: train {args.train}/{args.train_split} → test {test_coll.name}/{args.test_split}", "",
             cmp.to_markdown(),
             f"- model: {model_dir} (base {model.config.base_model}, head {model.config.head}, bigrams "
             f"{model.config.bigrams}, priors uni {model.config.unigram_prior} / bi {model.config.bigram_prior}, "
             f"k3 {model.config.k3})",
             f"- training time: {f'{train_seconds:.0f} s' if train_seconds is not None else 'reused model'}",
             *training_lines(model_dir.parent / "training.json"),
             f"- TW-BERT search throughput: {twbert_qps:.1f} q/s (weights + Lucene, depth {args.depth})"]
    report = "\n".join(lines)
    history = model_dir.parent / "training.json"
    write_report(out, cmp, report, f"TW-BERT on {test_coll.name}/{args.test_split}",
                 {"twbert": json.loads(history.read_text())["state"]["history"]} if history.is_file() else None)
    write_manifest(out, {"twbert": cfg, **vars(args)}, seed=cfg.get("seed", 13), model=str(model_dir),
                   train_seconds=train_seconds)


def training_lines(path: Path) -> list[str]:
    """Validation nDCG@10 after stage 1 and at stage 2's best, and which model was kept."""
    if not path.is_file():
        return []
    state = json.loads(path.read_text())["state"]
    hist = state.get("history", [])
    stage1 = [h for h in hist if h["stage"] == 1]
    stage2 = [h for h in hist if h["stage"] == 2 and h["val_ndcg@10"] is not None]
    best2 = max(stage2, key=lambda h: h["val_ndcg@10"]) if stage2 else None
    kept = state.get("best_at") or {}
    return [f"- validation nDCG@10 (re-ranking BM25's candidates of {len(hist) and 'the validation queries'}): "
            f"BM25 {state['val_bm25']:.4f}, fixed prior {state['val_prior']:.4f}, after stage 1 "
            f"{stage1[-1]['val_ndcg@10']:.4f}" if stage1 else "- no stage-1 evaluation recorded",
            f"- stage 2 best: {best2['val_ndcg@10']:.4f} at step {best2['step']}" if best2 else "- stage 2 did not run",
            f"- kept: the stage-{kept.get('stage')} model (step {kept.get('step')}); "
            f"training-query nDCG@10 {hist[0]['train_ndcg@10']:.4f} → {hist[-1]['train_ndcg@10']:.4f} "
            f"over {hist[-1]['step']} steps" if hist else ""]


if __name__ == "__main__":
    from irglow.index.jvm import exit_process

    main()
    exit_process(0)  # no JVM + torch teardown at exit (see irglow.index.jvm.exit_process)
