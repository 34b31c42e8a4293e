"""The one binding step: a configuration (a file with its ``config = "…"`` includes, ``--set`` overrides and
``Experiment`` arguments, as :mod:`irglow.config` loads them) turned into a frozen, typed :class:`Plan` before any
work.  This module is the only reader of the raw dictionary downstream of loading: every section is checked here
(misspelt keys anywhere, wrong types, out-of-range values, invalid choices — one error naming the full key, the
value and what is allowed) and bound into its settings object; the pipeline, the grid and zero-shot read the plan,
and each stage gets its own settings object (its ``settings_class.from_config``).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from pathlib import Path
from typing import Any, Mapping

from irglow import settings
from irglow.config import SealedConfig, as_names, check_settings, flag
from irglow.eval.compare import COMPARISON_SETTINGS
from irglow.eval.measures import DEFAULT_MEASURES, parse_measures, split_measures
from irglow.index.lucene_index import IndexConfig, check_index_config
from irglow.lexical.stage import LexicalSettings
from irglow.runs.trec import check_run_name
from irglow.models.validation import check_stages
from irglow.lexical.systems import lexical_systems
from irglow.models.glow import VARIANTS
from irglow.models.glow.stage import UNTRAINED
from irglow.models.rerank.kinds import kind_names
from irglow.models.rerank.stage import NOT_TRAINING
from irglow.rankers import (ALL, TWBERT_RUNS, Dense, Fusion, Graph, Lexical, Listed, Model, Named, Ranker, Rerank,
                            StageRun, TWBert, UnmadeRun, configured_fusions, split_fusion, split_reranked, written)
from irglow import stages  # its STAGES read when binding: a registry tests and plugins extend

# what a pipeline configuration may hold; each stage checks its own section (irglow.stages)
SECTIONS: dict[str, tuple[str, ...] | None] = {
    **{k: None for k in settings.TOP_LEVEL if k != "base"},  # seed, data_dir (base: resolved when a file loads)
    "collection": None,  # declared in irglow.settings (as are [output], [fusion], [validation], [zero_shot])
    "index": tuple(f.name for f in dataclasses.fields(IndexConfig)),
    "eval": None,  # declared in irglow.settings
    "output": None,
    "validation": None,
    "zero_shot": None,
    "presets": None,  # named settings for `irglow run --grid preset=…` (irglow.grid checks them)
    "grid": None,  # written by irglow.grid: the points and the one chosen on validation
}


@dataclasses.dataclass(frozen=True)
class CollectionSettings:
    """``[collection]`` bound: the evaluated collection, where models train (another collection or several, else
    its own train split), the splits evaluated, and the sampling of documents and queries."""

    name: str
    train: str | tuple[str, ...] | None
    train_split: str
    test_splits: tuple[str, ...]
    max_docs: int | None = None
    max_queries: Mapping[str, int] | None = None

    @property
    def trains_elsewhere(self) -> bool:
        """Whether models train on another collection than the evaluated one."""
        return self.train not in (None, "", (), self.name)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "CollectionSettings":
        c = config.get("collection", {})
        test = settings.value(config, "collection", "test_split")
        train = c.get("train")
        return cls(settings.value(config, "collection", "name"), tuple(train) if isinstance(train, list) else train,
                   settings.value(config, "collection", "train_split"),
                   tuple(test) if isinstance(test, (list, tuple)) else (test,), c.get("max_docs"),
                   c.get("max_queries"))


@dataclasses.dataclass(frozen=True)
class EvalSettings:
    """``[eval]`` bound: the measures, the baseline, the runs compared (``None``: every run) and the settings
    that shape the comparison (test, correction, CI, condensed view, risk, pairs)."""

    measures: str | tuple[str, ...]
    baseline: str
    runs: tuple[str, ...] | None
    comparison: Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class ValidationSettings:
    """``[validation]`` bound: the other sources checkpoints are also chosen on, how many queries of each, and the
    stages whose trainers choose on them (``None``: every stage that can)."""

    also: tuple[str, ...]
    queries: int
    stages: tuple[str, ...] | None = None

    def uses(self, stage: str) -> bool:
        """Whether ``stage``'s trainers choose their checkpoints on the other sources too: yes, unless ``stages``
        names other stages only."""
        return self.stages is None or stage in self.stages


def collection_specs(items: list[Any]) -> list[tuple[str, str]]:
    """``["beir/nfcorpus", "x@dev", {name = …, split = …}]`` → ``[(name, split), …]``; a string without
    ``@split`` means split ``test``."""
    specs = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            name, at, split = item.rpartition("@")
            specs.append((name, split) if at else (item, "test"))
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            check_settings(item, ("name", "split"), f"zero_shot.collections[{i}]")
            specs.append((item["name"], str(item.get("split", "test"))))
        else:
            raise ValueError(f"zero_shot.collections[{i}] is {item!r}: give a collection (BEIR folder, 'demo…' or "
                             "an ir_datasets id) or a table {name = …, split = …}")
    if not specs:
        raise ValueError("zero_shot.collections is empty: list the collections to evaluate on")
    return specs


@dataclasses.dataclass(frozen=True)
class ZeroShotSettings:
    """``[zero_shot]`` bound (``irglow zero-shot``): where the models train, the collections evaluated as
    ``(name, split)``, the measure of the cross-collection table, and the output folder (``[output] dir`` when
    set, else ``runs/zero-shot``)."""

    train: str | tuple[str, ...] | None
    train_split: str
    collections: tuple[tuple[str, str], ...]
    measure: str
    output_dir: Path

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "ZeroShotSettings":
        train = settings.value(config, "zero_shot", "train")
        given = (config.get("output") or {}).get("dir")
        return cls(tuple(train) if isinstance(train, list) else train,
                   settings.value(config, "zero_shot", "train_split"),
                   tuple(collection_specs(list(settings.value(config, "zero_shot", "collections")))),
                   settings.value(config, "zero_shot", "measure"), Path(given or "runs/zero-shot"))


@dataclasses.dataclass(frozen=True)
class Setup:
    """What preparing a plan reads — its collection, index, lexical settings, validation sources, seed and output
    folder — and not which runs it makes: the index, statistics, training side and field weights are the same whatever
    the rankers (:mod:`irglow.preparation` is given this, never the graph).  ``recorded`` is the configuration as
    loaded, as JSON text: the manifest's record, read by no stage."""

    recorded: str
    seed: int | None
    data_dir: str | None
    collection: CollectionSettings
    index: IndexConfig
    lexical: LexicalSettings
    output_dir: Path
    validation: ValidationSettings


@dataclasses.dataclass(frozen=True)
class Plan:
    """The configuration bound, before any work: the typed top-level sections; every enabled stage with its
    settings object, in the order they run; the runs they produce; and the bound graph of their rankers, which
    says what a node reads of another (:class:`~irglow.rankers.Graph`).  ``recorded`` is the configuration as loaded, as JSON text: the manifest's record, read by no
    stage."""

    setup: Setup  # what preparing it reads: the collection, index, lexical settings, validation, output folder
    eval: EvalSettings
    report_clusters: int | None  # topic clusters in the results page (None: about one per 25 queries; 0: none)
    report_page: bool  # whether the results page (report.html) is written
    zero_shot: ZeroShotSettings | None  # where the configuration has a [zero_shot] section
    stages: tuple[tuple[Any, Any], ...]  # (stage, its settings object)
    tags: tuple[str, ...]
    # the bound ranker tree: {run: its node}, each node a Ranker whose parts are the graph's own nodes (object
    # edges), made by the stage writing it from its bound settings (Stage.node).  The pipeline runs its units in
    # the graph's order; what a node reads of another (held-out and training queries' runs, a re-ranked block's
    # depth) is asked of it
    graph: Graph = dataclasses.field(default_factory=Graph)
    # {stage's name: the runs it writes}, as binding planned them (the pipeline asks no stage again)
    written: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    # the rankers an Experiment bound as objects (None: a configuration's lists, read): what the manifest writes
    rankers: tuple | None = None

    recorded = property(lambda self: self.setup.recorded, doc="The configuration as loaded, as JSON text.")
    seed = property(lambda self: self.setup.seed, doc="The experiment's seed.")
    data_dir = property(lambda self: self.setup.data_dir, doc="Where indexes are built.")
    collection = property(lambda self: self.setup.collection, doc="``[collection]`` bound.")
    index = property(lambda self: self.setup.index, doc="``[index]`` bound.")
    lexical = property(lambda self: self.setup.lexical, doc="``[lexical]`` bound, for its nodes' systems.")
    output_dir = property(lambda self: self.setup.output_dir, doc="The output folder.")
    validation = property(lambda self: self.setup.validation, doc="``[validation]`` bound.")

    def with_setup(self, **changes: Any) -> "Plan":
        """The same plan, its :class:`Setup` changed (another collection evaluated, another record)."""
        return dataclasses.replace(self, setup=dataclasses.replace(self.setup, **changes))

    def evaluating(self, name: str, test_split: str, train_split: str | None = None) -> "Plan":
        """The same plan evaluating another collection (zero-shot: each listed collection in turn)."""
        return self.with_setup(collection=CollectionSettings(
            name, None, train_split or self.collection.train_split, (test_split,)))

    def manifest_config(self, test_split: str | None = None) -> dict[str, Any]:
        """The configuration as the manifest records it (of one evaluated split: its collection and split)."""
        config = json.loads(self.recorded)
        if self.rankers is not None:  # bound from objects: written into it by the one writer, to be read back
            config = written(config, self.rankers, self.eval.baseline)
        if test_split is None:
            return config
        return {**config, "collection": {**config.get("collection", {}), "name": self.collection.name,
                                         "test_split": test_split}}

    def recording(self, key: str, value: Any) -> "Plan":
        """The same plan, its manifest also recording ``key`` (the grid's points and choice)."""
        return self.with_setup(recorded=json.dumps({**json.loads(self.recorded), key: value}, default=str))

    def with_fields(self, fields) -> "Plan":
        """The same plan for a training index with these ``fields``, once it is built: each settings object that
        depends on them (the re-rankers' ``{field}`` variants) gives its own typed copy (``with_fields``), and the
        runs are planned again — the configuration is not read again."""
        bound = [(s, s.with_fields(b, fields)) for s, b in self.stages]
        if all(new is old for (_, new), (_, old) in zip(bound, self.stages)):
            return self
        return dataclasses.replace(self, **_bound(bound, self.rankers, {}, self.eval.baseline, self.eval.runs))


def _listed(bound: list[tuple[Any, Any]]) -> dict[str, Ranker]:
    """``{run: ranker}``: the runs a configuration's switches and lists make (each stage's
    :meth:`~irglow.stage.Stage.tags`, in the order they run), each a :class:`~irglow.rankers.Listed` its stage binds
    (:meth:`~irglow.stage.Stage.node`); one run, one writer: a second writer of a tag would replace the first's file."""
    listed: dict[str, Ranker] = {}
    for s, settings_object in bound:
        for tag in s.tags(settings_object):
            check_run_name(tag, f"[{s.name}]'s run")
            if tag in listed:
                first = listed[tag].stage
                also = "twice" if first == s.name else f"by [{first}] and by [{s.name}]"
                raise ValueError(f"run {tag!r} is made {also}: one name names one run file, and one would replace the "
                                 f"other; rename one (a re-ranking's or variant's name, Rerank(…, name=…))")
            listed[tag] = Listed(s.name, tag)
    return listed


def _made_of_each_other(making: list[str], tag: str) -> ValueError:
    """The error for ``tag`` met again while its node is being made (``making``: the runs being made, outermost
    first)."""
    return ValueError(f"runs made of each other (a re-ranking of itself, a fusion of a run made from it): "
                      f"{' → '.join([*making[making.index(tag):], tag])}")


def _stage_of(ranker) -> str:
    name = getattr(ranker, "stage", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{ranker!r} is no ranker a stage makes (irglow.rankers: Lexical, Dense, Fusion, Rerank …)")
    return name


def _closure(rankers, config: dict[str, Any]) -> dict[str, Ranker]:
    """``{run: ranker}``: the rankers and their parts, parts first, each run's first ranker; a part given by its
    run's name (:class:`~irglow.rankers.Named`) is the ranker of that name among them, else what the name reads as
    (:func:`parsed`)."""
    given: dict[str, Ranker] = {}
    named: list[str] = []

    def walk(r) -> None:
        if isinstance(r, Named):
            if r.tag != ALL:
                named.append(r.tag)
            return
        for p in r.parts:
            walk(p)
        given.setdefault(r.tag, r)

    for r in rankers:
        walk(r)
    while named:
        tag = named.pop()
        if tag not in given:
            try:
                walk(parsed(tag, config))
            except ValueError:  # binding names it, with the run that reads it (UnmadeRun)
                continue
    return given


def _same(a, b) -> bool:
    """Whether two rankers of one run name are one ranker (a fusion's parts compared by name, a re-ranking's depth
    too)."""
    if isinstance(a, Fusion) and isinstance(b, Fusion):
        return a.same_fusion(b)
    return a == b and getattr(a, "depth", None) == getattr(b, "depth", None)


def _conflict(a, b) -> ValueError:
    """Two rankers of one experiment with one run name: the error naming what differs."""
    tag = a.tag
    if isinstance(a, Fusion) and isinstance(b, Fusion):
        return ValueError(f"two fusions of {tag} with different settings ({a.settings_text()} and {b.settings_text()}) "
                          f"in one experiment; a run tag names one run: compare them in two experiments (or a grid)")
    stages_of = [getattr(x, "stage", "?") for x in (a, b)]
    if stages_of[0] != stages_of[1]:
        return ValueError(f"run {tag!r} is made by [{stages_of[0]}] and by [{stages_of[1]}]: one name names one run "
                          f"file, and one would replace the other; rename one (Rerank(…, name=…))")
    what = "one run name names one re-ranking" if isinstance(a, Rerank) else "a run name names one run file"
    return ValueError(f"two rankers named {tag!r} in one experiment ({a!r} and {b!r}): {what}; give one of them a "
                      f"name (Rerank(…, name=…)) or compare them in two experiments")


def _bound(bound: list[tuple[Any, Any]], rankers, config: dict[str, Any], baseline: str | None,
           wanted: tuple[str, ...] | None, given: dict[str, Ranker] | None = None) -> dict[str, Any]:
    """The graph of ``given`` bound (each stage binds its own, parts first: :meth:`~irglow.stage.Stage.bind`, or
    :meth:`~irglow.stage.Stage.node` for a run its settings list), its runs in the stages' order, each stage's settings
    for its nodes (:meth:`~irglow.stage.Stage.with_nodes`); one run name names one ranker, and ``[eval]``'s baseline
    and runs are among them.  ``rankers``: an experiment's, bound as objects (``given``: their :func:`_closure`, where
    the caller has not walked it already; a run a part names that is not among them read from ``config`` and added);
    ``None``: a configuration's lists (``given``: :func:`_listed`; a part no stage makes is an
    :class:`~irglow.rankers.UnmadeRun`, which a stage may catch, or leave its node out: ``None``)."""
    if given is None:
        given = _listed(bound) if rankers is None else _closure(rankers, config)
    by_stage = {s.name: (s, b) for s, b in bound}
    nodes: dict[str, Ranker | None] = {}
    making: list[str] = []

    def unmade(tag: str) -> UnmadeRun:
        reader = making[-1] if making else None
        return UnmadeRun(tag, reader, [t for t in given if t != reader and nodes.get(t, True) is not None])

    def bind_node(r):
        if isinstance(r, str):  # a part a stage's node names by its run (Stage.node's node_of)
            r = Named(r)
        if isinstance(r, Named) and r.tag != ALL:
            if r.tag not in given:
                if rankers is None:  # a configuration's lists say every run it makes
                    raise unmade(r.tag)
                try:
                    given[r.tag] = parsed(r.tag, config)
                except ValueError:
                    raise unmade(r.tag) from None
            r = given[r.tag]
        tag = r.tag
        if not _same(given.get(tag, r), r):  # one run name, one run file: the second would be dropped unseen
            raise _conflict(given[tag], r)
        if tag not in nodes:
            if tag in making:
                raise _made_of_each_other(making, tag)
            check_run_name(tag, "a ranker's run")
            making.append(tag)
            try:
                stage, settings_object = by_stage[_stage_of(r)]
                nodes[tag] = stage.node(tag, settings_object, bind_node) if isinstance(r, Listed) else \
                    stage.bind(r, settings_object, bind_node)
            finally:
                making.pop()
        if nodes[tag] is None and making:  # its stage left it out (an optional fusion of runs not made)
            raise unmade(tag)
        return nodes[tag]

    for r in [*given.values(), *(rankers or ())]:  # a ranker given twice under one name is refused
        bind_node(r)
    order = list(given)  # the stages' order, each stage's runs in the order given (parts first)
    written_by = {s.name: tuple(t for t in order if nodes.get(t) is not None and _stage_of(nodes[t]) == s.name)
                  for s, _ in bound}
    tags = [t for s, _ in bound for t in written_by[s.name]]
    bound = [(s, s.with_nodes(b, [nodes[t] for t in written_by[s.name]])) for s, b in bound]
    if baseline is not None and baseline not in tags:
        raise ValueError(f"eval.baseline = {baseline!r} is not a run this configuration produces; its runs: "
                         f"{', '.join(tags)}")
    missing = [t for t in (wanted or ()) if t not in tags]
    if missing:
        raise ValueError(f"eval.runs names runs this configuration does not produce: {missing}; its runs: "
                         f"{', '.join(tags)}")
    return {"stages": tuple(bound), "tags": tuple(tags), "graph": Graph({t: nodes[t] for t in tags}),
            "written": written_by, "rankers": None if rankers is None else tuple(rankers)}


def ranker(spec, config: dict[str, Any] | None = None):
    """``spec`` as a node of a bound graph (:class:`~irglow.rankers.Ranker`): a ranker as it is; a run's name as the
    node that makes it in ``config`` (bound, as :func:`bind_plan` binds a run: the node a pipeline runs and a run
    folder rebuilds), else in ``config`` with what makes that name switched on (:func:`parsed`)."""
    if not isinstance(spec, str) or not spec:
        return parsed(spec)  # a ranker as it is; anything else a TypeError
    config = copy.deepcopy(dict(config or {}))
    made = made_rankers(config, strict=False)
    if spec in made:
        return made[spec]
    parsed(spec, config).configure(config)
    return made_rankers(config)[spec]


def made_rankers(config: dict[str, Any], strict: bool = True) -> Graph:
    """The runs ``config`` makes, as its bound graph's nodes, whatever it compares (a run's node does not depend on
    which runs a table shows); ``strict=False``: an empty graph where it does not bind."""
    try:
        return bind_plan(config, compared=False).graph
    except ValueError:
        if strict:
            raise
        return Graph()


def parsed(spec, config: dict[str, Any] | None = None):
    """A run's name read into the ranker that makes it — the one reader of run names (their syntax is
    :mod:`irglow.rankers`'): ``a+b`` a fusion, ``kind(first)`` and a kind's name re-rankings, a re-ranker a
    configuration defines, a lexical system (``-rm3``: with RM3), TW-BERT's and the dense runs, and any stage's own
    runs (a plugin's).  ``config``: the configuration it belongs to, for the re-rankers and fusions it defines.  Not
    bound: :func:`ranker` gives the node."""
    if isinstance(spec, Ranker):
        return spec
    if not isinstance(spec, str) or not spec:
        raise TypeError(f"a system is a ranker (irglow.rankers) or the name of a run, not {spec!r}")
    config = config or {}

    def parse(name: str):
        return parsed(name, config)

    if spec.removesuffix("-rm3") in lexical_systems():
        return Lexical(spec)
    if spec in TWBERT_RUNS:
        return TWBert(spec)
    if spec in (*VARIANTS, *UNTRAINED):
        return Dense(spec)
    found = _reranking(spec, config, parse)
    if found is not None:
        return found
    parts = split_fusion(spec)
    if len(parts) > 1:  # with the method, normalisation or weights the configuration gives that hybrid
        made = next((h for h in configured_fusions(config) if h.tag == spec), Fusion(parts))
        return Fusion([parse(p) for p in made.part_tags], made.method, made.norm, made.weights)
    for stage in stages.STAGES:  # any other stage's own runs (QL's, a plugin's)
        if spec in _default_tags(stage):
            return StageRun(stage.name, spec)
    raise ValueError(f"{spec!r} is not a run irglow can make: name one of {', '.join(_stage_runs())} (a lexical "
                     f"system also with RM3: bm25-rm3), a fusion a+b or a re-ranking monobert(a) / nrmf(a)")


def _reranking(name: str, config: dict[str, Any], parse):
    """A kind (``monobert``: over ``[rerank] first_stage``), ``kind(first)`` (the kind re-ranking the run ``first``
    names), or a re-ranker the configuration defines (a variant), else ``None``."""
    def named(ranker):  # under this name, where its own tag would be another
        return ranker if ranker.tag == name else dataclasses.replace(ranker, name=name)

    section = config.get("rerank", {})
    head, inner = split_reranked(name) or ("", "")
    if head in kind_names():  # its variant's training settings, where it has some
        own = {k: v for k, v in section.get("variants", {}).get(name, {}).items() if k not in NOT_TRAINING}
        return named(Rerank(parse(inner), Model(head, **own)))
    if name in kind_names():
        return named(Rerank(parse(settings.value(config, "rerank", "first_stage")), Model(name)))
    templates = [k for k in section.get("variants", {}) if "{field}" in k]  # one model per field
    if name in as_names(section.get("models", [])) or name in section.get("variants", {}) or any(
            re.fullmatch(re.escape(k).replace(re.escape("{field}"), ".+"), name) for k in templates):
        return Listed("rerank", name, key="models")
    return None


def _default_tags(stage) -> list[str]:
    """The runs ``stage`` writes with its default settings (none where those make none)."""
    try:
        return stage.default_tags()
    except (ValueError, TypeError, KeyError):
        return []


def _stage_runs() -> list[str]:
    """The runs the stages write with their default settings (for the error naming what exists)."""
    return list(dict.fromkeys(t for stage in stages.STAGES for t in _default_tags(stage)))


def selecting_keys() -> list[tuple[str, str]]:
    """``(section, key)`` of every setting that chooses which runs a configuration makes (declared ``selects``):
    the ``enabled`` switches and the lists of runs."""
    return [*((s, k) for s, keys in settings.DECLARED.items() for k, d in keys.items() if d.selects),
            *(("lexical", k) for k, d in settings.declared_fields("lexical", LexicalSettings).items() if d.selects)]


def settings_only(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` without what chooses its runs (:func:`selecting_keys`): the settings an ``Experiment`` takes from a
    file whose runs its systems say (``lexical.systems`` empty: a lexical run is made where a system needs it)."""
    out = copy.deepcopy(config)
    for section, key in selecting_keys():
        if isinstance(out.get(section), dict):
            out[section].pop(key, None)
    out.setdefault("lexical", {})["systems"] = []
    return out


def bind_sealed(config: dict[str, Any], rankers: Any = None) -> Plan:
    """``config`` bound (:func:`bind_plan`), then sealed (:class:`~irglow.config.SealedConfig`; a plain dict is
    wrapped first): a module that kept a table of it, or reads a setting from it after binding, stops with an error
    instead of running on a default — what ``irglow run`` and an ``Experiment`` run."""
    sealed = config if isinstance(config, SealedConfig) else SealedConfig(config)
    plan = bind_plan(sealed, rankers=rankers)
    sealed.seal()
    return plan


def check_config(config: dict[str, Any]) -> list[str]:
    """Stop before any work on a misspelt section or key, a wrong type or value, naming it; every stage binds its
    own section.  Returns the run tags the configuration produces."""
    return list(bind_plan(config).tags)


def index_config(config: dict[str, Any]) -> IndexConfig:
    """The ``[index]`` section as an :class:`IndexConfig` (its defaults are IndexConfig's; a list of fields
    becomes a tuple; anything else is passed on as it is, for :func:`check_index_config` to name)."""
    icfg = dict(config.get("index", {}))
    if isinstance(icfg.get("fields"), list):
        icfg["fields"] = tuple(icfg["fields"])
    return IndexConfig(**icfg)


def bind_plan(config: dict[str, Any], fields: list[str] | None = None, *, compared: bool = True,
              rankers: Any = None) -> Plan:
    """The configuration as a :class:`Plan`: every section checked (misspelt keys, types, ranges and choices, each
    named), every enabled stage's settings bound once, the runs checked against what the stages before produce.
    Nothing downstream reads ``config`` again (``fields``: the training index's where already known,
    :meth:`Plan.with_fields`; ``compared=False``: the runs it makes, ``[eval]``'s baseline and runs not checked
    against them — what a ranker's node needs).

    ``rankers``: an experiment's rankers, bound as the objects they are (:func:`_bound`): the configuration then
    gives settings only, the stages they need are switched on, and they are the runs compared (the first the
    baseline).  Unset: the configuration's switches and lists of runs say which runs are made (each stage reads its
    own: :meth:`~irglow.stage.Stage.tags`, :meth:`~irglow.stage.Stage.node`)."""
    check_settings(config, {**SECTIONS, **{s.name: None for s in stages.STAGES}}, "top-level")
    for section, keys in SECTIONS.items():
        if keys is not None and section in config:
            if not isinstance(config[section], dict):
                raise ValueError(f"[{section}] must be a table of settings, not {config[section]!r}")
            check_settings(config[section], keys, f"[{section}]")
    settings.check(config)  # every declared section: misspelt keys, types, ranges and choices, each named
    if "seed" in config and (isinstance(config["seed"], bool) or not isinstance(config["seed"], int)):
        raise ValueError(f"seed = {config['seed']!r} must be an integer")
    index = index_config(config)
    check_index_config(index)
    chosen_by = settings.value(config, "validation", "stages")
    validation = ValidationSettings(tuple(as_names(settings.value(config, "validation", "also"))),
                                    settings.value(config, "validation", "queries"),
                                    None if chosen_by is None else tuple(as_names(chosen_by)))
    check_stages(validation.stages, [s.name for s in stages.STAGES if s.validates_elsewhere])
    ev = config.get("eval", {})
    # each measure once, by its ir_measures name: "NDCG@10 nDCG@10" or "MRR@10 RR@10" is one column, not a failure
    # after every stage has run
    measures = tuple(str(m) for m in parse_measures(ev.get("measures", DEFAULT_MEASURES)))
    given = None if rankers is None else _closure(rankers, config)  # the rankers and their parts
    needed = None if given is None else {_stage_of(r) for r in given.values()}
    bound = []
    for s in stages.STAGES:  # in the order they run
        enabled = s.always_enabled or (flag(config, s.name) if needed is None else s.name in needed)
        if not enabled and isinstance(config.get(s.name), dict) and set(config[s.name]) - {"enabled"}:
            try:  # a disabled section is checked all the same, whatever its size: a misspelt key would surface the
                # day it is enabled
                s.settings_class.from_config({**config, s.name: {**config[s.name], "enabled": True}})
            except (ValueError, KeyError, TypeError) as e:
                raise ValueError(f"[{s.name}] (disabled): {e}") from None
        if enabled:
            bound_settings = s.settings_class.from_config(config)  # its lists empty where rankers say the runs
            if s.validates_elsewhere:  # [validation] bound once, here: the stage's copy says what it means for it
                bound_settings = dataclasses.replace(bound_settings, validate_elsewhere=validation.uses(s.name))
            bound.append((s, bound_settings))
    baseline = settings.value(config, "eval", "baseline")
    wanted = ev.get("runs")
    if isinstance(wanted, str):  # "bm25,bm25f" (--set eval.runs=…), as the settings reference allows
        wanted = as_names(wanted)
    if wanted is not None and (not isinstance(wanted, list) or not all(isinstance(t, str) for t in wanted)):
        raise ValueError(f"eval.runs = {wanted!r} must be a list of run tags (or one comma-separated string)")
    if rankers is not None:  # the experiment's rankers are the runs compared, the first the baseline
        baseline = rankers[0].tag
        wanted = [t for t in dict.fromkeys(r.tag for r in rankers) if t != baseline]
        planned = _bound(bound, rankers, config, baseline, tuple(wanted), given)
    else:
        planned = _bound(bound, None, config, baseline if compared else None,
                         None if wanted is None or not compared else tuple(wanted))
    others = [t for t, n in planned["graph"].items() if not isinstance(n, Fusion)]
    if len(others) < 2 and any(isinstance(n, Fusion) and n.every for n in planned["graph"].values()):
        raise ValueError("fusion.runs: 'all' fuses nothing: this configuration produces one run")
    lexical = next(b for s, b in planned["stages"] if s.name == "lexical")
    zero_shot = ZeroShotSettings.from_config(config) if config.get("zero_shot") is not None else None
    if zero_shot is not None:  # the cross-collection table's measure is always computed, first
        given = ev.get("measures")
        names = split_measures(given) if isinstance(given, str) else list(given or [])
        names = [str(m) for m in parse_measures(names)]
        first = str(parse_measures([zero_shot.measure])[0])
        measures = tuple(names if first in names else [first, *names])
    out_dir = settings.value(config, "output", "dir")
    if not str(out_dir).strip():  # Path("") is the working folder: its files would be swept as an earlier run's
        raise ValueError("output.dir is empty: name the folder the runs and tables go to (e.g. out/demo)")
    setup = Setup(json.dumps(config, default=str), config.get("seed"), config.get("data_dir"),
                  CollectionSettings.from_config(config), index, lexical, Path(out_dir), validation)
    plan = Plan(setup=setup,
                eval=EvalSettings(measures, baseline,
                                  None if wanted is None else tuple(wanted),
                                  {k: ev[k] for k in COMPARISON_SETTINGS if k in ev}),
                report_clusters=settings.value(config, "output", "clusters"),
                report_page=settings.value(config, "output", "page"),
                zero_shot=zero_shot, **planned)
    for s, bound_settings in plan.stages:
        s.check_plan(bound_settings, plan)
    return plan if fields is None else plan.with_fields(fields)
