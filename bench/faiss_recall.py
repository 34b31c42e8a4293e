"""The faiss index kinds against the exact flat index (issue 51): recall@k, memory, build and search time.

    python bench/faiss_recall.py --embeddings runs/demo/glow.embeddings       # a corpus encoding irglow wrote
    python bench/faiss_recall.py --generate 200000 --dim 384 --clusters 2000  # clustered vectors, any size

Queries are corpus vectors moved by noise (``--noise``), so each has near neighbours as a real query has.  Each
kind's top ``--depth`` is compared with flat's: recall@depth is the share of flat's top ``depth`` it also returns,
averaged over the queries; memory is the serialised index.  A markdown table on stdout.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from irglow.defaults import SEED
from irglow.dense.encode import faiss_index, load_embeddings


def clustered(n: int, dim: int, clusters: int, seed: int = SEED) -> np.ndarray:
    """Unit vectors around ``clusters`` random centres (a corpus's topics), in blocks (no float64 copy)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    out = np.empty((n, dim), dtype=np.float32)
    for lo in range(0, n, 100_000):
        m = min(100_000, n - lo)
        block = centres[rng.integers(0, clusters, m)] + 0.6 * rng.standard_normal((m, dim)).astype(np.float32)
        out[lo:lo + m] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def main() -> None:
    import faiss

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embeddings", help="a folder with embeddings.npy (a GLOW or checkpoint run's)")
    parser.add_argument("--generate", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--noise", type=float, default=0.3)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--nprobe", default="8,32,128")
    args = parser.parse_args()
    if args.embeddings:
        vectors, _ = load_embeddings(Path(args.embeddings))
        source = f"{args.embeddings} ({len(vectors):,} × {vectors.shape[1]})"
    else:
        vectors = clustered(args.generate, args.dim, args.clusters)
        source = f"{args.generate:,} clustered vectors × {args.dim} ({args.clusters:,} clusters)"
    rng = np.random.default_rng(7)
    picked = np.asarray(vectors[np.sort(rng.choice(len(vectors), args.queries, replace=False))], dtype=np.float32)
    queries = picked + args.noise * rng.standard_normal(picked.shape).astype(np.float32) / np.sqrt(vectors.shape[1])
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    depth = min(args.depth, len(vectors))

    def build(kind: str):
        t = time.perf_counter()
        index = faiss_index(vectors, kind)
        return index, time.perf_counter() - t, len(faiss.serialize_index(index)) / 2 ** 20

    def search(index):
        if hasattr(index, "hnsw"):  # as dense_search does: efSearch at least the depth
            index.hnsw.efSearch = max(index.hnsw.efSearch, depth)
        t = time.perf_counter()
        _, rows = index.search(queries, depth)
        return rows, (time.perf_counter() - t) / len(queries)

    flat, built, size = build("flat")
    exact, searched = search(flat)
    del flat
    truth = [set(r.tolist()) for r in exact]
    print(f"\n{source}; {len(queries)} queries (corpus vectors with noise {args.noise}); recall@{depth} against flat\n")
    print(f"| index | recall@{depth} | index MB | build s | search ms/query |")
    print("|---|---|---|---|---|")
    print(f"| flat | 1.0000 | {size:,.1f} | {built:.2f} | {searched * 1000:.2f} |")
    for kind in ("hnsw", "ivf", "ivfpq"):
        try:
            index, built, size = build(kind)
        except ValueError as e:  # ivfpq on a small corpus: said, not measured
            print(f"| {kind} | – ({e}) | | | |")
            continue
        for nprobe in [None] if kind == "hnsw" else [int(p) for p in args.nprobe.split(",")]:
            if nprobe is not None:
                index.nprobe = nprobe
            rows, searched = search(index)
            recall = float(np.mean([len(t & set(r.tolist())) / len(t) for t, r in zip(truth, rows)]))
            label = kind + (f" nprobe={nprobe}" if nprobe else "")
            print(f"| {label} | {recall:.4f} | {size:,.1f} | {built:.2f} | {searched * 1000:.2f} |")
        del index

if __name__ == "__main__":
    main()
