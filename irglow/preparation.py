"""What every test split and every grid point of a pipeline share, done once: the plan bound, the collection
loaded and indexed, where the models train, each multi-field system's field weights."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from pathlib import Path
from typing import Any
from irglow.data.collection import agree_on_inputs, load_collection
from irglow.index.lucene_index import build_index
from irglow.index.stats import CollectionStats
from irglow.lexical.stage import LexicalSettings
from irglow.plan import Plan, Setup, bind_plan
from irglow.defaults import SEED
from irglow.data.union import SPLIT, UnionCollection, parse_sources
from irglow.models.source import TrainSource
from irglow.models.validation import sources
from irglow.utils.atomic import check_not_input
from irglow.utils.paths import models_dir
from irglow.utils.distributed import agree, check_shared_folder, launched, main_first, on_main

log = logging.getLogger(__name__)


@dataclasses.dataclass
class Prepared:
    """What every test split and every grid point shares: the collection, its index and statistics, where the
    models train (the source and the folder), the lexical settings and field weights, and the time each took.
    Stages get these as arguments (:class:`~irglow.stage.Context`); nothing is written back into the config."""

    collection: Any
    index: Any
    stats: Any
    source: Any  # a TrainSource: this collection's train split, another collection (zero-shot) or a union
    lexical: LexicalSettings
    field_weights: dict[str, dict[str, float]]
    timings: dict[str, float]
    splits: list[str]
    out: Path
    train_root: Path
    plan: Plan | None = None  # the plan it was prepared for (with the training index's fields)

    @classmethod
    def trained_elsewhere(cls, collection, index, stats, source, lexical: LexicalSettings,
                          field_weights: dict[str, dict[str, float]], split: str, out: Path, train_root: Path
                          ) -> "Prepared":
        """A collection evaluated with models (and field weights) from another one (zero-shot): the weights of the
        fields this index has, its one split, its own folder, the models' folder shared by every collection."""
        here = {s: {f: w for f, w in ws.items() if f in index.fields} for s, ws in field_weights.items()}
        return cls(collection, index, stats, source, lexical, here, {}, [split], out, train_root)


def training_side(setup: Setup, timings: dict[str, float], collection=None, index=None, stats=None):
    """Where models train and the field weights tuned there: ``collection.train`` (another collection, or several
    as one union) when it names one, else ``collection``'s own train split.  Shared by the pipeline and
    zero-shot: (TrainSource, {system: field weights})."""
    c, lexical = setup.collection, setup.lexical
    validation = sources(setup.validation.also, setup.validation.queries, setup.seed,
                         lambda coll: index_and_stats(coll, setup, timings))
    if collection is not None and not c.trains_elsewhere:
        source = TrainSource(collection, index, stats, c.train_split, validation)
    else:
        train_coll, split = training_collection(c.train or c.name, c.train_split)
        train_index, train_stats = index_and_stats(train_coll, setup, timings)
        source = TrainSource(train_coll, train_index, train_stats, split, validation)
    unknown = sorted(set(lexical.field_weights) - set(source.index.fields))
    if unknown and not lexical.tune_bm25f:  # configured weights: a misspelt field would be dropped, not weighted
        raise ValueError(f"lexical.field_weights names {unknown}, which {source.collection.name}'s index lacks; its "
                         f"fields: {list(source.index.fields)}")

    # tuned once, on rank 0, whatever the number of processes
    return source, on_main(lambda: lexical.field_weights_for(source.index, source.queries, source.qrels, timings))


def check_output(setup: Setup) -> Path:
    """The plan's output folder, refused where it lies in a collection's folder (never written into) or is the
    empty string (``output.dir = ""`` would write into the working folder)."""
    c, out = setup.collection, setup.output_dir
    for folder in {c.name, *(t for t in [c.train] if isinstance(t, str))}:
        check_not_input(out, [], "output.dir", data=folder)  # a collection folder is never written into
    return out


def prepare(config: dict[str, Any] | Plan | Setup) -> Prepared:
    """Load and index the collection (and the training collection), tune each multi-field system's weights; the
    models' training root is shared by every split and every output folder (:func:`models_root`).  Given a
    configuration, bind it first (every setting checked before any work); given a plan's :class:`~irglow.plan.Setup`
    (what the pipeline gives), what it prepares is the same whatever the plan's rankers (its ``plan`` is then
    ``None``: the caller gives its plan the training index's fields)."""
    bound = None if isinstance(config, Setup) else config if isinstance(config, Plan) else bind_plan(config)
    setup = config if isinstance(config, Setup) else bound.setup
    c, out = setup.collection, check_output(setup)
    out.mkdir(parents=True, exist_ok=True)

    agree("settings", json.loads(setup.recorded))  # under torchrun: one plan on every rank, or nothing starts
    check_shared_folder(out)  # under torchrun: every rank sees what rank 0 writes, or nothing starts
    splits = list(c.test_splits)
    collection = load_collection(c.name)
    if c.max_docs or c.max_queries:
        from irglow.data.collection import SampledCollection

        collection = SampledCollection(collection, splits if c.trains_elsewhere else [c.train_split, *splits],
                                       c.max_docs, dict(c.max_queries or {}), seed=SEED if setup.seed is None else setup.seed)
    # under torchrun: one corpus, one set of queries and judgments on every rank, or nothing starts
    agree_on_inputs(collection, splits if c.trains_elsewhere else [c.train_split, *splits])
    timings: dict[str, float] = {}
    index, stats = index_and_stats(collection, setup, timings)
    source, weights = training_side(setup, timings, None if c.trains_elsewhere else collection, index, stats)
    if launched():
        agree("training data", source.digest)  # another collection's corpus, queries and judgments too
    weights = {s: {f: w for f, w in ws.items() if f in index.fields} for s, ws in weights.items()}
    bound = bound.with_fields(list(source.index.fields)) if bound is not None else None
    return Prepared(collection, index, stats, source, setup.lexical, weights, timings, splits, out, models_root(), bound)


def models_root() -> Path:
    """Where models train (:func:`~irglow.utils.paths.models_dir`: shared by every output folder, each model in a
    folder keyed on its inputs); under ``torchrun``, checked to be a folder every rank sees."""
    root = models_dir()
    root.mkdir(parents=True, exist_ok=True)
    check_shared_folder(root)
    return root


def training_collection(value, default_split: str):
    """``collection.train`` as (collection, split): one source (``"a"``, ``"a@split"``), or several
    (``["a@train", "b@train"]``, ``"a@train,b@train"``) as one :class:`~irglow.data.union.UnionCollection`."""
    sources = parse_sources(list(value) if isinstance(value, tuple) else value, default_split)
    if len(sources) == 1:
        return load_collection(sources[0][0]), sources[0][1]
    return UnionCollection([(load_collection(spec), split) for spec, split in sources]), SPLIT


def index_and_stats(collection, setup: Setup, timings: dict[str, float]):
    """The collection's Lucene index (built once, cached under ``data_dir``) and its statistics; under ``torchrun``
    rank 0 builds both while the others wait, then they open what it built."""
    def build():
        t = time.perf_counter()
        index = build_index(collection, setup.index, root=setup.data_dir)
        timings["index_s"] = time.perf_counter() - t
        t = time.perf_counter()
        stats = CollectionStats.load(index)
        timings["stats_s"] = time.perf_counter() - t
        return index, stats

    return main_first(build)
