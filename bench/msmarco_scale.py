"""How the real job's stages grow with the corpus (issue 60): MS MARCO-document-shaped collections, 100 k to 1 M.

    python bench/msmarco_scale.py --sizes 100000,300000,1000000 --out out/msmarco-scale   (make bench-msmarco-scale)

Each size is a generated BEIR folder shaped like MS MARCO documents — fields ``url``, ``title`` and ``body``, body
lengths drawn from a log-normal with MS MARCO documents' mean (about 1,150 words: 22 GB of text over 3.2 M
documents at ~6 characters a word) and a long tail (σ = 0.9, an assumption: the longest 1% run past 8,000 words),
a vocabulary with a Zipf-like distribution, train and dev queries with judgments.  The stages of
``configs/msmarco.toml`` that touch the corpus then run, each as its own ``irglow`` command in its own process
(its wall time and its anonymous and file-backed resident peaks are its own, sampled from ``/proc``):

    index            irglow index                      (Anserini on every core; the id table and the store's tables)
    statistics       irglow stats                      (N, df, field lengths for the neural models)
    lexical          irglow search --system bm25        (100 dev queries, depth 1000; also bm25f and bm25-mf)
    search-10        irglow search, 10 queries          (what a process pays before its first queries)
    twbert           irglow twbert search               (a micro TW-BERT's weighted queries in Lucene; also 10 queries)
    glow-encode      irglow glow search                (a GLOW encoder of the real architecture, 1 layer × 64, 128
                                                         tokens, random weights: the corpus encoded, faiss search)
    rerank           irglow rerank --depth 100         (a micro monoBERT over BM25's top 100; also 10 queries)

Printed: a table per stage and size, the growth exponent of each stage's time and anonymous peak fitted on the
smallest and largest size (log-log slope), those extrapolated to MS MARCO v1 (3.2 M) and v2 (12 M) documents, and
the index's size against its JSON.  ``results.json`` keeps every size measured: a long size run in the background
and interrupted is resumed, not measured again.

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
    """An MS MARCO-document-shaped BEIR folder of ``n`` documents (written once; reused when present).  Words are
    drawn with numpy, a block of documents at a time (a million documents in minutes, not an hour)."""
    import numpy as np

    if (folder / "corpus.jsonl").is_file():
        return folder
    rng = np.random.default_rng(seed)
    vocab = np.array([f"t{i}" for i in range(50_000)], dtype=object)
    weights = 1.0 / np.arange(1, len(vocab) + 1)  # Zipf-like: a few common words, a long tail
    p = weights / weights.sum()
    mu = math.log(BODY_MEAN_WORDS) - BODY_SIGMA ** 2 / 2  # the log-normal's mean is BODY_MEAN_WORDS
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / "corpus.jsonl.tmp"
    block = 2000
    with open(tmp, "w", encoding="utf-8") as f:
        for lo in range(0, n, block):
            size = min(block, n - lo)
            body_len = np.clip(rng.lognormal(mu, BODY_SIGMA, size).astype(np.int64), 5, 20_000)
            title_len = rng.integers(3, 13, size)
            words = vocab[rng.choice(len(vocab), size=int(body_len.sum() + title_len.sum()), p=p)]
            url_words = vocab[rng.integers(0, len(vocab), size)]
            at = 0
            lines = []
            for i in range(size):
                title = " ".join(words[at:at + title_len[i]])
                at += title_len[i]
                body = " ".join(words[at:at + body_len[i]])
                at += body_len[i]
                lines.append(json.dumps({"_id": f"D{lo + i}", "url": f"http://example.com/{url_words[i]}/{lo + i}",
                                         "title": title, "body": body}) + "\n")
            f.writelines(lines)
    os.replace(tmp, folder / "corpus.jsonl")
    py = random.Random(seed)
    vocab_list = list(vocab[:5000])
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as f:
        for q in range(queries):
            f.write(json.dumps({"_id": f"q{q}", "text": " ".join(py.choices(vocab_list, k=py.randint(2, 6)))}) + "\n")
    (folder / "qrels").mkdir(exist_ok=True)
    for split, lo, hi in (("train", 0, queries // 2), ("dev", queries // 2, queries),
                          ("ten", queries // 2, queries // 2 + 10)):  # a process's start: 10 queries
        rows = [f"q{q}\tD{py.randrange(n)}\t1\n" for q in range(lo, hi)]
        (folder / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(rows))
    return folder


def tiny_models(out: Path) -> tuple[Path, Path, Path]:
    """A GLOW encoder, a monoBERT and a TW-BERT of the real architecture at micro size — 1 layer × 64, random
    weights, 128 document tokens (the point is the pipeline's cost at scale, not its quality) — with the packaged
    checkpoint's tokenizer."""
    glow_dir, mono_dir, tw_dir = out / "micro-glow", out / "micro-monobert", out / "micro-twbert"
    if all((d / f).is_file() for d, f in ((glow_dir, "glow.json"), (mono_dir, "monobert.json"),
                                          (tw_dir, "twbert.json"))):
        return glow_dir, mono_dir, tw_dir
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from irglow.models.checkpoints import resolve_checkpoint
    from irglow.models.glow.model import GlowConfig, GlowEncoder
    from irglow.models.rerank.monobert import MonoBERT, MonoBERTConfig
    from irglow.models.twbert.model import TWBert, TWBertConfig

    torch.manual_seed(13)
    bert_dir = out / "micro-bert"
    tokenizer = AutoTokenizer.from_pretrained(resolve_checkpoint("default"))
    BertModel(BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=64, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=256)).save_pretrained(bert_dir)
    tokenizer.save_pretrained(bert_dir)
    GlowEncoder.from_pretrained_bert(GlowConfig(base_model=str(bert_dir), fields=["title", "url", "body"],
                                                field_max_tokens={"title": 16, "url": 16, "body": 96})).save(glow_dir)
    MonoBERT.from_pretrained_bert(MonoBERTConfig(base_model=str(bert_dir), default_field_tokens=96)).save(mono_dir)
    TWBert.from_pretrained_bert(TWBertConfig(base_model=str(bert_dir), max_query_tokens=32)).save(tw_dir)
    return glow_dir, mono_dir, tw_dir


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


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (torchrun's ranks; the JVM lives in the process itself)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def launcher(nproc: int) -> list[str]:
    if nproc == 1:
        return [sys.executable, "-m", "irglow"]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(nproc), "-m",
            "irglow"]


def measured(args: list[str], nproc: int = 1) -> dict[str, float]:
    """Wall seconds and the anonymous and file-backed resident peaks (MB) of one ``irglow`` command in its own
    process(es), sampled every 0.1 s and summed over the process tree.  Anonymous memory is what the process holds
    itself (Python, the JVM's heap, models); file-backed is what it maps of the index and the tables (page cache,
    shared and reclaimable)."""
    import threading

    t = time.perf_counter()
    proc = subprocess.Popen([*launcher(nproc), *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env={**os.environ, "TQDM_DISABLE": "1"})
    peak = {"RssAnon": 0, "RssFile": 0}
    done = threading.Event()

    def sample():
        while not done.is_set():
            now = {"RssAnon": 0, "RssFile": 0}
            for p in _tree(proc.pid):
                st = _status(p)
                for k in now:
                    now[k] += st.get(k, 0)
            for k in peak:
                peak[k] = max(peak[k], now[k])
            done.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    _, status, _ = os.wait4(proc.pid, 0)
    done.set()
    sampler.join()
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"irglow {' '.join(args)} failed:\n{err[-2000:]}")
    return {"wall_s": wall, "anon_mb": peak["RssAnon"] / 1024, "file_mb": peak["RssFile"] / 1024}


def disk_mb(*paths: Path) -> float:
    return sum(f.stat().st_size for p in paths for f in (Path(p).rglob("*") if Path(p).is_dir() else [Path(p)])
               if f.is_file()) / 2 ** 20


STAGES = ("index", "statistics", "lexical", "lexical-bm25f", "lexical-mf", "search-10", "twbert", "twbert-10",
          "glow-encode", "rerank", "rerank-10")
V1, V2 = 3_213_835, 11_959_635  # MS MARCO documents v1 and v2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,300000,1000000")
    parser.add_argument("--out", default="out/msmarco-scale")
    parser.add_argument("--stages", default=",".join(STAGES))
    parser.add_argument("--processes", default="1", help="process counts for the stages that split (e.g. 1,2)")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    sizes = [int(s) for s in args.sizes.split(",")]
    stages = args.stages.split(",")
    counts = [int(p) for p in args.processes.split(",")]
    splitting = [s for s in ("glow-encode", "rerank") if s in stages]
    speed: dict[tuple[str, int, int], float] = {}
    glow, mono, twbert = tiny_models(out)
    results: dict[str, dict[int, dict[str, float]]] = {s: {} for s in stages}
    saved = out / "results.json"
    if saved.is_file():  # every stage and size measured earlier (a long size in the background): kept, not measured
        for stage, by_size in json.loads(saved.read_text()).items():  # again, and written back with the new ones
            results.setdefault(stage, {}).update({int(n): v for n, v in by_size.items() if isinstance(v, dict)})
    for n in sizes:
        folder = out / f"msmarco-shaped-{n}"
        if all(n in results[s] for s in stages):
            continue
        t = time.perf_counter()
        data = str(generate(folder, n))
        json_mb = disk_mb(folder / "corpus.jsonl")
        print(f"{n:>9,} generated ({json_mb:,.0f} MB of JSON) in {time.perf_counter() - t:.0f} s", flush=True)
        cache, runs = out / f"data-{n}", out / f"runs-{n}"
        runs.mkdir(parents=True, exist_ok=True)
        common = ["--data-dir", str(cache)]
        commands = {
            "index": ["index", data, *common, "--force"],
            "statistics": ["stats", data, *common],
            "lexical": ["search", data, "--split", "dev", "--system", "bm25", "--depth", "1000", *common,
                        "-o", str(runs / "bm25.run")],
            "lexical-bm25f": ["search", data, "--split", "dev", "--system", "bm25f", "--depth", "1000", *common,
                              "-o", str(runs / "bm25f.run")],
            "lexical-mf": ["search", data, "--split", "dev", "--system", "bm25-mf", "--depth", "1000", *common,
                           "-o", str(runs / "bm25-mf.run")],
            "search-10": ["search", data, "--split", "ten", "--system", "bm25", "--depth", "1000", *common,
                          "-o", str(runs / "bm25-10.run")],
            "twbert": ["twbert", "search", data, "--split", "dev", "--model", str(twbert), "--depth", "1000", *common,
                       "-o", str(runs / "twbert.run")],
            "twbert-10": ["twbert", "search", data, "--split", "ten", "--model", str(twbert), "--depth", "1000",
                          *common, "-o", str(runs / "twbert-10.run")],
            "glow-encode": ["glow", "search", data, "--split", "dev", "--model", str(glow), "--depth", "1000",
                            *common, "-o", str(runs / "glow.run")],
            "rerank": ["rerank", str(runs / "bm25.run"), "--model", str(mono), "--data", data, "--split", "dev",
                       "--depth", "100", "-o", str(runs / "monobert.run")],
            "rerank-10": ["rerank", str(runs / "bm25-10.run"), "--model", str(mono), "--data", data, "--split", "ten",
                          "--depth", "100", "-o", str(runs / "monobert-10.run")],
        }
        for stage in stages:
            if stage == "statistics":  # exported once per index: measured from scratch
                import shutil

                for old in cache.glob("indexes/*/irglow-stats"):
                    shutil.rmtree(old)
            env_data = {"IRGLOW_DATA": str(cache)}  # `irglow rerank` finds the collection's kept tables there
            os.environ.update(env_data)
            r = measured(commands[stage])
            if stage == "index":
                r["disk_mb"] = disk_mb(*cache.glob("indexes/*"))
                r["json_mb"] = json_mb
                r["docstore_mb"] = disk_mb(cache / "docstores")
            elif stage == "glow-encode":
                r["disk_mb"] = disk_mb(*runs.glob("glow.embeddings*"))
            results[stage][n] = r
            extra = f"  disk {r['disk_mb']:,.0f} MB" if "disk_mb" in r else ""
            print(f"{n:>9,} {stage:<14} {r['wall_s']:8.1f} s {r['anon_mb']:8.0f} MB anonymous "
                  f"{r['file_mb']:8.0f} MB file-backed{extra}", flush=True)
            saved.write_text(json.dumps({s: {str(k): v for k, v in by.items()} for s, by in results.items()}))
            speed[stage, n, 1] = r["wall_s"]
            for p in (c for c in counts if c > 1 and stage in splitting):
                command = commands[stage][:-1] + [str(runs / f"{stage}-{p}-processes.run")]
                speed[stage, n, p] = measured(command, p)["wall_s"]
                print(f"{n:>9,} {stage:<14} {speed[stage, n, p]:8.1f} s under torchrun, {p} processes", flush=True)
    print(table({s: results[s] for s in stages}, sizes))
    if len(counts) > 1 and splitting:
        launch = {p: measured(["settings"], p)["wall_s"] for p in counts}
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


def table(results: dict[str, dict[int, dict[str, float]]], sizes: list[int]) -> str:
    """The markdown table: each stage at each size (seconds / anonymous MB / file-backed MB), the growth exponents
    fitted on the first and last size (log-log slope), and the time and anonymous peak extrapolated to MS MARCO
    v1 and v2 documents from that span."""
    lines = [f"| stage | {' | '.join(f'{n:,} docs: s / anon MB / file MB' for n in sizes)} | time exponent | "
             f"anon exponent | v1 (3.2 M): s / anon MB | v2 (12 M): s / anon MB |",
             "|---|" + "---|" * (len(sizes) + 4)]
    for stage, by in results.items():
        have = [n for n in sizes if n in by]
        if not have:
            continue
        cells = [f"{by[n]['wall_s']:.1f} / {by[n]['anon_mb']:.0f} / {by[n]['file_mb']:.0f}" if n in by else "–"
                 for n in sizes]
        if len(have) > 1:
            a, b = by[have[0]], by[have[-1]]
            span = math.log(have[-1] / have[0])
            te, ae = math.log(b["wall_s"] / a["wall_s"]) / span, math.log(max(b["anon_mb"], 1) / max(a["anon_mb"], 1)) / span
            ext = [f"{b['wall_s'] * (v / have[-1]) ** te:,.0f} / {b['anon_mb'] * (v / have[-1]) ** ae:,.0f}"
                   for v in (V1, V2)]
            lines.append(f"| {stage} | {' | '.join(cells)} | {te:.2f} | {ae:.2f} | {ext[0]} | {ext[1]} |")
        else:
            lines.append(f"| {stage} | {' | '.join(cells)} | – | – | – | – |")
    index = results.get("index", {})
    if index:
        lines += ["", "| documents | JSON MB | index MB | index / JSON | document store tables MB | embeddings MB |",
                  "|---|---|---|---|---|---|"]
        for n in sizes:
            if n in index:
                emb = results.get("glow-encode", {}).get(n, {}).get("disk_mb")
                lines.append(f"| {n:,} | {index[n]['json_mb']:,.0f} | {index[n]['disk_mb']:,.0f} | "
                             f"{index[n]['disk_mb'] / index[n]['json_mb']:.2f}× | {index[n].get('docstore_mb', 0):,.0f} "
                             f"| {'–' if emb is None else f'{emb:,.0f}'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
