"""Train-or-load, encode a test corpus into faiss, and write a TREC run — shared by the CLI, the
pipeline stage and bench/glow.py."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import torch

from irglow.utils.plugins import irglow_version
from irglow.data.records import Document, Query
from irglow.dense.encode import (TwoStep, dense_search, encode, encode_corpus, faiss_index, load_embeddings,
                                 merge_shards, model_digest, sharded_search)
from irglow.index.lucene_index import LuceneIndex
from irglow.index.stats import CollectionStats
from irglow.models.checkpoints import pick_device, read_training, validation_score
from irglow.models.glow.model import Featurizer, GlowEncoder, featurizer_for  # noqa: F401 (re-exported)
from irglow.models.glow.train import embed, to_device
from irglow.runs.trec import Run
from irglow.defaults import DEPTH
from irglow.eval.measures import parse_measures
from irglow.models.kept import encoding_lock, mark_used
from irglow.utils.atomic import output_lock
from irglow.utils.distributed import barrier, current, on_main

log = logging.getLogger(__name__)


def glow_encoders(model: GlowEncoder, feat: Featurizer, device, precision: str = "fp32"):
    """(documents → vectors, queries → vectors) of a GLOW/BERT encoder; ``precision="int8"``: through ONNX Runtime
    with int8 weights on the CPU (:mod:`irglow.models.int8`: GLOW's weighted attention stays in float)."""
    if precision == "int8":
        from dataclasses import asdict

        from irglow.data.records import make_document
        from irglow.models.int8 import Int8Forward

        example = feat.documents([make_document("example", **{f: "int8 export example" for f in model.config.fields})])
        forward = Int8Forward(model, example, config=asdict(model.config))
        return (lambda b: forward(**feat.documents(b)), lambda b: forward(**feat.queries([q.text for q in b])))
    # featurized ahead on a thread while a GPU encodes; on the CPU the model's own threads use the cores
    return (TwoStep(feat.documents, lambda features: model(**to_device(features, device)), feat.recipe,
                    ahead=torch.device(device).type != "cpu"),
            lambda b: embed(model, feat, b, device, "query"))


def glow_run(model: GlowEncoder, index: LuceneIndex, stats: CollectionStats, docs: list[Document],
             queries: list[Query], out_dir: Path, tag: str, depth: int = DEPTH, batch_size: int = 64,
             faiss_kind: str = "flat", device=None, also: dict[str, list[Query]] | None = None,
             precision: str = "fp32", shard_rows: int | None = None, workers: int = 0) -> tuple[Run, dict]:
    """Encode ``docs`` (embeddings on disk, under ``out_dir``, keyed on the model, corpus and precision: found there,
    an encoding is reused), search ``queries`` with faiss.  ``also``: more query sets
    searched on the same corpus encoding (their runs in ``info["also"]``), e.g. fusion-tuning queries.
    ``workers``: processes that read and featurize documents while the model encodes (0: this process).

    Under ``torchrun`` every process encodes its shard of the corpus, rank 0 merges the shards and searches,
    and every rank returns rank 0's runs.  ``precision``: fp32, or int8 on the CPU."""
    from irglow.models.int8 import check_precision

    device = device or pick_device()
    model.to(device).eval()
    feat = featurizer_for(model, index, stats)
    missing = [f for f in model.config.fields if f not in index.fields]
    w = current()
    if missing and w.main:
        log.warning("%s: fields %s are not in this collection; they encode as empty segments", tag, missing)
    doc_encoder, query_encoder = glow_encoders(model, feat, device, check_precision(precision, device))
    # the model, the corpus and the precision: an encoding is reused (and one killed halfway resumed) only for the same
    # ones, so a folder shared by every output folder holds each encoding once, under this key
    key = model_digest(model, config=model.config, index=Path(index.path).name, precision=precision,
                       irglow=irglow_version())  # kept across upgrades: the code that encodes is keyed too
    emb_dir = Path(out_dir) / f"{tag}-{key[:16]}.embeddings"
    with output_lock(encoding_lock(emb_dir)):  # one process encodes it; another then finds it (rank 0's lock)
        barrier()  # under torchrun: no rank writes its shard before rank 0 holds the encoding
        with torch.no_grad():
            _, rate = encode_corpus(docs, doc_encoder, emb_dir, batch_size, w.rank, w.size, key, workers)
        if w.main:
            mark_used(emb_dir)  # its last use (irglow cache prune --older-than)
        if w.size == 1:
            return _search(emb_dir, query_encoder, queries, also, batch_size, depth, tag, shard_rows, faiss_kind, rate)
        barrier()  # every shard is on disk
        return on_main(lambda: (merge_shards(emb_dir, w.size), _search(emb_dir, query_encoder, queries, also,
                                                                       batch_size, depth, tag, shard_rows, faiss_kind,
                                                                       rate))[1])


def _search(emb_dir: Path, query_encoder, queries, also, batch_size: int, depth: int, tag: str,
            shard_rows: int | None, faiss_kind: str, rate: float) -> tuple[Run, dict]:
    with torch.no_grad():
        qv = encode(queries, query_encoder, batch_size)
        more = {name: encode(qs, query_encoder, batch_size) for name, qs in (also or {}).items() if qs}
    vectors, ids = load_embeddings(emb_dir)
    if shard_rows:  # one index of the whole corpus would not fit: shard by shard, the tops merged
        run = sharded_search(vectors, ids, queries, qv, depth, tag, shard_rows, faiss_kind)
        extra = {name: sharded_search(vectors, ids, also[name], v, depth, tag, shard_rows, faiss_kind)
                 for name, v in more.items()}
        return run, {"docs_per_s": rate, "also": extra, "embeddings": str(emb_dir)}
    index_ = faiss_index(vectors, faiss_kind)
    run = dense_search(index_, ids, queries, qv, depth, tag)
    extra = {name: dense_search(index_, ids, also[name], v, depth, tag) for name, v in more.items()}
    return run, {"docs_per_s": rate, "also": extra, "embeddings": str(emb_dir)}


def pool_scores(encoders: dict, queries: list[Query], qrels, pools: dict[str, list[Document]]) -> dict[str, float]:
    """nDCG@10 of each ``encoders[name] = (documents → vectors, queries → vectors)`` ranking each query's own
    pool of documents: what the int8 check compares at a fraction of a corpus encoding."""
    pooled = list({d.doc_id: d for docs in pools.values() for d in docs}.values())
    row = {d.doc_id: i for i, d in enumerate(pooled)}
    out = {}
    for name, (doc_encoder, query_encoder) in encoders.items():
        dv, qv = encode(pooled, doc_encoder, desc=f"{name} pool"), encode(queries, query_encoder)
        ranking = {q.query_id: [(d.doc_id, float(dv[row[d.doc_id]] @ v)) for d in pools[q.query_id]]
                   for q, v in zip(queries, qv)}
        out[name] = validation_score(parse_measures(["nDCG@10"]), qrels, Run(ranking, name))
    return out


def validation_queries(model_dir: Path, queries: list[Query], qrels) -> tuple[list[Query], list]:
    """The queries a trained model held out for validation (never trained on), and their judgments."""
    ids = set(read_training(model_dir).get("val_query_ids", []))
    return [q for q in queries if q.query_id in ids], [r for r in qrels if r.query_id in ids]


@torch.no_grad()
def forward_throughput(model: GlowEncoder, feat: Featurizer, docs: list[Document], batch_size: int = 64,
                       device=None, repeats: int = 3) -> tuple[float, float]:
    """(model-only docs/s on prepared batches, end-to-end docs/s including featurization).

    One untimed featurization pass first warms the word → index-term cache (one JNI look-up per
    distinct word), as it is warm for all but the first documents of a real corpus encoding.
    """
    device = device or pick_device()
    model.to(device).eval()
    for i in range(0, len(docs), batch_size):
        feat.documents(docs[i:i + batch_size])
    t = time.perf_counter()
    batches = [feat.documents(docs[i:i + batch_size]) for i in range(0, len(docs), batch_size)]
    prep = time.perf_counter() - t
    batches = [{k: v.to(device) for k, v in b.items()} for b in batches]
    model(**batches[0])  # warm-up
    best = float("inf")
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        for b in batches:
            model(**b)
        if device.type == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return len(docs) / best, len(docs) / (best + prep)
