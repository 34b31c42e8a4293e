"""One entry point, :func:`load_collection`, from a user-facing spec to a collection object.

A spec is ``demo``, a path to a BEIR folder, or an ir_datasets id.  Every collection offers
``name`` (a cache key), ``fields``, ``docs_iter()``, ``queries(split)`` and ``qrels(split)``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Iterator, Protocol

from irglow.data.records import Document, Qrel, Query
from irglow.defaults import SEED


class Collection(Protocol):
    """What every collection gives, whatever its source (ir_datasets, a BEIR or TREC folder, the demo): its documents
    as a lazy iterator, each split's queries and judgments, and a ``name`` that says its content (indexes and
    caches are keyed on it)."""
    name: str

    @property
    def fields(self) -> tuple[str, ...]: ...

    def docs_iter(self) -> Iterator[Document]:
        """Every document once, in the collection's order, read lazily (the corpus is never held whole)."""

    def queries(self, split: str) -> list[Query]:
        """The queries of ``split`` (``train``, ``dev``, ``test`` …); a split the collection lacks is a ``KeyError``
        naming those it has."""

    def qrels(self, split: str) -> list[Qrel]:
        """The relevance judgments of ``split`` (ir_measures' ``Qrel``: query id, document id, label)."""


def load_collection(spec: str) -> Collection:
    """The collection ``spec`` names: ``demo`` or ``demo:key=value,…`` (generated, offline), a BEIR folder
    (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``) or an ir_datasets id (``beir/scifact``; downloaded
    by ir_datasets on first use).  A path that exists but is no BEIR folder is an error naming it."""
    from irglow.data.beir import BeirCollection, is_beir_folder

    if spec == "demo" or spec.startswith("demo:"):
        from irglow.data.demo import DemoCollection, DemoConfig

        overrides = {}
        for item in filter(None, spec.partition(":")[2].split(",")):
            key, _, value = item.partition("=")
            known = {f.name: f for f in dataclasses.fields(DemoConfig)}
            if key in overrides:  # one setting, one value: the last would silently win
                raise ValueError(f"demo collection: {key} is given twice in {spec!r}; give it once")
            if key not in known:
                raise ValueError(f"demo collection: unknown setting {key!r} in {spec!r}; known: {', '.join(known)}")
            try:
                overrides[key] = type(getattr(DemoConfig, key))(value)
            except ValueError:
                raise ValueError(f"demo collection: {key}={value!r} is not a {type(getattr(DemoConfig, key)).__name__}"
                                 ) from None
        return DemoCollection(DemoConfig(**overrides))
    if is_beir_folder(spec):
        return BeirCollection(spec)
    if Path(spec).exists():
        raise FileNotFoundError(f"{spec} exists but is not a BEIR folder (expected corpus.jsonl inside)")
    from irglow.data.irds import IrdsCollection

    return IrdsCollection(spec)


class SampledCollection:
    """A smaller, deterministic version of a collection (``make run-msmarco SIZE=small``): at most
    ``max_queries[split]`` judged queries per split (a seeded sample; unlisted splits stay whole), and
    every document judged for a kept query plus the first ``max_docs`` others — so each kept query
    keeps all its judged documents and the sample is still a retrieval problem.

    Args:
        base: The whole collection.
        splits: The splits sampled (and kept).
        max_docs: Documents kept besides the judged ones of the kept queries (unset: all).
        max_queries: Judged queries kept per split (``{"train": 5000}``; unlisted splits stay whole).
        seed: The sample's seed.
    """

    def __init__(self, base: Collection, splits: list[str], max_docs: int | None = None,
                 max_queries: dict[str, int] | None = None, seed: int = SEED):
        self.base, self.splits, self.max_docs, self.seed = base, list(dict.fromkeys(splits)), max_docs, seed
        self.max_queries = dict(max_queries or {})
        unknown = sorted(set(self.max_queries) - set(self.splits))
        if unknown:
            raise ValueError(f"max_queries names splits {unknown} that this run does not use; its splits: {self.splits}")
        limits = ",".join(f"{k}={v}" for k, v in sorted(self.max_queries.items()))
        self.name = f"{base.name}-sample-d{max_docs or 'all'}-q{limits or 'all'}-s{seed}"
        self._kept: dict[str, set[str]] = {}

    @property
    def fields(self) -> tuple[str, ...]:
        return self.base.fields

    def _query_ids(self, split: str) -> set[str]:
        if split not in self._kept:
            import random

            judged = sorted({r.query_id for r in self.base.qrels(split)})
            limit = self.max_queries.get(split)
            keep = judged if limit is None or limit >= len(judged) else random.Random(self.seed).sample(judged, limit)
            self._kept[split] = set(keep)
        return self._kept[split]

    def queries(self, split: str) -> list[Query]:
        """The kept queries of ``split`` (all of them where the split is not sampled)."""
        if split not in self.max_queries:
            return self.base.queries(split)
        kept = self._query_ids(split)
        return [q for q in self.base.queries(split) if q.query_id in kept]

    def qrels(self, split: str) -> list[Qrel]:
        """The judgments of the kept queries of ``split``."""
        if split not in self.max_queries:
            return self.base.qrels(split)
        kept = self._query_ids(split)
        return [r for r in self.base.qrels(split) if r.query_id in kept]

    def docs_iter(self) -> Iterator[Document]:
        """Every document judged for a kept query, and the first ``max_docs`` others, in the base collection's order."""
        judged = {r.doc_id for split in self.splits for r in self.qrels(split)}
        others = 0
        for doc in self.base.docs_iter():
            if doc.doc_id in judged:
                yield doc
            elif self.max_docs is None or others < self.max_docs:
                others += 1
                yield doc

    def docs_store(self):
        """The base collection's store, restricted to the kept documents (:mod:`irglow.data.docstore`)."""
        from irglow.data.docstore import SampledStore, docs_store

        return SampledStore(self, docs_store(self.base))

    def docs_count(self) -> int | None:
        """The number of documents when known without reading them (``None`` otherwise)."""
        return None


def input_digests(collection: Collection, splits) -> dict[str, str]:
    """What a job reads of ``collection``, by content: its name (which carries its corpus's digest: a BEIR folder's
    corpus.jsonl, a demo's settings, an ir_datasets id) and each split's queries and judgments.  Ranks of one
    ``torchrun`` job compare these before any work (:func:`irglow.utils.distributed.agree`): a node whose corpus,
    queries or qrels differ would otherwise do its share of another job.

    Args:
        collection: The collection.
        splits: The splits whose queries and judgments are digested.
    """
    from irglow.utils.digest import qrels_digest, queries_digest

    out = {"collection": collection.name}
    for split in dict.fromkeys(splits):
        try:
            out[f"queries:{split}"] = queries_digest(collection.queries(split))
            out[f"qrels:{split}"] = qrels_digest(collection.qrels(split))
        except (KeyError, ValueError, FileNotFoundError) as e:  # a split this collection lacks: said where it is read
            out[f"split:{split}"] = f"absent ({type(e).__name__})"
    return out


def agree_on_inputs(collection: Collection, splits, files=()) -> None:
    """Under ``torchrun``: stop before any work unless every rank reads the same collection, queries and judgments
    (:func:`input_digests`) and the same ``files`` (a run to re-rank), by content.

    Args:
        collection: The collection.
        splits: The splits read.
        files: Other files read (a run to re-rank).
    """
    from irglow.utils import distributed
    from irglow.utils.digest import file_digest

    if distributed.launched():
        distributed.agree("inputs", {**input_digests(collection, splits),
                                     **{f"file {f}": file_digest(f) for f in files}})

