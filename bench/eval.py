"""Evaluation speed at MS MARCO scale: ``irglow eval`` and ``irglow compare`` against ir_measures alone.

Generates (once, seeded) ``--runs`` TREC runs of ``--queries`` × ``--depth`` lines and qrels with
``--judged`` judgments per query, then times, each in its own process (so peak memory is its own):

* ``ir_measures``: ``read_trec_run`` + ``calc_aggregate`` on one run file (what a user of the library
  alone does), with the measures below;
* ``irglow eval``: the same file and measures through the CLI path (columnar reader + ir_measures);
* ``irglow compare``: all runs with the randomization test (``--permutations``), Judged@10 and risk.

Prints a markdown table (seconds, peak MB of the largest process: the command or one of its workers) and the ratio lines ``irglow eval / ir_measures`` and
``compare of N runs``; writes ``eval.md`` and ``eval.csv`` into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

# the common set (pytrec_eval alone), and one with RR@10 (ir_measures routes it to its msmarco provider, slower)
MEASURE_SETS = {"nDCG@10 AP R@100": ["nDCG@10", "AP", "R@100"],
                "nDCG@10 RR@10 R@1000 AP": ["nDCG@10", "RR@10", "R@1000", "AP"]}


def generate(folder: Path, queries: int, depth: int, runs: int, judged: int, docs: int, seed: int = 0) -> list[Path]:
    """Runs and qrels written with numpy (a few seconds per run), reused when already there."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    qids = np.array([f"q{i}" for i in range(queries)], dtype=object)
    names = np.array([f"d{i}" for i in range(docs)], dtype=object)
    qrels = folder / "qrels.txt"
    if not qrels.is_file():
        with open(qrels, "w") as f:
            for q in range(queries):
                picked = rng.choice(docs, judged, replace=False)
                labels = rng.integers(0, 3, judged)
                f.write("".join(f"{qids[q]} 0 {names[d]} {r}\n" for d, r in zip(picked, labels)))
    paths = []
    for r in range(runs):
        path = folder / f"run{r:02d}.run"
        paths.append(path)
        if path.is_file():
            continue
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            for q in range(queries):
                picked = rng.choice(docs, depth, replace=False)
                scores = np.sort(rng.random(depth))[::-1] * 10 + r * 0.01
                ranks = np.arange(1, depth + 1)
                f.write("".join(f"{qids[q]} Q0 {names[d]} {k} {s!r} r{r}\n"
                                for d, k, s in zip(picked, ranks, scores.tolist())))
        tmp.rename(path)
    return paths


def ir_measures_code(run: Path, qrels: Path, measures: list[str]) -> str:
    """What a user of ir_measures alone writes: read both files, aggregate; prints the means as JSON."""
    return (f"import ir_measures\nrun = ir_measures.read_trec_run({str(run)!r})\n"
            f"qrels = ir_measures.read_trec_qrels({str(qrels)!r})\n"
            f"agg = ir_measures.calc_aggregate([ir_measures.parse_measure(m) for m in {measures!r}], qrels, run)\n"
            f"print(json.dumps({{str(k): v for k, v in agg.items()}}))")


def irglow_eval_code(run: Path, qrels: Path, measures: list[str], *options: str) -> str:
    """``irglow eval`` of one run through its CLI path (``options``: more arguments)."""
    return (f"from irglow.cli import main\nmain(['eval', {str(run)!r}, '--qrels', {str(qrels)!r}, "
            f"'-m', {' '.join(measures)!r}, *{list(options)!r}])")


def _child(code: str) -> tuple[float, float, str]:
    """Run ``code`` in a fresh interpreter; it prints its own wall time. Returns (seconds, peak MB, output)."""
    # the peak of this process from /proc (VmHWM starts again at exec; ru_maxrss would carry the parent's peak
    # over, which is the bench's own when the bench holds a JVM or a model), or of its largest worker
    wrapped = ("import resource, time, json\nt0 = time.perf_counter()\n" + code +
               "\nhwm = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM'))"
               "\nprint(json.dumps({'s': time.perf_counter() - t0, "
               "'mb': max(hwm, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024}))")
    out = subprocess.run([sys.executable, "-c", wrapped], capture_output=True, text=True, check=True)
    last = json.loads(out.stdout.strip().splitlines()[-1])
    return last["s"], last["mb"], out.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=7000)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--judged", type=int, default=20, help="judgments per query")
    ap.add_argument("--docs", type=int, default=200_000, help="distinct document ids")
    ap.add_argument("--permutations", type=int, default=10_000)
    ap.add_argument("--data", default="out/bench-eval/data", help="where the generated runs are kept")
    ap.add_argument("--out", default="out/bench-eval")
    args = ap.parse_args()

    t = time.perf_counter()
    paths = generate(Path(args.data), args.queries, args.depth, args.runs, args.judged, args.docs)
    print(f"{args.runs} runs of {args.queries} × {args.depth} lines in {args.data} ({time.perf_counter() - t:.0f} s)")
    qrels = Path(args.data) / "qrels.txt"
    run0 = paths[0]
    rows, ratios = [], []
    for label, measure_list in MEASURE_SETS.items():
        s, mb, out = _child(ir_measures_code(run0, qrels, measure_list))
        reference = json.loads(out.strip().splitlines()[-2])
        rows.append((f"ir_measures (read_trec_run + calc_aggregate), 1 run, {label}", s, mb))
        base_s, base_mb = s, mb
        s, mb, out = _child(irglow_eval_code(run0, qrels, measure_list, "--no-judged", "--format", "csv"))
        rows.append((f"irglow eval, 1 run, {label}", s, mb))
        header, values = [line.split(",") for line in out.strip().splitlines()[:2]]
        ours = {h: float(v) for h, v in zip(header, values) if h in measure_list}
        diff = max(abs(ours[m] - reference[m]) for m in measure_list)
        ratios.append(f"{label}: irglow eval / ir_measures: time {s / base_s:.2f} (target ≤ 0.50), peak memory "
                      f"{mb / base_mb:.2f} (target ≤ 1.00); largest difference of a mean to ir_measures' {diff:.1e}")
    measures = " ".join(MEASURE_SETS["nDCG@10 RR@10 R@1000 AP"])
    s, mb, _ = _child(irglow_eval_code(run0, qrels, MEASURE_SETS["nDCG@10 RR@10 R@1000 AP"]))
    rows.append(("irglow eval, 1 run, + Judged@10", s, mb))
    s, mb, _ = _child("from irglow.cli import main\nmain(['compare', " + ", ".join(repr(str(p)) for p in paths) +
                      f", '--qrels', {str(qrels)!r}, '-m', {measures!r}, '--test', 'randomization', "
                      f"'--permutations', '{args.permutations}', '--format', 'csv'])")
    rows.append((f"irglow compare, {len(paths)} runs, randomization ({args.permutations:,} permutations), "
                 f"Judged@10, risk", s, mb))
    compare_s = s

    from tabulate import tabulate

    table = tabulate([(n, f"{s:.1f}", f"{mb:,.0f}") for n, s, mb in rows], headers=["step", "seconds", "peak MB"],
                     tablefmt="github", disable_numparse=True)
    lines = [table, "", *ratios,
             f"compare of {len(paths)} runs with randomization tests: {compare_s:.1f} s (target < 60 s)",
             "Scores are random and distinct, so no tie order can differ from trec_eval's; on tied scores irglow "
             "uses trec_eval's order (score descending, then document id descending) for every measure."]
    text = "\n".join(lines)
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "eval.md").write_text(text + "\n")
    (out / "eval.csv").write_text("step,seconds,peak_mb\n" + "".join(f"\"{n}\",{s:.3f},{mb:.0f}\n" for n, s, mb in rows))


if __name__ == "__main__":
    main()
