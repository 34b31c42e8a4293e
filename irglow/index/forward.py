"""A forward index of term positions per document, read from Lucene's stored term vectors.

Neural training needs tf and phrase frequencies of query terms in candidate documents; reading
them through JNI once per document (cached) keeps JNI out of the training loop entirely.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
from irglow.utils.progress import tqdm

from irglow.index.jvm import autoclass
from irglow.index.lucene_index import LuceneIndex


class ForwardIndex:
    def __init__(self, index: LuceneIndex, field: str = "contents"):
        self.index, self.field = index, field
        self._cache: dict[int, dict[str, np.ndarray]] = {}
        self._vectors = None

    def lucene_docid(self, doc_id: str) -> int:
        """The Lucene doc number of ``doc_id`` (the index's id table: a look-up, no table of every id built)."""
        d = self.index.ids.position(doc_id)
        if d is None:
            raise KeyError(doc_id)
        return d

    def positions(self, doc_id: str) -> dict[str, np.ndarray]:
        """``{term: sorted positions}`` of ``doc_id`` in this field ({} if the field is empty)."""
        d = self.lucene_docid(doc_id)
        if d not in self._cache:
            self._cache[d] = self._read(d)
        return self._cache[d]

    def prefetch(self, doc_ids: Iterable[str], desc: str = "term vectors") -> None:
        todo = sorted({self.lucene_docid(d) for d in doc_ids} - set(self._cache))
        for d in tqdm(todo, desc=desc, unit="doc", disable=len(todo) < 500, mininterval=1.0):
            self._cache[d] = self._read(d)

    def _read(self, lucene_docid: int) -> dict[str, np.ndarray]:
        if self._vectors is None:
            self._vectors = self.index.lucene_reader.termVectors()
            self._positions_flag = autoclass("org.apache.lucene.index.PostingsEnum").POSITIONS
        terms = self._vectors.get(lucene_docid, self.field)
        out: dict[str, np.ndarray] = {}
        if terms is None:
            return out
        it = terms.iterator()
        postings = None
        while it.next() is not None:
            term = it.term().utf8ToString()
            postings = it.postings(postings, self._positions_flag)
            postings.nextDoc()
            freq = postings.freq()
            out[term] = np.array([postings.nextPosition() for _ in range(freq)], dtype=np.int32)
        return out

    @staticmethod
    def phrase_freq(positions: dict[str, np.ndarray], t1: str, t2: str, gap: int = 1) -> int:
        """Number of positions p with ``t1`` at p and ``t2`` at p + gap (Lucene's exact phrase freq)."""
        a, b = positions.get(t1), positions.get(t2)
        if a is None or b is None:
            return 0
        return int(np.isin(a + gap, b).sum())
