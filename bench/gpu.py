"""What a GPU machine does with irglow, in one script under 8 minutes (issue 60, item 5; ``make bench-gpu``).

    python bench/gpu.py --out out/gpu [--docs 200000] [--device cuda]

1. **Encoding.**  ``--docs`` MS MARCO-shaped documents (``bench/msmarco_scale.py``'s generator), indexed on every
   core, then encoded by the real MiniLM checkpoint (the packaged ``default``: 6 layers × 384) under fp16 autocast
   through the pipeline's own encoding path (``glow_run``: batches, the memory-mapped embeddings, faiss search of
   the dev queries): documents a second, end to end and the model's forward alone.
2. **Training steps.**  The demo pipeline (``configs/demo.toml``) on the device: TW-BERT, GLOW/BERT, monoBERT and
   NRM-F through the one training loop with AMP — optimizer steps a second (validation included) and the peak GPU
   memory each training reached (``training.json``'s ``peak_gpu_mb``).
3. **``tests/gpu``** — the CUDA paths against the CPU's, passed / failed.

Printed as markdown tables naming the card, for BENCHMARKS.md.  ``--device cpu --docs 2000 --collection
demo:n_topics=20`` runs the same script on a CPU (a check of the script, not a benchmark).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def card(device) -> str:
    import torch

    if device.type != "cuda":
        return f"CPU ({torch.get_num_threads()} threads)"
    p = torch.cuda.get_device_properties(device)
    return f"{p.name}, {p.total_memory / 2 ** 30:.0f} GiB"


def encoding(out: Path, n: int, device) -> dict:
    """Index ``n`` generated documents, encode them with MiniLM in fp16, search the dev queries."""
    import torch

    from irglow.data.beir import BeirCollection
    from irglow.data.docstore import docs_store
    from irglow.index.lucene_index import IndexConfig, build_index
    from irglow.index.stats import CollectionStats
    from irglow.models.checkpoints import resolve_checkpoint
    from irglow.models.glow.model import GlowConfig, GlowEncoder
    from irglow.models.glow.runner import featurizer_for, forward_throughput, glow_run
    from msmarco_scale import generate

    t = time.perf_counter()
    coll = BeirCollection(generate(out / f"msmarco-shaped-{n}", n))
    index = build_index(coll, IndexConfig(), root=out / "data")
    stats = CollectionStats.load(index)
    prepared = time.perf_counter() - t
    model = GlowEncoder.from_pretrained_bert(GlowConfig(variant="bert", base_model=resolve_checkpoint("default"),
                                                        fields=["title", "url", "body"],
                                                        field_max_tokens={"title": 32, "url": 32, "body": 192}))
    store = docs_store(coll)
    with torch.autocast(device.type, dtype=torch.float16, enabled=device.type == "cuda"):
        model_only, _ = forward_throughput(model, featurizer_for(model, index, stats),
                                           store.sequence()[:min(2048, len(store))].take(range(min(2048, len(store)))),
                                           batch_size=128, device=device)
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        t = time.perf_counter()
        _, info = glow_run(model, index, stats, store.sequence(), coll.queries("dev"), out / "runs", "minilm",
                           depth=100, batch_size=128, device=device)
        wall = time.perf_counter() - t
    peak = torch.cuda.max_memory_allocated(device) / 2 ** 20 if device.type == "cuda" else float("nan")
    return {"documents": n, "index_and_stats_s": prepared, "encode_and_search_s": wall,
            "docs_per_s": info["docs_per_s"], "model_only_docs_per_s": model_only, "peak_gpu_mb": peak}


def training(out: Path, device, collection: str) -> list[dict]:
    """The demo pipeline on ``device``; each trained model's steps, seconds and peak GPU memory."""
    folder = out / "demo"
    cmd = [sys.executable, "-m", "irglow", "run", "--config", str(ROOT / "irglow" / "configs" / "demo.toml"),
           "--set", f"output.dir={folder}", "--set", f"data_dir={out / 'data'}", "--set", f"collection.name={collection}"]
    for section in ("twbert", "glow", "rerank.monobert", "rerank.nrmf"):
        cmd += ["--set", f"{section}.device={device}"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the demo pipeline failed:\n{done.stderr[-3000:]}")
    rows = []
    for trained in sorted(folder.glob("*-train/*/training.json")):
        state = json.loads(trained.read_text())["state"]
        model = trained.parent.parent.name.removesuffix("-train")
        seconds = state.get("train_seconds") or float("nan")
        rows.append({"model": model, "steps": state["step"], "seconds": seconds,
                     "steps_per_s": state["step"] / seconds if seconds else float("nan"),
                     "peak_gpu_mb": state.get("peak_gpu_mb", float("nan"))})
    return rows


def gpu_tests() -> str:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "tests/gpu"], cwd=ROOT, capture_output=True,
                          text=True)
    return (done.stdout.strip().splitlines() or ["(no output)"])[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/gpu")
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--collection", default="demo:n_topics=120", help="what the training steps train on")
    args = parser.parse_args()
    import torch

    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run on a GPU machine (or --device cpu --docs 2000 to check the script)")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    enc = encoding(out, args.docs, device)
    trained = training(out, args.device, args.collection)
    tests = gpu_tests() if device.type == "cuda" else "(skipped: no CUDA device)"
    total = time.perf_counter() - t0
    print(f"## GPU: {card(device)} (torch {torch.__version__}), {total / 60:.1f} min in all\n")
    print("| documents | index + statistics s | encode + search s | docs/s (end to end) | docs/s (model only) "
          "| peak GPU MB |")
    print("|---|---|---|---|---|---|")
    print(f"| {enc['documents']:,} | {enc['index_and_stats_s']:.0f} | {enc['encode_and_search_s']:.0f} | "
          f"{enc['docs_per_s']:,.0f} | {enc['model_only_docs_per_s']:,.0f} | {enc['peak_gpu_mb']:,.0f} |\n")
    print("| model (demo, AMP) | optimizer steps | seconds (validation included) | steps/s | peak GPU MB |")
    print("|---|---|---|---|---|")
    for r in trained:
        print(f"| {r['model']} | {r['steps']} | {r['seconds']:.1f} | {r['steps_per_s']:.2f} | {r['peak_gpu_mb']:,.0f} |")
    print(f"\n`tests/gpu`: {tests}")
    (out / "gpu.json").write_text(json.dumps({"card": card(device), "encoding": enc, "training": trained,
                                              "tests": tests, "minutes": total / 60}, indent=2))


if __name__ == "__main__":
    main()
