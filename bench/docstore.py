"""What a document store costs against the corpus held as a dict (issue 51): resident memory, build time, reads.

    python bench/docstore.py --data ../shared/data/scifact            # any BEIR folder or ir_datasets id
    python bench/docstore.py --generate 20000 --words 1000 --out out/docstore   # a generated BEIR folder

Each measurement runs in a fresh process (its peak resident memory is its own): ``dict`` builds
``{doc_id: Document}`` from ``docs_iter()`` as the stages did; ``store`` builds :func:`irglow.data.docstore.docs_store`
and reads every document through it in corpus order, a batch at a time, as corpus encoding does, then 10,000
random look-ups by id, as re-ranking does.  A markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

WORDS = [f"w{i}" for i in range(30000)]


def generate(folder: Path, n: int, words: int, seed: int = 7) -> Path:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"_id": f"d{i}", "title": " ".join(rng.choices(WORDS, k=8)),
                                "text": " ".join(rng.choices(WORDS, k=words))}) + "\n")
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q0", "text": "w1 w2"}) + "\n")
    (folder / "qrels").mkdir(exist_ok=True)
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq0\td0\t1\n")
    return folder


def measure(data: str, how: str) -> dict:
    from irglow.data.collection import load_collection
    from irglow.data.docstore import docs_store

    collection = load_collection(data)
    t = time.perf_counter()
    if how == "dict":
        docs = {d.doc_id: d for d in collection.docs_iter()}
        built = time.perf_counter() - t
        ids = list(docs)
        read = 0.0
    else:
        store = docs_store(collection)
        built = time.perf_counter() - t
        t = time.perf_counter()
        for _ in store.sequence():
            pass
        read = time.perf_counter() - t
        ids = store.ids()  # read from the file at the positions drawn: no list of every id
        docs = store
    rng = random.Random(3)
    wanted = [ids[rng.randrange(len(ids))] for _ in range(10000)]
    t = time.perf_counter()
    for lo in range(0, len(wanted), 100):  # a query's top 100 at a time
        [docs[d] for d in wanted[lo:lo + 100]]
    lookups = time.perf_counter() - t
    return {"documents": len(ids), "build_s": built, "read_all_s": read, "lookup_us": lookups / len(wanted) * 1e6,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="a BEIR folder or an ir_datasets id")
    parser.add_argument("--generate", type=int, help="documents of a generated BEIR folder (instead of --data)")
    parser.add_argument("--words", type=int, default=1000)
    parser.add_argument("--out", default="out/docstore")
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # data, how: one measurement (the child process)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(*args.one)))
        return
    data = args.data or str(generate(Path(args.out) / f"beir-{args.generate}x{args.words}", args.generate,
                                     args.words))
    size = sum(p.stat().st_size for p in Path(data).glob("corpus.jsonl")) / 2 ** 20 if Path(data).is_dir() else None
    rows = {}
    base = json.loads(subprocess.run([sys.executable, "-c", "import resource, json; import irglow.data.docstore; "
                                      "print(json.dumps(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))"],
                                     capture_output=True, text=True, check=True).stdout)
    for how in ("dict", "store"):
        done = subprocess.run([sys.executable, __file__, "--one", data, how], capture_output=True, text=True, check=True)
        rows[how] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"\n{data}: {rows['store']['documents']:,} documents" + (f", corpus.jsonl {size:,.0f} MB" if size else "")
          + f"; a process that imports irglow's document store: {base:,.0f} MB\n")
    print("| corpus as | peak RSS MB | above the import MB | build s | read all in order s | look-up µs |")
    print("|---|---|---|---|---|---|")
    for how, r in rows.items():
        print(f"| {how} | {r['peak_rss_mb']:,.0f} | {r['peak_rss_mb'] - base:,.0f} | {r['build_s']:.2f} | "
              f"{r['read_all_s']:.2f} | {r['lookup_us']:.1f} |")


if __name__ == "__main__":
    main()
