"""What a lexical command costs before and around its first queries (issue 70's ≤ 1 s target): ``irglow search`` of
10 queries, a fresh process each time, with and without the JVM's start-up cache (:mod:`irglow.index.jvm_aot`).

    python bench/search_start.py --sizes 10000,100000 --out out/search-start     (make bench-search-start)
    python bench/search_start.py --collection <BEIR folder> --split test --queries 10

``--sizes`` generates MS MARCO-shaped folders (:func:`bench.msmarco_scale.generate`: url, title, body) with a split
``ten`` of 10 queries; ``--collection`` takes any BEIR folder or ir_datasets id and a split, from which the first
``--queries`` queries are searched.  The index is built first (which records the cache once per Java and Anserini),
then each setting is timed ``--repeat`` times, alternating, and the best and the median wall time are printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from msmarco_scale import generate  # noqa: E402


def timed(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def measure(collection: str, split: str, data: Path, out: Path, repeat: int, topics: Path | None) -> dict:
    base = dict(os.environ)
    subprocess.run([sys.executable, "-m", "irglow", "index", collection, "--data-dir", str(data)], env=base,
                   check=True, stdout=subprocess.DEVNULL)
    cmd = [sys.executable, "-m", "irglow", "search", collection, "--system", "bm25", "--data-dir", str(data),
           "-o", str(out / "search.run"), *(["--topics", str(topics)] if topics else ["--split", split])]
    times: dict[str, list[float]] = {"with the start-up cache": [], "without (IRGLOW_JVM_AOT=0)": []}
    timed(cmd, base)  # the first search after indexing: files in the page cache for both settings
    for _ in range(repeat):
        for label, switch in zip(times, ("1", "0")):
            times[label].append(timed(cmd, dict(base, IRGLOW_JVM_AOT=switch)))
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="",
                    help="generated MS MARCO-shaped collections of these sizes (comma-separated)")
    ap.add_argument("--collection", action="append", default=[], help="a BEIR folder or ir_datasets id (repeatable)")
    ap.add_argument("--split", default="test", help="the query split of --collection")
    ap.add_argument("--queries", type=int, default=10, help="queries searched from --collection's split")
    ap.add_argument("--repeat", type=int, default=8, help="processes timed per setting")
    ap.add_argument("--out", default="out/search-start", help="generated collections, the data folder and runs")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sizes = [int(n) for n in args.sizes.split(",") if n]
    jobs = [(str(generate(out / f"msmarco-shaped-{n}", n)), "ten", None) for n in sizes]
    for c in args.collection:
        from irglow.data.collection import load_collection

        queries = load_collection(c).queries(args.split)[:args.queries]
        topics = out / f"topics-{len(jobs)}.tsv"
        topics.write_text("".join(f"{q.query_id}\t{' '.join(q.text.split())}\n" for q in queries), encoding="utf-8")
        jobs.append((c, args.split, topics))
    rows = []
    for collection, split, topics in jobs:
        times = measure(collection, split, out / "data", out, args.repeat, topics)
        for label, ts in times.items():
            rows.append((Path(collection).name, label, min(ts), statistics.median(ts)))
    print(f"\n`irglow search`, 10 queries, a fresh process each ({args.repeat} per setting, alternating)\n")
    print("| collection | JVM | best s | median s |\n|:--|:--|--:|--:|")
    for name, label, best, median in rows:
        print(f"| {name} | {label} | {best:.2f} | {median:.2f} |")


if __name__ == "__main__":
    main()
