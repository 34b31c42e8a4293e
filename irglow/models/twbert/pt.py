"""TW-BERT as a PyTerrier transformer (``irglow.pyterrier`` re-exports it)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from irglow.defaults import DEPTH, THREADS
from irglow.index.lucene_index import LuceneIndex
from irglow.runs.frames import candidates_of, open_index, queries_of, run_to_frame
from irglow.runs.pt import pt

class TWBert(pt.Transformer):
    """TW-BERT's learned query-term weights, run in Lucene.  On a query frame it retrieves (the ``twbert`` run);
    on a result frame (``bm25 >> TWBert(...)``) it re-scores those documents with the same weighted query — the
    score each would get in the ``twbert`` run, 0 where no weighted term matches.

    Args:
        model: A trained TW-BERT folder (``<training folder>/best``) or a loaded model.
        index: The Lucene index the weighted queries run in (or its folder).
        depth: Documents retrieved per query (on a query frame).
        threads: Search threads.
    """

    def __init__(self, model, index: LuceneIndex | str | Path, depth: int = DEPTH, threads: int = THREADS):
        from irglow.models.twbert.model import TWBert as Model

        self.model = model if isinstance(model, Model) else Model.load(model)
        self.index, self.depth, self.threads = open_index(index), depth, threads

    def transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A query frame searched with TW-BERT's weighted queries in Lucene, or a result frame re-scored by them.

        Args:
            frame: A query frame (``qid``, ``query``) or a result frame (with ``docno``).
        """
        from irglow.models.twbert.search import twbert_rescore, twbert_search

        queries = queries_of(frame)
        if "docno" in frame.columns:
            run = twbert_rescore(self.model, self.index, queries, candidates_of(frame), threads=self.threads)
        else:
            run = twbert_search(self.model, self.index, queries, self.depth, threads=self.threads)
        return run_to_frame(run, frame)
