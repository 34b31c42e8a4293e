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
from irglow.models.twbert.search import twbert_search, weigh_queries
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
    training = json.loads((model_dir.parent / "training.json").read_text()) if (model_dir.parent / "training.json").is_file() else {}
    lines = [f"# TW-BERT: train {args.train}/{args.train_split} → test {test_coll.name}/{args.test_split}", "",
             cmp.to_markdown(),
             f"- model: {model_dir} (base {model.config.base_model}, bigrams {model.config.bigrams}, k3 {model.config.k3})",
             f"- training time: {f'{train_seconds:.0f} s' if train_seconds is not None else 'reused model'}"
             + (f"; validation nDCG@10 per epoch: {[round(h['val_ndcg@10'], 4) for h in training.get('state', {}).get('history', [])]}"
                f" (BM25 on the same validation queries: {training.get('state', {}).get('val_bm25', float('nan')):.4f})"
                if training else ""),
             f"- TW-BERT search throughput: {twbert_qps:.1f} q/s (weights + Lucene, depth {args.depth})"]
    report = "\n".join(lines)
    write_report(out, cmp, report, f"TW-BERT on {test_coll.name}/{args.test_split}")
    write_manifest(out, {"twbert": cfg, **vars(args)}, seed=cfg.get("seed", 13), model=str(model_dir),
                   train_seconds=train_seconds)


if __name__ == "__main__":
    main()
