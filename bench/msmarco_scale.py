"""How the real job's stages grow with the corpus (issue 51, item 3): MS MARCO-document-shaped collections.

    python bench/msmarco_scale.py --sizes 10000,30000,100000 --out out/msmarco-scale

Each size is a generated BEIR folder shaped like MS MARCO documents — fields ``url``, ``title`` and ``body``, body
lengths drawn from a log-normal with MS MARCO documents' mean (about 1,150 words: 22 GB of text over 3.2 M
documents at ~6 characters a word) and a long tail (σ = 0.9, an assumption: the longest 1% run past 8,000 words),
a vocabulary with a Zipf-like distribution, train and dev queries with judgments.  The stages of
``configs/msmarco.toml`` that touch the corpus then run, each as its own ``irglow`` command in its own process
(its wall time and peak resident memory are its own, read with ``wait4``):

    index            irglow index                      (Anserini, raw documents stored)
    statistics       irglow stats                      (N, df, field lengths for the neural models)
    lexical          irglow search --system bm25        (dev queries, depth 1000)
    lexical-mf       irglow search --system bm25-mf     (Pyserini's multi-field searcher)
    glow-encode      irglow glow search                (a GLOW encoder of the real architecture, 2 layers × 128,
                                                         random weights: the corpus encoded and searched with faiss)
    rerank           irglow rerank --depth 100         (monoBERT of the same tiny size over BM25's top 100)

Printed: a table per stage and size, the growth exponent of each stage's time and peak memory over the sizes
(log-log slope), and the ratio of the largest size's peak to the smallest's.

``--processes 1,2`` also runs the stages that split their work (``glow-encode``: corpus shards; ``rerank``: queries)
under ``torchrun --nproc_per_node N`` (gloo on CPUs, NCCL on GPUs) and prints each one's speed-up over one process,
with the launch overhead: ``irglow settings`` (no work) under torchrun against one plain process.  Training is left out: its cost grows
with training queries and steps, not the corpus (capped steps would measure nothing of the corpus).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from irglow.defaults import SEED

BODY_MEAN_WORDS, BODY_SIGMA = 1150, 0.9


def generate(folder: Path, n: int, queries: int = 200, seed: int = SEED) -> Path:
    """An MS MARCO-document-shaped BEIR folder of ``n`` documents (written once; reused when present)."""
    if (folder / "corpus.jsonl").is_file():
        return folder
    rng = random.Random(seed)
    vocab = [f"t{i}" for i in range(50_000)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]  # Zipf-like: a few common words, a long tail
    mu = math.log(BODY_MEAN_WORDS) - BODY_SIGMA ** 2 / 2  # the log-normal's mean is BODY_MEAN_WORDS
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / "corpus.jsonl.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for i in range(n):
            words = max(5, min(20_000, int(rng.lognormvariate(mu, BODY_SIGMA))))
            f.write(json.dumps({"_id": f"D{i}", "url": f"http://example.com/{rng.choice(vocab)}/{i}",
                                "title": " ".join(rng.choices(vocab, weights, k=rng.randint(3, 12))),
                                "body": " ".join(rng.choices(vocab, weights, k=words))}) + "\n")
    os.replace(tmp, folder / "corpus.jsonl")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as f:
        for q in range(queries):
            f.write(json.dumps({"_id": f"q{q}", "text": " ".join(rng.choices(vocab[:5000], k=rng.randint(2, 6)))})
                    + "\n")
    (folder / "qrels").mkdir(exist_ok=True)
    for split, lo, hi in (("train", 0, queries // 2), ("dev", queries // 2, queries)):
        rows = [f"q{q}\tD{rng.randrange(n)}\t1\n" for q in range(lo, hi)]
        (folder / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(rows))
    return folder


def tiny_models(out: Path) -> tuple[Path, Path]:
    """A GLOW encoder and a monoBERT of the real architecture, 2 layers × 128, random weights (the point is the
    pipeline's cost, not its quality), with the packaged checkpoint's tokenizer."""
    glow_dir, mono_dir = out / "tiny-glow", out / "tiny-monobert"
    if (glow_dir / "glow.json").is_file() and (mono_dir / "monobert.json").is_file():
        return glow_dir, mono_dir
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from irglow.models.checkpoints import resolve_checkpoint
    from irglow.models.glow.model import GlowConfig, GlowEncoder
    from irglow.models.rerank.monobert import MonoBERT, MonoBERTConfig

    torch.manual_seed(13)
    bert_dir = out / "tiny-bert"
    tokenizer = AutoTokenizer.from_pretrained(resolve_checkpoint("default"))
    BertModel(BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=512)).save_pretrained(bert_dir)
    tokenizer.save_pretrained(bert_dir)
    GlowEncoder.from_pretrained_bert(GlowConfig(base_model=str(bert_dir), fields=["title", "url", "body"],
                                                field_max_tokens={"title": 16, "url": 16, "body": 256})).save(glow_dir)
    MonoBERT.from_pretrained_bert(MonoBERTConfig(base_model=str(bert_dir), default_field_tokens=256)).save(mono_dir)
    return glow_dir, mono_dir


def _status(pid: int) -> dict[str, int]:
    """VmRSS, RssAnon and RssFile of a process, in kB (``/proc/<pid>/status``)."""
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return out


def launcher(nproc: int) -> list[str]:
    if nproc == 1:
        return [sys.executable, "-m", "irglow"]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(nproc), "-m",
            "irglow"]


def measured(args: list[str], nproc: int = 1) -> tuple[float, float, float]:
    """(wall seconds, peak resident MB, peak anonymous MB) of one ``irglow`` command, in its own process.  The
    resident peak (``wait4``) counts the index files Lucene memory-maps as they are read (page cache, shared and
    reclaimable); the anonymous peak, sampled every 0.1 s, is what the process itself holds: Python, the JVM's
    heap, the models."""
    import threading

    t = time.perf_counter()
    proc = subprocess.Popen([*launcher(nproc), *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env={**os.environ, "TQDM_DISABLE": "1"})
    peak_anon = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak_anon[0] = max(peak_anon[0], _status(proc.pid).get("RssAnon", 0))
            done.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    done.set()
    sampler.join()
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"irglow {' '.join(args)} failed:\n{err[-2000:]}")
    return wall, usage.ru_maxrss / 1024, peak_anon[0] / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,30000,100000")
    parser.add_argument("--out", default="out/msmarco-scale")
    parser.add_argument("--stages", default="index,statistics,lexical,lexical-mf,glow-encode,rerank")
    parser.add_argument("--processes", default="1", help="process counts for the stages that split (e.g. 1,2)")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    sizes = [int(s) for s in args.sizes.split(",")]
    stages = args.stages.split(",")
    counts = [int(p) for p in args.processes.split(",")]
    splitting = [s for s in ("glow-encode", "rerank") if s in stages]
    speed: dict[tuple[str, int, int], float] = {}
    glow, mono = tiny_models(out)
    results: dict[str, dict[int, tuple[float, float]]] = {s: {} for s in stages}
    for n in sizes:
        data = str(generate(out / f"msmarco-shaped-{n}", n))
        cache, runs = str(out / f"data-{n}"), out / f"runs-{n}"
        runs.mkdir(parents=True, exist_ok=True)
        commands = {
            "index": ["index", data, "--data-dir", cache, "--threads", "2", "--force"],
            "statistics": ["stats", data, "--data-dir", cache],
            "lexical": ["search", data, "--split", "dev", "--system", "bm25", "--depth", "1000", "--data-dir", cache,
                        "-o", str(runs / "bm25.run")],
            "lexical-mf": ["search", data, "--split", "dev", "--system", "bm25-mf", "--depth", "1000", "--data-dir",
                           cache, "-o", str(runs / "bm25-mf.run")],
            "glow-encode": ["glow", "search", data, "--split", "dev", "--model", str(glow), "--depth", "1000",
                            "--data-dir", cache, "-o", str(runs / "glow.run")],
            "rerank": ["rerank", str(runs / "bm25.run"), "--model", str(mono), "--data", data, "--split", "dev",
                       "--depth", "100", "-o", str(runs / "monobert.run")],
        }
        for stage in stages:
            if stage == "statistics":  # exported once per index: measured from scratch
                import shutil

                for old in Path(cache).glob("indexes/*/irglow-stats"):
                    shutil.rmtree(old)
            results[stage][n] = measured(commands[stage])
            wall, rss, anon = results[stage][n]
            print(f"{n:>9,} {stage:<12} {wall:8.1f} s {rss:8.0f} MB resident {anon:8.0f} MB anonymous", flush=True)
            speed[stage, n, 1] = wall
            for p in (c for c in counts if c > 1 and stage in splitting):
                command = commands[stage][:-1] + [str(runs / f"{stage}-{p}-processes.run")]
                speed[stage, n, p] = measured(command, p)[0]
                print(f"{n:>9,} {stage:<12} {speed[stage, n, p]:8.1f} s under torchrun, {p} processes", flush=True)
    print(f"\n| stage | {' | '.join(f'{n:,} docs: s / resident MB / anonymous MB' for n in sizes)} | time exponent | "
          f"anonymous exponent | anonymous largest / smallest | resident largest / smallest |")
    print("|---|" + "---|" * (len(sizes) + 4))
    span = math.log(sizes[-1] / sizes[0])
    for stage in stages:
        first, last = results[stage][sizes[0]], results[stage][sizes[-1]]
        cells = [f"{results[stage][n][0]:.1f} / {results[stage][n][1]:.0f} / {results[stage][n][2]:.0f}" for n in sizes]
        print(f"| {stage} | {' | '.join(cells)} | {math.log(last[0] / first[0]) / span:.2f} | "
              f"{math.log(last[2] / first[2]) / span:.2f} | {last[2] / first[2]:.2f}× | {last[1] / first[1]:.2f}× |")
    if len(counts) > 1 and splitting:
        launch = {p: measured(["settings"], p)[0] for p in counts}
        heads = " | ".join(f"{p} process{'es' if p > 1 else ''} s" for p in counts)
        print(f"\n| stage | documents | {heads} | "
              f"{' | '.join(f'speed-up at {p}' for p in counts if p > 1)} |")
        print("|---|---|" + "---|" * (2 * len(counts) - 1))
        for stage in splitting:
            for n in sizes:
                print(f"| {stage} | {n:,} | {' | '.join(f'{speed[stage, n, p]:.1f}' for p in counts)} | "
                      f"{' | '.join(f'{speed[stage, n, 1] / speed[stage, n, p]:.2f}×' for p in counts if p > 1)} |")
        print(f"| launch (`irglow settings`, no work) | – | {' | '.join(f'{launch[p]:.1f}' for p in counts)} | "
              f"{' | '.join(f'+{launch[p] - launch[1]:.1f} s' for p in counts if p > 1)} |")
    (out / "results.json").write_text(json.dumps({s: {str(n): v for n, v in r.items()} for s, r in results.items()}))


if __name__ == "__main__":
    main()
