"""The cost table (issue 40): each of irglow's hot paths against its reference, in one process where it can be,
interleaved round by round, medians of ``--rounds`` rounds (the machine may be shared: read the ratios).

    python bench/speed.py --data ../shared/data/scifact --split test --out out/speed
    (or: make bench-speed DATA=<BEIR folder | ir_datasets id> SPLIT=<split>)

Rows:

* BM25 search at depth 1000: irglow's ``bm25`` against Lucene's ``IndexSearcher.search`` alone (hits never read
  out) and Pyserini's ``batch_search``;
* evaluation of a generated ``--eval-queries`` × 1,000 run: ``irglow eval`` against ir_measures
  (``read_trec_run`` + ``calc_aggregate``), each in its own process, on both measure sets, time and peak memory;
* MiniLM encoding of ``--docs`` documents at 96 and 256 tokens: irglow (length-bucketed batches) in fp32 and int8
  (``precision="int8"``, ONNX Runtime) against a bare transformers forward pass in the collection's order;
* GLOW encoding (BM25-weighted attention) of the same documents in fp32 and int8, through the stage's encoders;
* monoBERT re-ranking of ``--pairs`` (query, document) pairs: irglow's ``rerank`` in fp32 and int8 against a bare
  forward pass on the same tokens (an untrained monoBERT: speed does not depend on the weights).

Works on any collection irglow can load; nothing here knows which one it is given.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

from eval import MEASURE_SETS, _child, generate, irglow_eval_code, ir_measures_code  # noqa: E402
from lexical import lucene_ceiling, pyserini_direct  # noqa: E402
from irglow.config import write_manifest  # noqa: E402
from irglow.data.collection import load_collection  # noqa: E402
from irglow.data.records import Query  # noqa: E402
from irglow.index.lucene_index import IndexConfig, build_index  # noqa: E402
from irglow.defaults import BM25_B, BM25_K1, DEPTH  # noqa: E402
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher  # noqa: E402
from irglow.models import int8  # noqa: E402
from irglow.runs.trec import Run  # noqa: E402
from irglow.utils.atomic import atomic_write_text  # noqa: E402


def interleaved(contenders: dict, rounds: int) -> dict[str, float]:
    """Median seconds of each callable, run one after the other in each round (one warm-up call first)."""
    for fn in contenders.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(v) for name, v in times.items()}


def lexical_rows(collection, queries, args, rows: list) -> None:
    index = build_index(collection, IndexConfig(threads=args.threads), root=args.data_dir)
    searcher = LexicalSearcher(index, LexicalConfig("bm25", k1=BM25_K1, b=BM25_B, depth=DEPTH, threads=args.threads))
    contenders = {"irglow": lambda: searcher.search(queries)}
    lucene = lucene_ceiling(index, queries, DEPTH, args.threads, BM25_K1, BM25_B)
    if lucene is not None:
        contenders["lucene"] = lucene
    # irglow and Lucene alone interleaved over at least 9 rounds (a fraction of a second each); Pyserini, 50×
    # slower, on its own afterwards, so its garbage does not land in the others' rounds
    s = interleaved(contenders, max(args.rounds, 9))
    s.update(interleaved({"pyserini": lambda: pyserini_direct(index, queries, DEPTH, args.threads, BM25_K1, BM25_B)},
                         min(args.rounds, 2)))
    qps = {k: len(queries) / v for k, v in s.items()}
    rows.append((f"BM25 search, {len(queries)} queries × depth {DEPTH}", f"{qps['irglow']:,.0f} q/s",
                 f"Lucene alone {qps['lucene']:,.0f} q/s" if "lucene" in qps else "Lucene alone: n/a (no javac)",
                 f"{qps['irglow'] / qps['lucene']:.2f}× Lucene (target ≥ 0.8)" if "lucene" in qps else ""))
    rows.append(("", "", f"Pyserini batch_search {qps['pyserini']:,.0f} q/s",
                 f"{qps['irglow'] / qps['pyserini']:.1f}× Pyserini"))


def eval_rows(args, rows: list) -> None:
    folder = Path(args.out) / "eval-data"
    run = generate(folder, args.eval_queries, 1000, 1, 20, 200_000)[0]
    qrels = folder / "qrels.txt"
    for label, measures in MEASURE_SETS.items():
        reference = ir_measures_code(run, qrels, measures)
        ours = irglow_eval_code(run, qrels, measures, "--no-judged", "--format", "csv")
        got: dict[str, list] = {"ir_measures": [], "irglow": []}
        for _ in range(args.rounds):
            for name, code in (("ir_measures", reference), ("irglow", ours)):
                s, mb, _ = _child(code)
                got[name].append((s, mb))
        (a, amb), (b, bmb) = ([statistics.median(x[0] for x in got[n]), max(x[1] for x in got[n])]
                              for n in ("irglow", "ir_measures"))
        rows.append((f"`irglow eval`, {args.eval_queries:,} × 1,000 run, {label}", f"{a:.2f} s, {amb:,.0f} MB",
                     f"ir_measures {b:.2f} s, {bmb:,.0f} MB",
                     f"time {a / b:.2f} (target ≤ 0.5), memory {amb / bmb:.2f} (target ≤ 1.0)"))


def longest_docs(collection, n: int) -> list:
    """The collection's ``n`` longest documents: batches as full as the token budget allows."""
    from irglow.dense.encode import text_length

    return sorted(collection.docs_iter(), key=text_length, reverse=True)[:n]


def encoding_rows(collection, args, rows: list) -> None:
    from irglow.dense.encode import MeanPoolEncoder, encode

    docs = longest_docs(collection, args.docs)
    docs = [docs[i] for i in torch.randperm(len(docs), generator=torch.Generator().manual_seed(0)).tolist()]
    for tokens in (96, 256):
        fp32 = MeanPoolEncoder("default", max_tokens=tokens, device="cpu")
        model, tokenizer = fp32.model, fp32.tokenizer
        pooled = int8.MeanPooled(model).eval()

        @torch.no_grad()
        def bare():
            for i in range(0, len(docs), args.batch):
                enc = tokenizer([d.contents(None) for d in docs[i:i + args.batch]], padding=True, truncation=True,
                                max_length=tokens, return_tensors="pt")
                pooled(**enc)

        contenders = {"irglow fp32": lambda: encode(docs, fp32, args.batch), "bare": bare}
        if int8.available():
            q8 = MeanPoolEncoder("default", max_tokens=tokens, device="cpu", precision="int8")
            contenders["irglow int8"] = lambda: encode(docs, q8, args.batch)
        s = interleaved(contenders, args.rounds)
        rate = {k: len(docs) / v for k, v in s.items()}
        rows.append((f"MiniLM encoding, {len(docs)} documents, {tokens} tokens", f"fp32 {rate['irglow fp32']:.1f} docs/s",
                     f"bare transformers forward {rate['bare']:.1f} docs/s",
                     f"{rate['irglow fp32'] / rate['bare']:.2f}"))
        if "irglow int8" in rate:
            a, b = encode(docs[:64], fp32, args.batch), encode(docs[:64], q8, args.batch)
            cos = float((a * b).sum(1).min())
            rows.append(("", f"int8 {rate['irglow int8']:.1f} docs/s", f"irglow fp32 {rate['irglow fp32']:.1f} docs/s",
                         f"**{rate['irglow int8'] / rate['irglow fp32']:.2f}×** (target ≥ 1.8); cosine to fp32 ≥ "
                         f"{cos:.4f}"))


def glow_rows(collection, queries, args, rows: list) -> None:
    """GLOW (MiniLM with BM25-weighted attention, untrained: speed does not depend on the weights) encoding the same
    documents at its CPU budget, fp32 and int8, through the stage's own encoders."""
    from irglow.dense.encode import encode
    from irglow.index.stats import CollectionStats
    from irglow.models.glow.model import GlowConfig, GlowEncoder
    from irglow.models.glow.runner import featurizer_for, glow_encoders

    index = build_index(collection, IndexConfig(threads=args.threads), root=args.data_dir)
    stats = CollectionStats.load(index)
    model = GlowEncoder.from_pretrained_bert(GlowConfig(variant="glow", fields=list(index.fields))).eval()
    feat = featurizer_for(model, index, stats)
    model.config.weights["avg_query_len"] = feat.weighter.set_avg_query_len([q.text for q in queries])
    docs = longest_docs(collection, args.docs)
    encoders = {p: glow_encoders(model, feat, torch.device("cpu"), p)[0]
                for p in (("fp32", "int8") if int8.available() else ("fp32",))}
    s = interleaved({p: (lambda e=e: encode(docs, e, args.batch)) for p, e in encoders.items()}, args.rounds)
    rate = {k: len(docs) / v for k, v in s.items()}
    tokens = sum(int(b) for b in feat.documents(docs[:64])["attention_mask"].sum(1)) / min(64, len(docs))
    if "int8" in rate:
        a, b = encode(docs[:64], encoders["fp32"], args.batch), encode(docs[:64], encoders["int8"], args.batch)
        rows.append((f"GLOW encoding (weighted attention), {len(docs)} documents, {tokens:.0f} tokens on average",
                     f"int8 {rate['int8']:.1f} docs/s", f"fp32 {rate['fp32']:.1f} docs/s",
                     f"**{rate['int8'] / rate['fp32']:.2f}×**; cosine to fp32 ≥ {float((a * b).sum(1).min()):.4f}"))


def rerank_rows(collection, queries, args, rows: list) -> None:
    from irglow.models.rerank.monobert import MonoBERT, MonoBERTConfig
    from irglow.models.rerank.rerank import rerank

    docs = list(collection.docs_iter())
    per_query = 32
    n_queries = max(1, args.pairs // per_query)
    picked = [q for q in queries if q.text.strip()][:n_queries] or [Query("q", "relevance")]
    run = Run({q.query_id: [(d.doc_id, float(-i)) for i, d in enumerate(docs[j * per_query:(j + 1) * per_query])]
               for j, q in enumerate(picked)})
    by_id = {d.doc_id: d for d in docs[:len(picked) * per_query]}
    model = MonoBERT.from_pretrained_bert(MonoBERTConfig()).eval()
    text = {q.query_id: q.text for q in picked}
    pairs = [(q, d) for q, ranked in run.ranking.items() for d, _ in ranked]
    batches = [model.featurize([text[q] for q, _ in pairs[i:i + args.batch]], [by_id[d] for _, d in pairs[i:i + args.batch]])
               for i in range(0, len(pairs), args.batch)]
    tokens = sum(int(b["attention_mask"].sum()) for b in batches) / len(pairs)

    @torch.no_grad()
    def bare():
        for b in batches:
            model(**b)

    contenders = {"irglow fp32": lambda: rerank(model, run, picked, by_id, per_query, args.batch, device=torch.device("cpu")),
                  "bare": bare}
    if int8.available():
        contenders["irglow int8"] = lambda: rerank(model, run, picked, by_id, per_query, args.batch, device=torch.device("cpu"),
                                                   precision="int8")
    s = interleaved(contenders, args.rounds)
    rate = {k: len(pairs) / v for k, v in s.items()}
    rows.append((f"monoBERT re-ranking, {len(pairs)} pairs, {tokens:.0f} tokens on average",
                 f"fp32 {rate['irglow fp32']:.1f} pairs/s", f"bare forward on the same tokens {rate['bare']:.1f} pairs/s",
                 f"{rate['irglow fp32'] / rate['bare']:.2f}"))
    if "irglow int8" in rate:
        rows.append(("", f"int8 {rate['irglow int8']:.1f} pairs/s", f"irglow fp32 {rate['irglow fp32']:.1f} pairs/s",
                     f"**{rate['irglow int8'] / rate['irglow fp32']:.2f}×** (target ≥ 1.8)"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--split", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--eval-queries", type=int, default=2000)
    ap.add_argument("--docs", type=int, default=256, help="documents encoded per row")
    ap.add_argument("--pairs", type=int, default=256, help="(query, document) pairs re-ranked")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--only", default="lexical,eval,encode,glow,rerank", help="rows to measure (comma-separated)")
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    only = set(args.only.split(","))
    collection = load_collection(args.data)
    queries = collection.queries(args.split)
    rows: list[tuple[str, str, str, str]] = []
    for name, fn in (("lexical", lambda: lexical_rows(collection, queries, args, rows)),
                     ("eval", lambda: eval_rows(args, rows)), ("encode", lambda: encoding_rows(collection, args, rows)),
                     ("glow", lambda: glow_rows(collection, queries, args, rows)),
                     ("rerank", lambda: rerank_rows(collection, queries, args, rows))):
        if name in only:
            fn()
    from tabulate import tabulate

    table = tabulate(rows, headers=["work", "irglow", "reference", "ratio"], tablefmt="github", disable_numparse=True)
    text = (f"# Costs: {collection.name} / {args.split}, {args.threads} threads, medians of {args.rounds} interleaved "
            f"rounds\n\n{table}\n" + ("" if int8.available() else
                                      "\nint8 rows need ONNX Runtime: pip install 'irglow[int8]'\n"))
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "speed.md", text)
    write_manifest(out, vars(args), rows=[list(r) for r in rows])


if __name__ == "__main__":
    from irglow.index.jvm import exit_process

    main()
    exit_process(0)
