"""Several training sources as one collection: ``collection.train = ["a@train", "b@train"]``.

Every trainer (TW-BERT, GLOW/BERT, monoBERT, NRM-F) takes one index, one corpus and one set of judged
queries; the union gives it exactly that, so each trains on all sources at once with no change: its
batches are drawn from the shuffled union of the sources' queries (TW-BERT's ``balance_sources``: as
many of each source per batch, :func:`epoch_order`), graded labels stay as each source
gives them, and validation queries are carved from the union (so from every source) and scored as the
mean of each source's mean (:func:`mean_over_sources`), so that the largest source does not choose the
checkpoint alone.  Ids are
prefixed with the source's position (``0/…``, ``1/…``) so that two sources' "1" stay two queries.

What the union changes, on purpose and said here: it is indexed as one corpus, so collection
statistics (N, df, average field lengths) are the union's while a model trains, and BM25 candidates
or hard negatives for a query may come from another source's documents (they are unjudged there, so
non-relevant to it, which they are).  At test time every model reads the evaluated collection's own
statistics, as always.
"""

from __future__ import annotations

import random
import re
from typing import Iterable, Iterator, Sequence, TypeVar

from irglow.data.records import Document, Qrel, Query
from irglow.data.docstore import UnionStore, docs_store
from irglow.utils.digest import value_digest

T = TypeVar("T")

SPLIT = "train"  # the union has one split: each source's named split, together
_UNION_ID = re.compile(r"^(\d+)/")
# what a union's trainers select checkpoints on; part of the union's name, so models trained under
# another rule are not reused
VALIDATION = "mean over sources of each source's mean"


def source_of(record_id: str) -> str | None:
    """The source (``"0"``, ``"1"``, …) of a union id ``"0/…"``; ``None`` for any other id."""
    m = _UNION_ID.match(record_id)
    return m.group(1) if m else None


def mean_over_sources(per_query: dict[str, float]) -> float:
    """The validation mean a trainer selects on: for union ids, each source's mean, averaged (every
    source one vote — else the source with most queries picks the checkpoint alone); otherwise the plain
    mean.  One source, or any id that is not a union id, gives the plain mean."""
    if not per_query:
        return float("nan")
    groups = by_source(per_query.items())
    if groups is None:
        return sum(per_query.values()) / len(per_query)
    return sum(sum(v) / len(v) for v in groups.values()) / len(groups)


def by_source(pairs: Iterable[tuple[str, T]]) -> dict[str, list[T]] | None:
    """``(id, value)`` pairs grouped by the ids' source, in the order sources first appear; ``None`` when
    they are not a union of two or more sources (an id that is not a union id, or one source): then
    the caller treats them as one collection."""
    groups: dict[str | None, list[T]] = {}
    for record_id, value in pairs:
        groups.setdefault(source_of(record_id), []).append(value)
    return None if None in groups or len(groups) < 2 else groups


def epoch_order(ids: Sequence[str], seed: int, balanced: bool = False) -> list[int]:
    """The positions of ``ids`` in the order one training epoch visits them: shuffled with ``seed``.

    ``balanced`` (for union ids from two or more sources): each source's positions are shuffled and taken
    in turn, so every batch holds as many queries of each source (±1) — in the plain shuffle three in four
    would be NFCorpus's when it joins SciFact — and the epoch ends when the smallest source is used up: a
    pass over the smallest source, with a fresh draw from the larger ones each epoch.  Anything else
    (one source, plain ids) is the plain shuffle, whatever ``balanced`` says."""
    rng = random.Random(seed)
    groups = by_source((record_id, i) for i, record_id in enumerate(ids)) if balanced else None
    if groups is None:
        order = list(range(len(ids)))
        rng.shuffle(order)
        return order
    lists = [groups[k] for k in sorted(groups, key=int)]
    for g in lists:
        rng.shuffle(g)
    return [g[i] for i in range(min(map(len, lists))) for g in lists]


def _split_sources(value: str) -> list[str]:
    """Split ``"a@train,b@train"`` on commas, but keep a spec's own options together: a piece that reads
    ``key=value`` (``demo:n_topics=12,docs_per_topic=4``) continues the source before it."""
    items: list[str] = []
    for piece in (p.strip() for p in value.split(",")):
        if items and re.match(r"^\w+=", piece):
            items[-1] += "," + piece
        else:
            items.append(piece)
    return items


def parse_sources(value, default_split: str) -> list[tuple[str, str]]:
    """``"a@train,b@dev"``, ``["a@train", "b"]`` or ``"a"`` → ``[(spec, split), …]`` (``spec@split``; the last ``@``
    splits, so a path may hold one; no ``@``: ``default_split``)."""
    items = _split_sources(value) if isinstance(value, str) else [str(v).strip() for v in value]
    sources = []
    for item in filter(None, items):
        spec, at, split = item.rpartition("@")
        sources.append((spec, split) if at and spec and split else (item, default_split))
    if not sources:
        raise ValueError(f"collection.train = {value!r} names no collection")
    return sources


class UnionCollection:
    """The named splits of several collections as one corpus with one split, ``train``."""

    def __init__(self, parts: list[tuple[object, str]]):
        if len(parts) < 2:
            raise ValueError("a union needs two sources or more")

        self.parts = list(parts)
        self.name = "union-" + value_digest({"parts": [[c.name, s] for c, s in self.parts],
                                             "validation": VALIDATION})[:12]
        self.labels = [f"{c.name}@{s}" for c, s in self.parts]

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f for c, _ in self.parts for f in c.fields))

    def docs_iter(self) -> Iterator[Document]:
        for k, (coll, _) in enumerate(self.parts):
            for d in coll.docs_iter():
                yield d._replace(doc_id=f"{k}/{d.doc_id}")

    def docs_store(self):
        """Each part's store behind its id prefix (:mod:`irglow.data.docstore`)."""
        return UnionStore(self, [docs_store(c) for c, _ in self.parts])

    def _check(self, split: str) -> None:
        if split != SPLIT:
            raise ValueError(f"a union of training sources ({', '.join(self.labels)}) has one split, "
                             f"{SPLIT!r}, not {split!r}")

    def queries(self, split: str = SPLIT) -> list[Query]:
        self._check(split)
        return [Query(f"{k}/{q.query_id}", q.text) for k, (c, s) in enumerate(self.parts) for q in c.queries(s)]

    def qrels(self, split: str = SPLIT) -> list[Qrel]:
        self._check(split)
        return [r._replace(query_id=f"{k}/{r.query_id}", doc_id=f"{k}/{r.doc_id}")
                for k, (c, s) in enumerate(self.parts) for r in c.qrels(s)]
