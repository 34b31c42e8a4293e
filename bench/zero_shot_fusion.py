"""Zero-shot fusion without judgments: equal-weight RRF against fusion weighted per query by unsupervised
query-performance predictors (:mod:`irglow.runs.qpp`), each against its best single part and against BM25.

    python bench/zero_shot_fusion.py --data ../shared/data/nfcorpus --split dev --out out/zs-fusion/nfcorpus
    python bench/zero_shot_fusion.py --data ../shared/data/scifact --split test --out out/zs-fusion/scifact

Parts: the lexical runs (bm25, bm25f, tfidf) and the untouched MiniLM checkpoint (``bert``: all-MiniLM-L6-v2,
mean-pooled, exact faiss search) — the runs that need no training, so the comparison runs on any collection
(a BEIR folder or an ir_datasets id) in minutes.  ``--pipeline DIR`` takes the parts from a zero-shot pipeline's
folder instead (trained models included: the runs its ``all`` fused) and its ``all`` as the pipeline's default
(weights carried from the training collection's held-out queries, as its fusion notes say):

    make bench-best TRAIN=../shared/data/scifact TEST=../shared/data/nfcorpus TEST_SPLIT=dev OUT=out/zs FUSE=all \
        SET=rerank.enabled=false
    python bench/zero_shot_fusion.py --data ../shared/data/nfcorpus --split dev --out out/zs --pipeline out/zs
  Nothing of the evaluated collection's judgments is read
before the evaluation: the weights come from the runs' own scores and rankings.  Prints a markdown table
(nDCG@10, Δ to BM25 with the randomization test's mark, Δ to the best single part) and writes it to --out.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def parts(data: str, split: str, out: Path, depth: int, data_dir: str | None, sample: int | None = None):
    """{tag: Run} for the lexical runs and the checkpoint on ``split`` (``sample``: a seeded sample of that many
    judged queries), cached as run files in ``out``; the corpus vectors are cached beside them."""
    import random

    import numpy as np

    from irglow.data.collection import load_collection
    from irglow.dense.encode import MeanPoolEncoder, dense_search, encode, faiss_index
    from irglow.index.lucene_index import build_index
    from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
    from irglow.runs.trec import Run

    collection = load_collection(data)
    queries = collection.queries(split)
    if sample:
        judged = {q.query_id for q in collection.qrels(split)}
        queries = [q for q in queries if q.query_id in judged]
        queries = sorted(random.Random(13).sample(queries, min(sample, len(queries))), key=lambda q: q.query_id)
    out.mkdir(parents=True, exist_ok=True)
    runs = {}
    index = None
    for tag in ("bm25", "bm25f", "tfidf", "bert"):
        path = out / f"{tag}.{split}.run"
        if path.is_file():
            runs[tag] = Run.read(path)
            continue
        if tag == "bert":
            encoder = MeanPoolEncoder("default", max_tokens=256)
            cached = out / "corpus-vectors.npy"
            docs = list(collection.docs_iter())
            if cached.is_file():
                vectors = np.load(cached)
            else:
                vectors = encode(docs, encoder, 32, desc="encode corpus")
                np.save(cached, vectors)
            run = dense_search(faiss_index(vectors), [d.doc_id for d in docs], queries,
                               encode(queries, encoder, 64), depth, "bert")
        else:
            index = index or build_index(collection, root=data_dir)
            run = LexicalSearcher(index, LexicalConfig(tag, depth=depth)).search(queries, tag=tag)
        run.write(path)
        runs[tag] = run
    return collection, runs


def pipeline_parts(data: str, folder: Path):
    """(collection, {tag: Run} of the parts a pipeline's ``all`` fused, {"carried …": its all.run}) from its
    folder and the fusion's result in its manifest."""
    from irglow.data.collection import load_collection
    from irglow.outputs import read_results
    from irglow.runs.trec import Run

    fused = read_results(folder)["fusion:all"]
    runs = {t: Run.read(folder / f"{t}.run") for t in fused.parts}
    weights = "/".join(f"{w:.2f}" for w in fused.weights)
    name = f"all: {fused.method} {weights}" + (f" (carried from {fused.carried_from})"
                                                if fused.carried_from else f" ({fused.why or ''})")
    return load_collection(data), runs, {name: Run.read(folder / "all.run")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--split", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--measure", default="nDCG@10")
    ap.add_argument("--tune-data", help="the training collection the carried-over weights are tuned on")
    ap.add_argument("--tune-split", default="train")
    ap.add_argument("--tune-out", help="its cache folder (runs, corpus vectors)")
    ap.add_argument("--tune-queries", type=int, default=300, help="a seeded sample of its judged queries")
    ap.add_argument("--pipeline", help="a zero-shot pipeline's folder: its all's parts and its all (carried)")
    args = ap.parse_args()
    if args.pipeline and args.tune_data:
        ap.error("--pipeline brings its own carried weights (its all); --tune-data tunes the untrained parts")
    from irglow.eval.compare import compare
    from irglow.runs.fusion import fuse
    from irglow.runs.qpp import fuse_weighted, looks_dense, qpp_weights

    out = Path(args.out)
    fused, carried = {}, {}
    if args.pipeline:
        collection, runs, fused = pipeline_parts(args.data, Path(args.pipeline))
    else:
        collection, runs = parts(args.data, args.split, out, args.depth, args.data_dir)
    members = list(runs.values())
    dense = [looks_dense(r) for r in members]
    fused["rrf (equal)"] = fuse(members, "rrf", depth=args.depth, tag="rrf")
    for scheme in ("qpp", "diverse", "qpp+diverse"):
        fused[scheme] = fuse_weighted(members, qpp_weights(members, dense, scheme), depth=args.depth, tag=scheme)
    if args.tune_data:  # weights tuned on the training collection's queries, carried over unchanged
        from irglow.runs.fusion import tune_weights

        source, tune = parts(args.tune_data, args.tune_split, Path(args.tune_out), args.depth, args.data_dir,
                             args.tune_queries)
        tune_qrels = [q for q in source.qrels(args.tune_split) if q.query_id in tune["bm25"].ranking]
        for method in ("rrf", "wsum"):
            weights, score, _ = tune_weights([tune[t] for t in runs], tune_qrels, method, "min-max", args.measure,
                                             depth=args.depth)
            name = f"carried {method} {'/'.join(f'{w:g}' for w in weights)}"
            carried[name] = weights
            fused[name] = fuse(members, method, "min-max", list(weights), depth=args.depth, tag=method)
    qrels = collection.qrels(args.split)  # read only now, to evaluate
    cmp = compare({**runs, **fused}, qrels, [args.measure], baseline="bm25", permutations=10000)
    means = cmp.means[args.measure]
    best = max(runs, key=lambda t: means[t])
    # each fusion against its best single part too, the same test (Holm over the fusions)
    against_best = compare({best: runs[best], **fused}, qrels, [args.measure], baseline=best, permutations=10000)

    def mark(c, name) -> str:
        return ("▲" if c.deltas.loc[name, args.measure] > 0 else "▼") if c.significant(name, args.measure) else ""

    lines = [f"# Zero-shot fusion on {collection.name} / {args.split} ({cmp.n_queries} queries, {args.measure})", "",
             f"| run | {args.measure} | Δ bm25 | Δ best part ({best}) |", "|:--|--:|--:|--:|"]
    for name in [*runs, *fused]:
        vs_best = mark(against_best, name) if name in fused else ""
        lines.append(f"| {name} | {means[name]:.4f} {mark(cmp, name)} | {means[name] - means['bm25']:+.4f} | "
                     f"{means[name] - means[best]:+.4f} {vs_best} |")
    lines += ["", f"▲/▼ beside the score: {cmp.test_description()} against bm25; beside Δ best part: the same test "
                  f"of each fusion against {best}, Holm over the {len(fused)} fusions."]
    if carried:
        lines.append(f"carried: weights ({'/'.join(runs)}) tuned on {args.tune_queries} judged queries of "
                     f"{args.tune_data} / {args.tune_split}, nothing of this collection's judgments.")
    text = "\n".join(lines)
    print(text)
    out.mkdir(parents=True, exist_ok=True)
    (out / "zero-shot-fusion.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
