"""irglow's Lucene runs as PyTerrier transformers (``irglow.pyterrier`` re-exports them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from irglow.defaults import DEPTH, QLD_MU, THREADS
from irglow.index.lucene_index import LuceneIndex
from irglow.runs.frames import open_index, queries_of, run_to_frame
from irglow.runs.pt import pt
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher

class Lexical(pt.Transformer):
    """Lucene retrieval through irglow (``bm25``, ``bm25f``, ``tfidf``, ``bm25-rm3`` …, as ``irglow search``):
    a query frame in, a result frame of the top ``depth`` out.

    Args:
        index: The Lucene index irglow built (a :class:`~irglow.index.lucene_index.LuceneIndex` or its folder).
        system: The lexical system: ``bm25``, ``bm25f``, ``bm25-mf``, ``tfidf``, ``qld``, or one with RM3
            (``bm25-rm3``).
        depth: Documents retrieved per query.
        config: A whole :class:`~irglow.lexical.searchers.LexicalConfig` instead of ``system``, ``depth`` and
            ``overrides`` (what a run folder's ``[lexical]`` binds).
        **overrides: Any other ``LexicalConfig`` field: ``k1``, ``b``, ``mu``, ``field_weights``, ``threads`` ….
    """

    def __init__(self, index: LuceneIndex | str | Path, system: str = "bm25", depth: int = DEPTH, config=None,
                 **overrides: Any):
        self.index = open_index(index)
        self.config = config if config is not None else LexicalConfig(system=system, depth=depth, **overrides)
        self.config.check()
        self.system = self.config.system + ("-rm3" if self.config.rm3 else "")

    def transform(self, topics: pd.DataFrame) -> pd.DataFrame:
        """A query frame (``qid``, ``query``) in, a result frame (``qid``, ``docno``, ``score``, ``rank`` …) of each
        query's top ``depth`` out, as ``irglow search`` ranks them.

        Args:
            topics: The queries: a frame with ``qid`` and ``query`` columns.
        """
        return run_to_frame(LexicalSearcher(self.index, self.config).search(queries_of(topics), self.system), topics)

    def __repr__(self) -> str:
        return f"irglow.Lexical({self.system})"


class QL(Lexical):
    """Query likelihood with Dirichlet smoothing (Lucene's ``LMDirichletSimilarity``), as irglow's ``ql`` run: the
    ``qld`` system with ``[lexical] mu``.

    Args:
        index: The Lucene index irglow built (or its folder).
        mu: The Dirichlet prior μ; unset: 1000, ``[lexical] mu``'s default (Anserini's).
        depth: Documents retrieved per query.
        threads: Search threads.
    """

    def __init__(self, index: LuceneIndex | str | Path, mu: float | None = None, depth: int = DEPTH,
                 threads: int = THREADS):
        self.mu = QLD_MU if mu is None else mu  # [lexical] mu's default: Anserini's 1000
        super().__init__(index, config=LexicalConfig("qld", mu=self.mu, depth=depth, threads=threads))
        self.system = "ql"

    def __repr__(self) -> str:
        return f"irglow.QL(mu={self.mu})"

