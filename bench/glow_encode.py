"""GLOW corpus encoding, taken apart (issue 69): featurization alone, the model alone, and the two end to end.

    python bench/glow_encode.py                     # the scale bench's MS MARCO-shaped generator, 100 k documents
    python bench/glow_encode.py --docs 300000
    python bench/glow_encode.py --data <BEIR folder or ir_datasets id>

The encoder is the scale bench's micro GLOW (1 layer × 64, random weights, 128 document tokens: the model costs
little, so what feeds it shows).  Three passes over the same documents, read by id from the document store:

* featurization: ``Featurizer.documents`` of every batch in one process, its word memo cold at the start
  (documents a second per core: one process is one core's Python);
* model: the encoder's forward pass over batches featurized beforehand (documents a second, every core torch uses);
* end to end: ``encode_corpus`` as ``irglow glow search`` runs it, documents in, vectors out.

It prints a table, then one line: ``featurization F docs/s per core; model M docs/s; end to end E docs/s``.  The
targets (issue 69, 2 cores): F ≥ 10,000 and E ≥ 3,000.
"""

from __future__ import annotations

import argparse
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


def batches(store, size: int):
    """The corpus in batches of ``size`` documents, read by position from the store as corpus encoding reads it
    (never the whole corpus at once)."""
    corpus = store.sequence()
    for start in range(0, len(corpus), size):
        yield corpus.take(range(start, min(len(corpus), start + size)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", help="a BEIR folder or an ir_datasets id (default: the MS MARCO-shaped generator)")
    ap.add_argument("--docs", type=int, default=100_000, help="documents generated (default: 100000)")
    ap.add_argument("--out", default="out/glow-encode", help="collections, indexes and models (default: %(default)s)")
    ap.add_argument("--batch", type=int, default=64, help="documents per batch (default: 64)")
    ap.add_argument("--model-batches", type=int, default=100, help="batches the model-only pass encodes (default: 100)")
    args = ap.parse_args()
    out = Path(args.out)
    data = args.data or str(generate(out / f"msmarco-shaped-{args.docs}", args.docs))
    collection = load_collection(data)
    index = build_index(collection, root=out / "data")
    stats = CollectionStats.load(index)
    glow_dir, _, _ = tiny_models(out)
    model = GlowEncoder.load(glow_dir).eval()
    store = docs_store(collection)
    n = len(store)

    feat = featurizer_for(model, index, stats)  # a fresh featurizer: its word memo cold
    kept, t = [], time.perf_counter()
    for batch in batches(store, args.batch):
        features = feat.documents(batch)
        if len(kept) < args.model_batches:
            kept.append(features)
    featurize_s = time.perf_counter() - t

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
        encode_corpus(store.sequence(), doc_encoder, Path(tmp) / "embeddings", args.batch)
        end_s = time.perf_counter() - t

    f_rate, m_rate, e_rate = n / featurize_s, model_docs / model_s, n / end_s
    print(f"\n{n:,} documents of {data}; micro GLOW encoder; batches of {args.batch}; {torch.get_num_threads()} torch "
          f"threads\n")
    print("| pass | seconds | documents a second |\n|:--|--:|--:|")
    print(f"| featurization (one process, memo cold) | {featurize_s:.1f} | {f_rate:,.0f} |")
    print(f"| model on prepared batches ({model_docs:,} documents) | {model_s:.1f} | {m_rate:,.0f} |")
    print(f"| end to end (encode_corpus) | {end_s:.1f} | {e_rate:,.0f} |")
    print(f"\nfeaturization {f_rate:,.0f} docs/s per core; model {m_rate:,.0f} docs/s; end to end {e_rate:,.0f} docs/s")


if __name__ == "__main__":
    main()
