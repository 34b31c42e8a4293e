"""GLOW corpus encoding, taken apart (issue 69): featurization alone, the model alone, and the two end to end.

    python bench/glow_encode.py                     # the scale bench's MS MARCO-shaped generator, 100 k documents
    python bench/glow_encode.py --docs 300000
    python bench/glow_encode.py --data <BEIR folder or ir_datasets id>

The encoder is the scale bench's micro GLOW (1 layer × 64, random weights, 128 document tokens: the model costs
little, so what feeds it shows).  Three passes over the same documents, read by id from the document store:

* reading: the batches read by position from the document store (JSON parsed), timed on its own;
* featurization: ``Featurizer.documents`` of every batch in one process, its memos cold at the start (documents a
  second per core: one process is one core's Python and its JNI calls), with its first batches taken apart by
  part;
* model: the encoder's forward pass over batches featurized beforehand (documents a second, every core torch uses);
* end to end: ``encode_corpus`` as ``irglow glow search`` runs it, documents in, vectors out (on the CPU
  featurization and the model take turns; ``--workers N``: N processes featurize while the model encodes).

It prints a table, then one line: ``featurization F docs/s per core; model M docs/s; end to end E docs/s``.  The
targets (issue 69, 2 cores): F ≥ 10,000 and E ≥ 3,000.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402

from msmarco_scale import generate, tiny_models  # noqa: E402

from irglow.data.collection import load_collection  # noqa: E402
from irglow.data.docstore import docs_store  # noqa: E402
from irglow.dense.encode import encode_corpus  # noqa: E402
from irglow.index.lucene_index import build_index  # noqa: E402
from irglow.index.stats import CollectionStats  # noqa: E402
from irglow.models.glow.model import GlowEncoder  # noqa: E402
from irglow.models.glow.runner import featurizer_for, glow_encoders  # noqa: E402


def batches(n: int, size: int):
    """Positions of the corpus in batches of ``size`` documents (read by position from the store, as corpus encoding
    reads them: never the whole corpus at once)."""
    for start in range(0, n, size):
        yield range(start, min(n, start + size))


# featurization's parts, by the functions that do them (irglow/models/glow/features.py)
PARTS = {"Java: splitting, term mapping, counts": ("_scan",), "WordPieces (new words through the tokenizer)":
         ("_word_pieces",), "weights (BM25F, idf, normalisation)": ("_word_weights", "_normalised"),
         "layout and tensors": ("_layout", "_batch")}


def breakdown(profiler: cProfile.Profile) -> dict[str, float]:
    """Seconds in each part of featurization (cumulative times of the functions doing it)."""
    stats = pstats.Stats(profiler).stats
    out = {}
    for part, names in PARTS.items():
        out[part] = sum(v[3] for (file, _, name), v in stats.items() if name in names and file.endswith("features.py"))
    out["total"] = sum(v[3] for (file, _, name), v in stats.items() if name == "__call__" and
                       file.endswith("features.py"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", help="a BEIR folder or an ir_datasets id (default: the MS MARCO-shaped generator)")
    ap.add_argument("--docs", type=int, default=100_000, help="documents generated (default: 100000)")
    ap.add_argument("--out", default="out/glow-encode", help="collections, indexes and models (default: %(default)s)")
    ap.add_argument("--batch", type=int, default=64, help="documents per batch (default: 64)")
    ap.add_argument("--model-batches", type=int, default=100, help="batches the model-only pass encodes (default: 100)")
    ap.add_argument("--workers", type=int, default=0, help="worker processes featurizing for the end-to-end pass "
                    "(default: 0, a thread)")
    ap.add_argument("--profile-batches", type=int, default=200, help="first batches whose featurization is taken "
                    "apart (default: 200)")
    args = ap.parse_args()
    out = Path(args.out)
    data = args.data or str(generate(out / f"msmarco-shaped-{args.docs}", args.docs))
    collection = load_collection(data)
    index = build_index(collection, root=out / "data")
    stats = CollectionStats.load(index)
    glow_dir, _, _ = tiny_models(out)
    model = GlowEncoder.load(glow_dir).eval()
    store = docs_store(collection)
    corpus = store.sequence()
    n = len(store)

    feat = featurizer_for(model, index, stats)  # a fresh featurizer: its word memo cold
    kept, read_s, featurize_s = [], 0.0, 0.0
    profiler = cProfile.Profile()
    for k, positions in enumerate(batches(n, args.batch)):
        t = time.perf_counter()
        batch = corpus.take(positions)
        read_s += time.perf_counter() - t
        if k == args.profile_batches:  # the breakdown of the first batches (cold: the JIT and the memos warm up)
            profiler.disable()
        elif k == 0:
            profiler.enable()
        t = time.perf_counter()
        features = feat.documents(batch)
        featurize_s += time.perf_counter() - t
        if len(kept) < args.model_batches:
            kept.append(features)
    profiler.disable()
    parts = breakdown(profiler)

    with torch.no_grad():
        model(**kept[0])  # warm-up: the first forward pass allocates
        t = time.perf_counter()
        for features in kept:
            model(**features)
        model_s = time.perf_counter() - t
    model_docs = sum(int(f["input_ids"].shape[0]) for f in kept)

    feat = featurizer_for(model, index, stats)  # cold again for the end-to-end pass
    doc_encoder, _ = glow_encoders(model, feat, torch.device("cpu"))
    with tempfile.TemporaryDirectory(dir=out) as tmp, torch.no_grad():
        t = time.perf_counter()
        encode_corpus(store.sequence(), doc_encoder, Path(tmp) / "embeddings", args.batch, workers=args.workers)
        end_s = time.perf_counter() - t

    f_rate, m_rate, e_rate = n / featurize_s, model_docs / model_s, n / end_s
    print(f"\n{n:,} documents of {data}; micro GLOW encoder; batches of {args.batch}; {torch.get_num_threads()} torch "
          f"threads\n")
    print("| pass | seconds | documents a second |\n|:--|--:|--:|")
    print(f"| reading from the document store (one process) | {read_s:.1f} | {n / read_s:,.0f} |")
    print(f"| featurization (one process, memos cold) | {featurize_s:.1f} | {f_rate:,.0f} |")
    print(f"| model on prepared batches ({model_docs:,} documents) | {model_s:.1f} | {m_rate:,.0f} |")
    how = f"{args.workers} featurizing processes" if args.workers else "featurization and model in turn"
    print(f"| end to end (encode_corpus: reading, {how}) | {end_s:.1f} | {e_rate:,.0f} |")
    total = parts.pop("total") or 1.0
    print(f"\nfeaturization of the first {min(args.profile_batches, -(-n // args.batch)):,} batches, by part "
          f"(cProfile):\n\n| part | share |\n|:--|--:|")
    for part, seconds in parts.items():
        print(f"| {part} | {seconds / total:.0%} |")
    print(f"\nfeaturization {f_rate:,.0f} docs/s per core; model {m_rate:,.0f} docs/s; end to end {e_rate:,.0f} docs/s")


if __name__ == "__main__":
    main()
