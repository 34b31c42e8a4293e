"""GLOW/BERT encoders as PyTerrier transformers: re-scoring a result frame, or faiss retrieval over a run's
kept corpus encoding (``irglow.pyterrier`` re-exports them)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from irglow.defaults import DEPTH
from irglow.index.lucene_index import LuceneIndex
from irglow.runs.frames import LazyDocuments, candidates_of, open_index, queries_of, run_to_frame
from irglow.runs.pt import pt
from irglow.runs.trec import Run
from irglow.index.stats import CollectionStats
from irglow.models.checkpoints import pick_device

class Glow(pt.Transformer):
    """A GLOW/BERT encoder (a saved ``GlowEncoder`` directory) re-scoring a result frame's documents by the cosine
    of query and document embeddings — what its faiss run computes for those documents.

    Args:
        model: A trained encoder's folder (``<training folder>/best``) or a loaded ``GlowEncoder``.
        index: The Lucene index its BM25 weights are read from (the one it was trained for, or its folder).
        docs: The documents by id (a collection's document store, or a ``{docno: Document}`` mapping).
        batch_size: Documents (and queries) encoded per batch.
        device: The torch device (``"cuda"``, ``"cpu"``); unset: a GPU where there is one.
    """

    def __init__(self, model, index: LuceneIndex | str | Path, docs, batch_size: int = 64, device=None):
        from irglow.models.glow.model import GlowEncoder, featurizer_for

        self.model = model if isinstance(model, GlowEncoder) else GlowEncoder.load(model)
        self.index = open_index(index)
        self.featurizer = featurizer_for(self.model, self.index, CollectionStats.load(self.index))
        self.docs, self.batch_size, self.device = LazyDocuments(docs), batch_size, device

    def transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A result frame re-scored by the encoder: each (query, document) pair's cosine of the two embeddings.

        Args:
            frame: A result frame (``qid``, ``query``, ``docno`` …), e.g. a lexical transformer's.
        """
        import numpy as np
        import torch

        from irglow.dense.encode import encode
        from irglow.models.glow.train import embed

        if "docno" not in frame.columns:
            raise ValueError("irglow.pyterrier.Glow re-ranks a result frame: put a first stage before it "
                             "(Lexical(index) >> Glow(...))")
        device = self.device or pick_device()
        self.model.to(device).eval()
        queries, candidates, docs = queries_of(frame), candidates_of(frame), self.docs.get()
        wanted = sorted({d for ds in candidates.values() for d in ds if d in docs})
        with torch.no_grad():
            qv = encode(queries, lambda b: embed(self.model, self.featurizer, b, device, "query"), self.batch_size)
            dv = encode([docs[d] for d in wanted], lambda b: embed(self.model, self.featurizer, b, device, "doc"),
                        self.batch_size)
        row = {d: i for i, d in enumerate(wanted)}
        ranking = {}
        for q, vector in zip(queries, qv):
            held = [d for d in candidates.get(q.query_id, []) if d in row]
            scores = dv[[row[d] for d in held]] @ vector if held else np.zeros(0)
            ranking[q.query_id] = [(d, float(s)) for d, s in zip(held, scores)]
        return run_to_frame(Run(ranking, "glow"), frame)


class Dense(pt.Transformer):
    """A trained GLOW/BERT encoder's faiss retrieval over a corpus encoding an irglow run kept
    (its folder the run's manifest names): a query frame in, the run the pipeline wrote out.

    Args:
        model: The trained encoder's folder or a loaded ``GlowEncoder``: the one that made the encoding.
        index: The Lucene index the queries' BM25 weights are read from (or its folder).
        embeddings: The corpus encoding's folder (``embeddings.npy`` and ``ids.txt``).
        depth: Documents retrieved per query.
        batch_size: Queries encoded per batch.
        device: The torch device; unset: a GPU where there is one.
    """

    def __init__(self, model, index: LuceneIndex | str | Path, embeddings: str | Path, depth: int = DEPTH,
                 batch_size: int = 64, device=None):
        from irglow.models.glow.model import GlowEncoder, featurizer_for

        self.model = model if isinstance(model, GlowEncoder) else GlowEncoder.load(model)
        self.index = open_index(index)
        self.featurizer = featurizer_for(self.model, self.index, CollectionStats.load(self.index))
        self.embeddings, self.depth, self.batch_size, self.device = Path(embeddings), depth, batch_size, device

    def transform(self, topics: pd.DataFrame) -> pd.DataFrame:
        """A query frame in (``qid``, ``query``), the top ``depth`` documents of the stored embeddings out (faiss over
        the run's vectors).

        Args:
            topics: The queries: a frame with ``qid`` and ``query`` columns.
        """
        import torch

        from irglow.dense.encode import dense_search, encode, faiss_index, load_embeddings
        from irglow.models.glow.runner import glow_encoders

        device = self.device or pick_device()
        self.model.to(device).eval()
        _, query_encoder = glow_encoders(self.model, self.featurizer, device, "fp32")
        queries = queries_of(topics)
        with torch.no_grad():
            qv = encode(queries, query_encoder, self.batch_size)
        vectors, ids = load_embeddings(self.embeddings)
        return run_to_frame(dense_search(faiss_index(vectors, "flat"), ids, queries, qv, self.depth, "dense"), topics)
