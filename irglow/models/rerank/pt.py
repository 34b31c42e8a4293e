"""Re-rankers as PyTerrier transformers: irglow's own kinds and any registered one (``irglow.pyterrier``
re-exports them)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from irglow.runs.frames import LazyDocuments, frame_to_run, queries_of, run_to_frame
from irglow.runs.pt import pt
from irglow.models.rerank.kinds import kind_of, plugin_kind

class CrossEncoder(pt.Transformer):
    """A trained monoBERT or NRM-F re-ranker (its directory; the kind is read from it) over a result frame's
    documents, as ``irglow rerank`` scores them; documents the collection lacks keep their order below."""

    def __init__(self, model, docs, batch_size: int = 64, device=None):
        from irglow.models.rerank.rerank import load_reranker

        self.model = load_reranker(model) if isinstance(model, (str, Path)) else model
        self.docs, self.batch_size, self.device = LazyDocuments(docs), batch_size, device

    def transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A result frame (``qid``, ``query``, ``docno`` …) with each query's top documents re-ordered by the cross-
        encoder's scores; a frame without ``docno`` (no first stage) is an error."""
        from irglow.models.rerank.rerank import rerank

        if "docno" not in frame.columns:
            raise ValueError("irglow.pyterrier.CrossEncoder re-ranks a result frame: put a first stage before it")
        first = frame_to_run(frame)
        depth = max((len(r) for r in first.ranking.values()), default=1)
        run = rerank(self.model, first, queries_of(frame), self.docs.get(), depth=depth, batch_size=self.batch_size,
                     device=self.device)
        return run_to_frame(run, frame)


class KindReranker(pt.Transformer):
    """A trained re-ranker of a registered kind (:mod:`irglow.models.rerank.kinds`; its folder says which) over a
    result frame's documents, as the re-ranking stage re-ranks a run."""

    def __init__(self, model_dir: str | Path, docs):
        self.kind = plugin_kind(kind_of(model_dir))
        if self.kind is None:
            raise ValueError(f"{model_dir} holds a {kind_of(model_dir)!r} model: irglow.pyterrier.CrossEncoder "
                             f"re-ranks with it")
        self.model_dir, self.docs = Path(model_dir), LazyDocuments(docs)

    def transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A result frame re-ranked by the kind's model (its ``rerank``); a frame without ``docno`` (no first stage)
        is an error."""
        if "docno" not in frame.columns:
            raise ValueError("irglow.pyterrier.KindReranker re-ranks a result frame: put a first stage before it")
        first = frame_to_run(frame)
        depth = max((len(r) for r in first.ranking.values()), default=1)
        return run_to_frame(self.kind.rerank(self.model_dir, first, queries_of(frame), self.docs.get(), depth,
                                             self.kind.name), frame)
