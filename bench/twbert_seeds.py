"""TW-BERT over several seeds: how much the kept model depends on the seed, for each training recipe (issue 53).

    python bench/twbert_seeds.py --train ../shared/data/scifact --test ../shared/data/scifact --test-split test \\
        --zero-shot ../shared/data/nfcorpus@dev --seeds 13,14,15,16,17 \\
        --variant "average=twbert.average_last=5" --variant "4-fold=twbert.folds=4" --out out/twbert-seeds

For each variant (a name and pipeline overrides, ``;``-separated) and each seed, TW-BERT
(``configs/regressions/twbert.toml``: configs/twbert.toml's recipe, ``twbert.seed`` = the seed, which also draws the
held-out validation queries or the folds) trains once on TRAIN's train split; the model the training keeps is
evaluated on TEST (in domain) and on every ``--zero-shot`` collection, each run beside BM25 and ``bm25-ngram`` (the
same query with the fixed prior: uni-grams 1, bi-grams 0.2).  Printed per variant: each seed's nDCG@10 with its
difference to ``bm25`` and ``bm25-ngram`` and the randomization test's p-values (paired, 10,000 sign flips), then
the mean, the spread (max − min) and the number of seeds significantly above each (p < 0.05).  Nothing is tuned on
TEST or the zero-shot collections: every choice reads the training collection's queries alone.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np

CONFIG = "configs/regressions/twbert.toml"


def irglow_run(sets: list[str]) -> None:
    cmd = [sys.executable, "-m", "irglow", "run", "--config", CONFIG]
    for s in sets:
        cmd += ["--set", s]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")


def scores(folder: Path, collection: str, split: str) -> dict[str, np.ndarray]:
    """Per-query nDCG@10 of twbert, bm25 and bm25-ngram (every judged query; a query a run misses scores 0)."""
    from irglow.data.collection import load_collection
    from irglow.eval.measures import parse_measures, per_query
    from irglow.runs.trec import Run

    qrels = load_collection(collection).qrels(split)
    measure = parse_measures(["nDCG@10"])
    judged = sorted({r.query_id for r in qrels})
    out = {}
    for tag in ("twbert", "bm25", "bm25-ngram"):
        values = per_query(measure, qrels, Run.read(folder / f"{tag}.run"))["nDCG@10"]
        out[tag] = np.array([values.get(q, 0.0) for q in judged])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", required=True, help="the training collection (BEIR folder or ir_datasets id)")
    parser.add_argument("--train-split", default="train")
    parser.add_argument("--test", required=True, help="the in-domain test collection")
    parser.add_argument("--test-split", default="test")
    parser.add_argument("--zero-shot", action="append", default=[], metavar="COLLECTION@SPLIT")
    parser.add_argument("--seeds", default="13,14,15,16,17")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=KEY=VALUE;KEY=VALUE",
                        help="a training recipe: its name and overrides (default: configs/twbert.toml as it is)")
    parser.add_argument("--out", default="out/twbert-seeds")
    parser.add_argument("--set", action="append", default=[], help="more pipeline overrides, e.g. twbert.lr=3e-5")
    args = parser.parse_args()
    from irglow.eval.significance import randomization_pvalues

    out = Path(args.out).resolve()
    seeds = [int(s) for s in args.seeds.split(",")]
    targets = [("in domain", args.test, args.test_split)] + [
        ("zero-shot", *(z.rsplit("@", 1) if "@" in z else (z, "test"))) for z in args.zero_shot]
    variants = [(v.split("=", 1)[0], [x for x in v.split("=", 1)[1].split(";") if x]) for v in args.variant] or \
        [("default", [])]
    results: dict[tuple[str, str, int], dict[str, np.ndarray]] = {}
    for variant, sets in variants:
        for seed in seeds:
            trained = out / f"{variant}-seed{seed}"
            common = [f"collection.train={args.train}", f"collection.train_split={args.train_split}",
                      f"twbert.seed={seed}", *args.set, *sets]
            # trains and evaluates the kept model on TEST, then on every zero-shot collection
            irglow_run(common + [f"collection.name={args.test}", f"collection.test_split={args.test_split}",
                                 f"output.dir={trained}"])
            train_dir = next((trained / "twbert-train").glob("*/training.json")).parent
            model = train_dir / ("average" if (train_dir / "average").is_dir() else "best")
            for kind, coll, split in targets:
                folder = trained if kind == "in domain" else out / f"{variant}-seed{seed}-{Path(coll).name}-{split}"
                if kind != "in domain":
                    irglow_run(common + [f"collection.name={coll}", f"collection.test_split={split}",
                                         f"twbert.model_dir={model}", f"output.dir={folder}"])
                results[variant, coll, seed] = scores(folder, coll, split)
                print(f"seed {seed} {variant:<10} {coll}/{split}: twbert "
                      f"{results[variant, coll, seed]['twbert'].mean():.4f}", flush=True)
    for kind, coll, split in targets:
        print(f"\n### {coll} / {split} ({kind}; trained on {args.train}/{args.train_split})\n")
        print("| variant | seed | twbert nDCG@10 | − bm25 (p) | − bm25-ngram (p) |")
        print("|:--|--:|--:|--:|--:|")
        for variant, _ in variants:
            means, above = [], {"bm25": 0, "bm25-ngram": 0}
            for seed in seeds:
                s = results[variant, coll, seed]
                cells = []
                for base in ("bm25", "bm25-ngram"):
                    d = s["twbert"] - s[base]
                    p = float(randomization_pvalues(d, 10_000, seed=0)[0])
                    above[base] += int(d.mean() > 0 and p < 0.05)
                    cells.append(f"{d.mean():+.4f} ({p:.3f})")
                means.append(s["twbert"].mean())
                print(f"| {variant} | {seed} | {s['twbert'].mean():.4f} | {' | '.join(cells)} |")
            base = results[variant, coll, seeds[0]]
            print(f"| **{variant}** | mean of {len(seeds)} | **{np.mean(means):.4f}** (spread {max(means) - min(means):.4f};"
                  f" bm25 {base['bm25'].mean():.4f}, bm25-ngram {base['bm25-ngram'].mean():.4f}) | "
                  f"{above['bm25']}/{len(seeds)} significant | {above['bm25-ngram']}/{len(seeds)} significant |")


if __name__ == "__main__":
    main()
