"""Re-rankers as PyTerrier transformers: one class for every kind, irglow's own and any registered one
(``irglow.pyterrier`` re-exports it)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from irglow.models.rerank.kinds import kind_of, reranker_kind
from irglow.runs.frames import LazyDocuments, frame_to_run, queries_of, run_to_frame
from irglow.runs.pt import pt


class CrossEncoder(pt.Transformer):
    """A trained re-ranker over a result frame's documents, re-ranked as ``irglow rerank`` and the re-ranking stage
    do (:meth:`~irglow.models.rerank.kinds.RerankerKind.rerank_run`): ``model`` is a model folder of any kind
    (monoBERT, NRM-F or a registered one: its folder says which) or a loaded monoBERT / NRM-F; documents the
    collection lacks keep their order below.

    Args:
        model: A re-ranker's model folder (``<training folder>/best``, any kind) or a loaded monoBERT / NRM-F.
        docs: The documents by id (a collection's document store, or a ``{docno: Document}`` mapping).
        batch_size: Query-document pairs scored per batch.
        device: The torch device; unset: a GPU where there is one.
    """

    def __init__(self, model, docs, batch_size: int = 64, device=None):
        if isinstance(model, (str, Path)):
            self.kind = reranker_kind(kind_of(model))
            self.model = self.kind.load(model)
        else:  # a loaded torch model says its kind
            self.kind, self.model = reranker_kind(model.kind), model
        self.docs, self.batch_size, self.device = LazyDocuments(docs), batch_size, device

    def transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A result frame (``qid``, ``query``, ``docno`` …) with each query's top documents re-ordered by the model's
        scores; a frame without ``docno`` (no first stage) is an error.

        Args:
            frame: A result frame (``qid``, ``query``, ``docno`` …): the first stage's documents, cut to the depth to
                re-rank (``first % 100 >> CrossEncoder(…)``).
        """
        if "docno" not in frame.columns:
            raise ValueError("irglow.pyterrier.CrossEncoder re-ranks a result frame: put a first stage before it")
        first = frame_to_run(frame)
        depth = max((len(r) for r in first.ranking.values()), default=1)
        run = self.kind.rerank_run(self.model, first, queries_of(frame), self.docs.get(), depth, self.kind.name,
                                   batch_size=self.batch_size, device=self.device, desc="re-rank")
        return run_to_frame(run, frame)

