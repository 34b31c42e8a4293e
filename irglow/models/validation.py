"""Choosing a checkpoint on more than the training collection: ``[validation] also``.

A model fine-tuned on a few hundred queries of one collection and selected on held-out queries of the same
collection is chosen for what it learnt there; what it forgot about everything else (what the checkpoint it
started from knew) never enters the choice.  With::

    [validation]
    also = ["../shared/data/nfcorpus@train"]   # collection@split, one or more
    queries = 100                                # judged queries drawn from each (seeded)
    stages = ["glow", "rerank"]                  # whose trainers use them (unset: every stage that can)

GLOW/BERT, monoBERT and NRM-F score every candidate checkpoint on their usual held-out training queries *and*
on each listed source's queries, each source searched in its own index with its own statistics (as a test
collection would be), and keep the checkpoint with the best mean over sources (each source one vote, as
:func:`irglow.data.union.mean_over_sources` does for training unions).  The curve of every source is kept in
``training.json``.  Take the queries from a split the experiment does not report (NFCorpus *train* when NFCorpus
*dev* is evaluated): queries that choose a checkpoint are not test queries.  TW-BERT keeps its in-domain
validation (its weights run in Lucene, and its union training is the way to give it a second source).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Mapping

from irglow.data.docstore import docs_store
from irglow.data.records import Document, Qrel, Query
from irglow.defaults import SEED
from irglow.data.collection import load_collection
from irglow.data.union import parse_sources
from irglow.utils.digest import qrels_digest, queries_digest


@dataclass(frozen=True)
class ValidationSource:
    """Another collection's judged queries that a trainer also selects its checkpoint on."""

    label: str  # "<collection>@<split>"
    collection: Any
    index: Any
    stats: Any
    queries: tuple[Query, ...]
    qrels: tuple[Qrel, ...]

    @property
    def docs(self) -> Mapping[str, Document]:
        """Its documents by id (:func:`~irglow.data.docstore.docs_store`): never the corpus in memory."""
        return docs_store(self.collection)

    @cached_property
    def digest(self) -> dict[str, str]:
        return {"label": self.label, "index": Path(self.index.path).name, "queries": queries_digest(self.queries),
                "qrels": qrels_digest(self.qrels)}


class ChoosesOnOtherSources:
    """Mixed into a stage whose trainers may also choose checkpoints on ``[validation] also``: its cache key then
    holds those sources' digests (keys written before ``[validation]`` existed stay valid without them)."""

    validates_elsewhere = True

    def chosen_on_key(self, ctx) -> dict[str, Any]:
        return chosen_on(ctx.source, ctx.settings.validate_elsewhere)[1]


def check_stages(stages: tuple[str, ...] | None, capable: list[str]) -> None:
    """Stop on a ``validation.stages`` entry that is not one of the ``capable`` stages (those with
    :attr:`~irglow.stage.Stage.validates_elsewhere`, which the pipeline reads from its stage list), naming it."""
    wrong = [s for s in stages or () if s not in capable]
    if wrong:
        raise ValueError(f"validation.stages: {wrong} cannot choose checkpoints on other sources; "
                         f"those that can: {', '.join(capable)}")


def chosen_on(source, used: bool) -> tuple[tuple, dict[str, Any]]:
    """The other sources a stage's trainers choose on (``used``: its settings' ``validate_elsewhere``, from :meth:`irglow.plan.ValidationSettings.uses`) and what they add to
    a key: ``{"validated_on": [digests]}``, or nothing when there are none (so that keys written before
    ``[validation]`` existed stay valid)."""
    also = tuple(source.validation) if used else ()
    return also, ({"validated_on": digests(also)} if also else {})


def sources(also: tuple[str, ...], n: int, seed: int | None, index_and_stats: Callable) -> tuple[ValidationSource, ...]:
    """The ``[validation] also`` sources (``collection@split`` each), loaded and indexed (``index_and_stats(
    collection)``); each keeps ``n`` of its judged queries (those with a relevant document in its corpus), drawn
    with the experiment's seed."""
    if not also:
        return ()
    seed = SEED if seed is None else seed
    out = []
    for spec, split in parse_sources(list(also), "train"):
        collection = load_collection(spec)
        index, stats = index_and_stats(collection)
        doc_ids = docs_store(collection)  # membership by id: nothing of a document's text held
        qrels = collection.qrels(split)
        judged = {r.query_id for r in qrels if r.relevance > 0 and r.doc_id in doc_ids}
        queries = [q for q in collection.queries(split) if q.query_id in judged and q.text.strip()]
        if not queries:
            raise ValueError(f"validation.also: {spec}@{split} has no judged query with a relevant document in its "
                             f"corpus to validate on")
        queries = sorted(random.Random(seed).sample(sorted(queries, key=lambda q: q.query_id), min(n, len(queries))),
                         key=lambda q: q.query_id)
        ids = {q.query_id for q in queries}
        out.append(ValidationSource(f"{collection.name}@{split}", collection, index, stats, tuple(queries),
                                    tuple(r for r in qrels if r.query_id in ids)))
    return tuple(out)


def digests(validation: tuple[ValidationSource, ...]) -> list[dict[str, str]]:
    return [s.digest for s in validation]


def selection_score(in_domain: float, others: dict[str, float]) -> float:
    """What a trainer keeps its checkpoint on: the mean over sources — the training collection's held-out queries
    and each other source, one vote each (an undefined score, no held-out query, is left out)."""
    scores = [s for s in (in_domain, *others.values()) if not math.isnan(s)]
    return sum(scores) / len(scores) if scores else float("nan")
