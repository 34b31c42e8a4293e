"""A run's rankings as Lucene hands them over: packed arrays, already in trec_eval's order.

Lucene-backed searches return each batch of queries as one little-endian byte array (``irglow.BulkSearch``'s
``packOrdered``: query count, offsets, doc numbers, float scores, one extra int per query), ties already broken by
document id descending.  :class:`PackedRanking` reads it with numpy as it is and turns a query's hits into
``(doc id, score)`` pairs only when that query is read — so a search neither converts hit by hit nor sorts again,
and a ``Run`` over it is the run the per-hit path gives, pair for pair (tested).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Iterator, Sequence

import numpy as np

ScoredList = list[tuple[str, float]]


class Segment:
    """One packed batch: query ``i``'s hits are ``docs[offsets[i]:offsets[i + 1]]`` with their scores."""

    __slots__ = ("offsets", "docs", "scores", "extra")

    def __init__(self, packed: bytes):
        header = np.frombuffer(packed, dtype="<i4", count=1)
        q = int(header[0])
        self.offsets = np.frombuffer(packed, dtype="<i4", count=q + 1, offset=4)
        total = int(self.offsets[-1])
        start = 4 * (2 + q)
        self.docs = np.frombuffer(packed, dtype="<i4", count=total, offset=start)
        self.scores = np.frombuffer(packed, dtype="<f4", count=total, offset=start + 4 * total)
        self.extra = np.frombuffer(packed, dtype="<i4", count=q, offset=start + 8 * total)

    def __len__(self) -> int:
        return len(self.offsets) - 1


class PackedRanking(MutableMapping):
    """``{query id: [(doc id, score), …]}`` over packed segments, each query's list made when first read
    (then kept).  ``names``: every Lucene doc number's id — the index's memory-mapped id table (its ``take``), or
    a numpy object array.  Keys keep their given order; an assigned list is stored as given, as in a dict."""

    def __init__(self, names):
        self.names = names
        self._take = names.take if hasattr(names, "take") and not isinstance(names, np.ndarray) else \
            (lambda numbers: names[numbers].tolist())
        self._where: dict[str, tuple[Segment, int] | None] = {}  # key → its packed place (None: assigned)
        self._lists: dict[str, ScoredList] = {}

    def add(self, qids: Sequence[str], packed: bytes) -> Segment:
        segment = Segment(packed)
        if len(segment) != len(qids):
            raise ValueError(f"a packed batch of {len(segment)} queries for {len(qids)} query ids")
        for i, q in enumerate(qids):
            self._where[q] = (segment, i)
            self._lists.pop(q, None)
        return segment

    def reordered(self, qids: Sequence[str]) -> "PackedRanking":
        """The same rankings with the keys in ``qids``' order; a query not held gets an empty list."""
        out = PackedRanking(self.names)
        for q in qids:
            if q in self._lists:
                out[q] = self._lists[q]
            elif self._where.get(q) is not None:
                out._where[q] = self._where[q]
            else:
                out[q] = []
        return out

    def __getitem__(self, qid: str) -> ScoredList:
        if qid in self._lists:
            return self._lists[qid]
        place = self._where[qid]  # KeyError for a query not held, as a dict
        segment, i = place
        a, b = int(segment.offsets[i]), int(segment.offsets[i + 1])
        docs = self._take(segment.docs[a:b])
        self._lists[qid] = out = list(zip(docs, segment.scores[a:b].tolist()))
        return out

    def __setitem__(self, qid: str, docs: ScoredList) -> None:
        if qid not in self._where:
            self._where[qid] = None
        self._lists[qid] = docs

    def __delitem__(self, qid: str) -> None:
        del self._where[qid]
        self._lists.pop(qid, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, qid: object) -> bool:
        return qid in self._where

    def assigned(self) -> list[str]:
        """The queries whose lists were assigned (or already made from the packed hits), not left packed."""
        return list(self._lists)

    def __repr__(self) -> str:
        return f"PackedRanking({len(self)} queries)"
