"""How irglow's costs grow with the collection: index build, statistics export, lexical search,
GLOW/BERT encoding, faiss search and peak memory against the number of documents.

    make bench-scale [SIZES=10000,100000,1000000] [NEURAL_MAX=100000] OUT=<dir>

Collections come from the demo generator, scaled (the same vocabulary model, topics and fields;
``--data`` slices a real collection instead).  Each size runs in its own process, so peak memory
(``ru_maxrss``: Python, torch and the JVM together) is that size's.  Per size:

- index build and statistics export (seconds, documents/s);
- lexical search at depth 1000 for each system, on a fixed sample of queries (queries/s);
- encoding (GLOW and BERT, the packaged MiniLM) on a fixed sample of documents (documents/s; a full
  corpus costs N / rate), only up to ``--neural-max`` documents: the look-ups into Lucene's term
  dictionary are the part that could grow with N, so the rate is measured on each size's index;
- faiss search (flat and HNSW) over N vectors of the encoder's dimension, queries/s, and HNSW build
  time.  Random unit vectors: flat cost depends only on N and d; HNSW's also on the data, and random
  high-dimensional vectors are its hard case (an upper bound for real embeddings).

Writes ``scale.md`` / ``scale.csv`` (a row per measurement, a column per size, the fitted exponent
of cost ~ N^k over the sizes) and ``scale.png`` (log-log).  Cost is seconds (per query for search,
per document for encoding) or MB; k > 1.15 on a total cost is flagged super-linear.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from irglow.defaults import DEPTH, SEED


def demo_spec(n_docs: int, seed: int = SEED) -> str:
    """A demo collection of about ``n_docs`` documents: 85 % topic documents (12 per topic), 5 %
    round-ups, 10 % background; the name pool grows so topics keep distinct names."""
    roundups, background = n_docs // 20, n_docs // 10
    topics = max(10, (n_docs - roundups - background) // 12)
    pool = max(36, math.ceil(math.sqrt(2 * topics)))
    return (f"demo:seed={seed},n_topics={topics},docs_per_topic=12,n_roundups={roundups},"
            f"n_background={background},name_pool={pool}")


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure_one(n_docs: int, out: Path, data: str | None, neural: bool, n_queries: int, n_encode: int,
                threads: int, hnsw: bool = True) -> dict:
    from irglow.data.collection import load_collection
    from irglow.index.lucene_index import IndexConfig, build_index
    from irglow.index.stats import CollectionStats
    from irglow.lexical.searchers import LexicalConfig, LexicalSearcher

    res: dict = {"n_docs": n_docs}
    if data:
        from irglow.data.collection import SampledCollection

        base = load_collection(data)
        collection = SampledCollection(base, ["test"], max_docs=n_docs)
    else:
        collection = load_collection(demo_spec(n_docs))
    t = time.perf_counter()
    docs = list(collection.docs_iter())
    res["generate_s"] = time.perf_counter() - t
    res["n_docs"] = len(docs)
    t = time.perf_counter()
    index = build_index(collection, IndexConfig(threads=threads), root=out / "data", force=True)
    res["index_s"] = time.perf_counter() - t
    res["rss_after_index_mb"] = _rss_mb()
    from irglow.index.lucene_index import LuceneIndex

    t = time.perf_counter()
    LuceneIndex.open(index.path).ids  # noqa: B018 - the id table written with the index, memory-mapped
    res["doc_ids_s"] = time.perf_counter() - t
    t = time.perf_counter()
    stats = CollectionStats.load(index)
    res["stats_s"] = time.perf_counter() - t
    queries = collection.queries("test")
    queries = random.Random(13).sample(queries, min(n_queries, len(queries)))
    res["queries"] = len(queries)
    for system in ("bm25", "bm25-mf", "bm25f", "tfidf"):
        searcher = LexicalSearcher(index, LexicalConfig(system, depth=DEPTH, threads=threads))
        searcher.search(queries[:5])  # warm the JIT
        t = time.perf_counter()
        searcher.search(queries)
        res[f"search_{system}_s_per_q"] = (time.perf_counter() - t) / len(queries)
    res["rss_after_search_mb"] = _rss_mb()
    if neural:
        import torch

        from irglow.models.glow.model import GlowConfig, GlowEncoder
        from irglow.models.glow.runner import featurizer_for, forward_throughput

        torch.set_num_threads(threads)
        sample = random.Random(13).sample(docs, min(n_encode, len(docs)))
        dim = None
        for variant in ("bert", "glow"):
            model = GlowEncoder.from_pretrained_bert(GlowConfig(variant=variant, fields=list(index.fields)))
            _, end_to_end = forward_throughput(model, featurizer_for(model, index, stats), sample, repeats=1,
                                               device=torch.device("cpu"))
            res[f"encode_{variant}_s_per_doc"] = 1.0 / end_to_end
            dim = model.bert.config.hidden_size
        res["rss_after_encode_mb"] = _rss_mb()
    else:
        dim = 384
    from irglow.dense.encode import faiss_index

    rng = np.random.default_rng(13)
    vectors = np.empty((len(docs), dim), dtype=np.float32)
    for i in range(0, len(docs), 100_000):  # in blocks: no float64 copy of the whole matrix
        block = rng.standard_normal((min(100_000, len(docs) - i), dim), dtype=np.float32)
        vectors[i:i + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    qv = rng.standard_normal((len(queries), dim), dtype=np.float32)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    import faiss

    faiss.omp_set_num_threads(threads)
    for kind in ("flat", "hnsw") if hnsw else ("flat",):
        t = time.perf_counter()
        fx = faiss_index(vectors, kind)
        res[f"faiss_{kind}_build_s"] = time.perf_counter() - t
        t = time.perf_counter()
        fx.search(qv, min(1000, len(docs)))
        res[f"faiss_{kind}_s_per_q"] = (time.perf_counter() - t) / len(queries)
        del fx
    res["peak_rss_mb"] = _rss_mb()
    res["neural"], res["hnsw"] = neural, hnsw
    return res


LABELS = {  # key → (row label, kind): total costs are judged for super-linear growth
    "index_s": ("index build, s", "total"),
    "doc_ids_s": ("doc-id table, s", "total"),
    "stats_s": ("statistics export, s", "total"),
    "search_bm25_s_per_q": ("bm25 search, s/query", "per-query"),
    "search_bm25-mf_s_per_q": ("bm25-mf search, s/query", "per-query"),
    "search_bm25f_s_per_q": ("bm25f search, s/query", "per-query"),
    "search_tfidf_s_per_q": ("tfidf search, s/query", "per-query"),
    "encode_bert_s_per_doc": ("BERT encoding, s/doc", "per-doc"),
    "encode_glow_s_per_doc": ("GLOW encoding, s/doc", "per-doc"),
    "faiss_flat_s_per_q": ("faiss flat search, s/query", "per-query"),
    "faiss_hnsw_build_s": ("faiss HNSW build, s", "total"),
    "faiss_hnsw_s_per_q": ("faiss HNSW search, s/query", "per-query"),
    "peak_rss_mb": ("peak memory, MB", "total"),
}


def exponent(ns: list[int], values: list[float]) -> float | None:
    pts = [(math.log(n), math.log(v)) for n, v in zip(ns, values) if v and v > 0]
    if len(pts) < 2:
        return None
    x, y = zip(*pts)
    return float(np.polyfit(x, y, 1)[0])


def _fmt(v: float) -> str:
    """Three significant digits, but no exponent for the large totals (seconds, MB); no thousands
    separator, so scale.csv's cells still parse as numbers."""
    return f"{v:.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def report(results: list[dict], out: Path) -> str:
    import pandas as pd

    results = sorted(results, key=lambda r: r["n_docs"])
    ns = [r["n_docs"] for r in results]
    rows, fits = {}, {}
    for key, (label, kind) in LABELS.items():
        vals = [r.get(key) for r in results]
        if all(v is None for v in vals):
            continue
        pairs = [(n, v) for n, v in zip(ns, vals) if v is not None]
        k = exponent([p[0] for p in pairs], [p[1] for p in pairs])
        flag = ""
        if k is not None and kind == "total" and k > 1.15:
            flag = " ⚠ super-linear"
        rows[label] = [("–" if v is None else _fmt(v)) for v in vals] + \
                      ["–" if k is None else f"{k:.2f}{flag}"]
        fits[label] = (pairs, k)
    cols = [f"{n:,} docs" for n in ns] + ["k (cost ~ N^k)"]
    table = pd.DataFrame.from_dict(rows, orient="index", columns=cols)
    lexical_only = [f"{n:,}" for n, r in zip(ns, results) if not r.get("neural")]
    no_hnsw = [f"{n:,}" for n, r in zip(ns, results) if not r.get("hnsw", True)]
    note = (f"Index and search with {results[0].get('threads', 2)} threads; {results[0]['queries']} sampled queries at "
            f"depth 1000. Encoding rate on a fixed document sample (end to end: featurization + model, CPU). faiss over "
            f"random unit vectors of the encoder's dimension. Peak memory: the process's ru_maxrss (Python, torch, JVM)."
            + (f" Sizes without encoding (lexical and faiss only, `--neural-max`): {', '.join(lexical_only)}."
               if lexical_only else "")
            + (f" Sizes without HNSW (`--hnsw-max`): {', '.join(no_hnsw)}." if no_hnsw else ""))
    md = "# How costs grow with the collection\n\n" + table.to_markdown(disable_numparse=True) + "\n\n" + note + "\n"
    (out / "scale.md").write_text(md)
    table.to_csv(out / "scale.csv")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for label, (pairs, k) in fits.items():
        ax = axes[0] if LABELS[next(key for key, v in LABELS.items() if v[0] == label)][1] == "total" else axes[1]
        ax.loglog([p[0] for p in pairs], [p[1] for p in pairs], marker="o",
                  label=f"{label} (k={k:.2f})" if k is not None else label)
    for ax, title in zip(axes, ("total cost", "per query / per document")):
        ax.set_xlabel("documents")
        ax.set_title(title)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "scale.png", dpi=120)
    return md


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--neural-max", type=int, default=100_000, help="largest size whose encoding is measured")
    ap.add_argument("--hnsw-max", type=int, default=None, help="largest size whose HNSW index is built (default: all)")
    ap.add_argument("--data", help="slice this collection (BEIR folder or ir_datasets id) instead of the demo")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--encode-docs", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", required=True)
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: measure one size in this process
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.one:
        res = measure_one(args.one, out, args.data, args.one <= args.neural_max, args.queries, args.encode_docs,
                          args.threads, args.hnsw_max is None or args.one <= args.hnsw_max)
        res["threads"] = args.threads
        (out / f"scale-{args.one}.json").write_text(json.dumps(res, indent=1))
        return
    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        cached = out / f"scale-{n}.json"
        if not cached.is_file():  # a finished size is kept: a rerun adds sizes, it does not repeat them
            cmd = [sys.executable, __file__, "--one", str(n), "--out", str(out), "--neural-max", str(args.neural_max),
                   "--queries", str(args.queries), "--encode-docs", str(args.encode_docs), "--threads", str(args.threads)]
            if args.hnsw_max is not None:
                cmd += ["--hnsw-max", str(args.hnsw_max)]
            if args.data:
                cmd += ["--data", args.data]
            print(f"== {n:,} documents", flush=True)
            subprocess.run(cmd, check=True)
        results.append(json.loads(cached.read_text()))
        print(report(results, out), flush=True)
    from irglow.config import write_manifest

    write_manifest(out, vars(args), seed=SEED)


if __name__ == "__main__":
    from irglow.index.jvm import exit_process

    main()
    exit_process(0)  # no JVM + torch teardown at exit (see irglow.index.jvm.exit_process)
