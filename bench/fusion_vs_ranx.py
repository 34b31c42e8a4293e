"""Does ``irglow.runs.fusion`` fuse like ranx?  Same runs in, fused scores and rankings compared.

    pip install ranx   # not an irglow dependency (see irglow/runs/fusion.py for why)
    python bench/fusion_vs_ranx.py RUN RUN [RUN…] [--qrels QRELS]

Reports, per method, the largest absolute score difference over every fused (query, document)
and the share of queries whose top 10 agree; with --qrels, nDCG@10 from both and the weights each
library's tuner picks.  z-score differs on purpose: ranx gives a document a run missed a 0 (the
run's mean), irglow the run's lowest z-score; the table shows by how much.
"""

from __future__ import annotations

import argparse
import time

from irglow.runs.fusion import fuse, tune_weights
from irglow.runs.trec import Run, trec_order


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--qrels")
    args = ap.parse_args()
    import ranx

    ours_runs = [Run.read(p) for p in args.runs]
    ranx_runs = [ranx.Run(r.as_dict(), name=f"r{i}") for i, r in enumerate(ours_runs)]
    rows = []
    for method, norm, ranx_method, params in (("rrf", "none", "rrf", {"k": 60}),
                                              ("wsum", "min-max", "wsum", {"weights": [0.5] * len(ours_runs)}),
                                              ("wsum", "z-score", "wsum", {"weights": [0.5] * len(ours_runs)})):
        t = time.perf_counter()
        ours = fuse(ours_runs, method, norm, None if method == "rrf" else [0.5] * len(ours_runs), depth=10**9)
        t_ours = time.perf_counter() - t
        t = time.perf_counter()
        theirs = ranx.fuse(runs=ranx_runs, norm=None if norm == "none" else ("zmuv" if norm == "z-score" else norm),
                           method=ranx_method, params=params).to_dict()
        t_ranx = time.perf_counter() - t
        diff, agree = 0.0, 0
        for q, docs in ours.ranking.items():
            other = theirs.get(q, {})
            diff = max([diff] + [abs(s - other.get(d, float("nan"))) for d, s in docs if d in other])
            agree += [d for d, _ in docs[:10]] == [d for d, _ in trec_order(list(other.items()))[:10]]
        rows.append(f"| {method} {norm} | {diff:.2e} | {agree / max(1, len(ours.ranking)):.3f} | {t_ours:.2f} | {t_ranx:.2f} |")
    print("| fusion | max abs score diff | top-10 identical | irglow s | ranx s |\n|:--|--:|--:|--:|--:|")
    print("\n".join(rows))
    if args.qrels:
        from irglow.data.trec import read_qrels

        qrels = read_qrels(args.qrels)
        w, score, _ = tune_weights(ours_runs, qrels, "wsum", "min-max", step=0.1)
        best = ranx.optimize_fusion(qrels=ranx.Qrels.from_file(args.qrels, kind="trec"), runs=ranx_runs,
                                    norm="min-max", method="wsum", metric="ndcg@10", show_progress=False)
        print(f"\ntuned min-max weights (step 0.1): irglow {w} (nDCG@10 {score:.4f}), ranx {best['weights']}")


if __name__ == "__main__":
    main()
