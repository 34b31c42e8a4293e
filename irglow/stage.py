"""The interface of a pipeline stage: each stage an object, given a :class:`Context`, cached in :class:`Unit` s.

A stage has a name (its configuration section, its cache record and its notes), binds its section into its
settings object before any work (its ``settings_class.from_config``, called by :mod:`irglow.plan`), says which runs it writes,
and turns a :class:`Context` — what the pipeline prepared: collection, index, statistics, the training source,
the lexical settings and tuned field weights, the runs of the stages before it, its own settings object — into
run files, as :class:`Unit` s whose cache key the pipeline builds.  The stages are listed once, in
:mod:`irglow.stages`; a new ranker is one module with a :class:`Stage` subclass and one line there
(docs/extending.md: a query-likelihood stage, :mod:`irglow.lexical.ql`: a name, a settings class, its runs and
``run``).

Stage modules import torch, transformers and faiss inside their methods, so the registry is cheap to
import and a lexical-only run never loads them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, is_dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping, Sequence

from irglow.runs.keys import QuerySet, RunKey, Runs
from irglow.rankers import StageRun


class Result:
    """What a unit of work did besides its runs, typed: the models it trained or loaded, a fusion's weights, a
    throughput.  The stage cache keeps it with the unit's record (a reused unit keeps its result), the pipeline
    records every unit's in the manifest under the unit's name (``results``), and whatever reads a finished run
    folder — the report, zero-shot's table, :func:`irglow.pyterrier.transformer` — reads it there, back as its
    class (:func:`result_of`).  A subclass is a frozen dataclass with a ``kind``; it registers itself."""

    kind: ClassVar[str] = ""
    _kinds: ClassVar[dict[str, type]] = {}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.kind:
            Result._kinds[cls.kind] = cls

    def to_json(self) -> dict[str, Any]:
        """The result as the JSON the run records keep (its kind and fields)."""
        return {"kind": self.kind, **asdict(self)}


def result_of(record: Mapping[str, Any]) -> Result | None:
    """A recorded result back as its class (``None``: a kind no loaded module declares, keys it no longer has).

    Args:
        record: A unit's result as its record (or the manifest) keeps it: ``{"kind": …, …}``.
    """
    cls = Result._kinds.get(record.get("kind", ""))
    if cls is None:
        return None
    names = {f.name for f in fields(cls)}
    try:
        return cls(**{k: v for k, v in record.items() if k in names})
    except TypeError:
        return None


@dataclass(frozen=True)
class ModelsResult(Result):
    """A model stage's result: the model folder each of its runs used (trained, found trained or reused), and where
    it measured them, each run's corpus encoding throughput and the precision it ran in (``{run: check}``), and the
    folder of each run's corpus encoding (kept with the models, shared by every output folder).

    Args:
        models: ``{run: the model folder it used}``.
        encode_docs_per_s: ``{run: documents encoded a second}`` (NaN: the encoding was found, not made).
        precision: ``{run: the precision check}`` where a run asked for int8.
        untrained: What an untrained checkpoint's run used (its token budget).
        encodings: ``{run: its corpus encoding's folder}``.
    """

    kind: ClassVar[str] = "models"
    models: Mapping[str, str] = field(default_factory=dict)
    encode_docs_per_s: Mapping[str, float] = field(default_factory=dict)
    precision: Mapping[str, Any] = field(default_factory=dict)
    untrained: Mapping[str, Any] = field(default_factory=dict)
    encodings: Mapping[str, str] = field(default_factory=dict)  # {run: its corpus encoding's folder}


@dataclass(frozen=True)
class Produced:
    """A unit's output: its runs (``{tag or RunKey: run}``, written where :meth:`RunKey.path` says) and its
    :class:`Result`.  A unit may return the runs alone.

    Args:
        runs: ``{tag or RunKey: run}``, each written where :meth:`~irglow.runs.keys.RunKey.path` says.
        result: What the unit did besides its runs (``None``: nothing to record).
    """

    runs: Mapping[Any, Any]
    result: Result | None = None


@dataclass
class Context:
    """What a stage's work is given for one test split (built by the pipeline from the bound plan: there is no
    configuration in it, only what the stage needs, its own settings object among it).

    Args:
        collection: The evaluated collection.
        index: Its Lucene index.
        stats: Its statistics (:class:`~irglow.index.stats.CollectionStats`).
        source: Where models train (:class:`irglow.models.source.TrainSource`).
        out: This split's folder (run files, ``.stages/``).
        train_root: The models folder, shared by every split, grid point and output folder.
        lexical: ``[lexical]`` bound once (:class:`~irglow.lexical.stage.LexicalSettings`).
        field_weights: Each multi-field system's field weights, tuned for it or configured.
        test_split: The split evaluated.
        seed: The experiment's seed.
        runs: The runs the stages before produced (test runs by tag; held-out and training queries' runs).
        settings: The running stage's own settings object, set by the pipeline.
        held_out: The runs whose run of the held-out training queries a later node reads (a fusion tunes on them).
        among: For a fusion of every run (``all``), the nodes it may fuse (every node not made from it).
        produced: Each stage's :meth:`Stage.run` output of this split, where its units share one run.
    """

    collection: Any
    index: Any
    stats: Any
    source: Any  # irglow.models.source.TrainSource: where models train
    out: Path  # this split's folder (run files, .stages/)
    train_root: Path  # where models train: shared by every split and grid point
    lexical: Any  # irglow.lexical.stage.LexicalSettings, bound once
    field_weights: dict[str, dict[str, float]]  # per multi-field system, tuned for it (or configured)
    test_split: str
    seed: int | None = None
    runs: Runs = field(default_factory=Runs)  # the runs the stages before produced (test runs by tag; held-out, training)
    settings: Any = None  # the running stage's own settings object (bound by irglow.plan), set by the pipeline
    # what later nodes read of a unit's node, said by the pipeline from the graph (a unit sees its node, not the graph):
    # the runs whose held-out training queries' run a fusion tunes on
    held_out: frozenset = frozenset()
    among: tuple = ()  # a fusion of every run (all): the nodes it may fuse
    # {stage: what its run(ctx) produced}: a stage of several runs without units of its own runs once for them all
    produced: dict = field(default_factory=dict, repr=False, compare=False)

    def reads_held_out(self, tag: str) -> bool:
        """Whether a later node (a fusion tuning its weight) reads ``tag``'s run of the held-out training queries."""
        return tag in self.held_out

    @cached_property
    def test_queries(self) -> list:
        return self.collection.queries(self.test_split)

    @property
    def zero_shot(self) -> bool:
        """Models trained on another collection: nothing of this one may tune anything."""
        return self.source.is_other_than(self.collection)

    def lexical_config(self, system: str):
        """The :class:`~irglow.lexical.searchers.LexicalConfig` of a lexical system as this pipeline runs it.

        Args:
            system: A lexical system of the plan (``bm25``, ``bm25f`` …).
        """
        return self.lexical.config(system, self.field_weights)


def unit_name(stage: str, tag: str) -> str:
    """A unit's record name: its stage's and its node's (``lexical:bm25``, ``fusion:bm25f+glow``), the stage's alone
    where the node's run is named as it (``twbert``)."""
    return stage if tag == stage else f"{stage}:{tag}"


@dataclass
class Unit:
    """One cached piece of a stage's work: its record name, the settings it depends on (plain values: the stage's
    settings object, or the part of it this piece uses), the runs it reads, the call that writes its run files
    (``<out>/<tag>.run``) and returns ``{tag: run}``, and the runs it writes.  The pipeline builds its cache key
    from these (:func:`irglow.stage_cache.unit_key`); a stage never writes one.

    Args:
        name: Its record's name (``rerank:monobert``).
        settings: The settings it depends on, as plain values (or the call that gives them once the runs it reads
            exist).
        inputs: The runs it reads, ``{tag or RunKey: run}`` (or the call that gives them).
        produce: The call that writes its run files and returns them (or a :class:`Produced`).
        writes: The runs it writes, by tag.
        loads: Trained models it loads from a path (``None``: the stage's ``reused_models``), keyed on their content.
        self_contained: Its settings say all it depends on (a lexical run's ``LexicalConfig``).
        collective: Under torchrun it runs on every rank, splitting its work (else rank 0 alone).
    """

    name: str
    settings: Any  # or the call that gives them once the runs it reads exist (a fusion of every run)
    # {tag or RunKey: run}, or the call that gives them once the runs it reads exist
    inputs: Mapping[Any, Any] | Callable[[], Mapping[Any, Any]]
    produce: Callable[[], "Mapping[Any, Any] | Produced"]
    writes: tuple[str, ...] = ()
    loads: dict[str, Path] | None = None  # trained models it loads from a path (None: the stage's reused_models)
    self_contained: bool = False  # its settings say all it depends on (a lexical run: its LexicalConfig)
    # under torchrun: ``produce`` runs on every rank, splits its work (irglow.utils.distributed) and leaves the
    # writing to rank 0; False: rank 0 runs it alone while the others wait
    collective: bool = False


class Stage:
    """The interface every stage implements (defaults for the optional parts).  A new ranker sets ``name`` and
    ``settings_class`` and implements :meth:`tags` and :meth:`run` (and :meth:`train`, with ``trains``, when it
    trains); checking, the manifest's settings, the cache key and ``Experiment`` come from those.

    Its ``settings_class.from_config(config)`` is the one place a stage reads the configuration (called by
    :mod:`irglow.plan`): it turns its section (and what it needs of the others) into its settings object, stopping
    on a wrong setting before any work.  Every other method is given that object (``settings``) or a
    :class:`Context` holding it.

    What only some stages have is a method with a default that says "none": :meth:`with_fields`,
    :meth:`bm25_parameters` and :meth:`starting_checkpoints`.  What a stage reads of another's runs is said by its
    nodes (:meth:`node`: a re-ranking reads its first stage's training queries' run, a fusion its parts' held-out
    runs), and asked of the bound :class:`~irglow.rankers.Graph`."""

    name = ""
    # its settings as a frozen dataclass with ``from_config(config)``, bound (and so checked) before any work;
    # settings that depend on the training index's fields give a typed copy for them once it is built (a
    # ``with_fields(fields)`` method: :meth:`irglow.plan.Plan.with_fields`)
    settings_class: type | None = None
    trains = False  # whether it trains models (the grid scores those on validation)
    validates_elsewhere = False  # whether its trainers also choose checkpoints on [validation] also
    # whether its work runs on every rank under torchrun (it splits queries or corpus shards, trains data-parallel,
    # leaves writing to rank 0: :attr:`Unit.collective`); False: rank 0 runs it while the others wait
    collective = False
    always_enabled = False  # runs without ``enabled = true`` in its section (the lexical runs)

    def bind(self, ranker, settings, bind_part: Callable[[Any], Any]):
        """``ranker`` (one of this stage's, as a user or a configuration's reader gave it) as the node of the plan's
        graph: its parts bound first (``bind_part``, the graph's own nodes), what its settings leave unset given the
        bound ``settings``' value.  By default the ranker itself (a stage's own run has no parts).

        Args:
            ranker: The ranker to bind (its stage is this one).
            settings: Its bound settings object (its ``settings_class``'s).
            bind_part: What binds a part (the graph's node of it; a run's name too).
        """
        return self.node(ranker.tag, settings, bind_part)

    def with_nodes(self, settings, nodes: Sequence[Any]):
        """Its settings for the nodes it makes (the runs an experiment's rankers need of it, bound); by default the
        same object.  A stage whose work runs its nodes together (a lexical stage's field-weight tuning) says them
        here.

        Args:
            settings: Its bound settings object.
            nodes: Its nodes of the plan's graph, in order.
        """
        return settings

    def with_fields(self, settings, fields):
        """Its settings for a training index with these ``fields``, once it is built (settings that depend on them:
        the re-rankers' ``{field}`` variants); by default the same object.

        Args:
            settings: Its bound settings object (its ``settings_class``'s, as :mod:`irglow.plan` bound it).
            fields: The training index's fields.
        """
        return settings

    def bm25_parameters(self, settings) -> dict[str, float] | None:
        """The k1 and b its runs score BM25 with, where it has values of its own (the caption names them).

        Args:
            settings: Its bound settings object (its ``settings_class``'s, as :mod:`irglow.plan` bound it).
        """
        return None

    def starting_checkpoints(self, settings) -> dict[str, str]:
        """``{fine-tuned run: the untouched checkpoint's run}``: the zero-shot table says where fine-tuning fell
        below it.

        Args:
            settings: Its bound settings object (its ``settings_class``'s, as :mod:`irglow.plan` bound it).
        """
        return {}

    def run_of(self, ctx: Context, tag: str, query_set: QuerySet) -> Callable[[Sequence], Any] | None:
        """The call that gives ``tag``'s run of training queries to a later node, on the training index: of
        ``QuerySet.HELD_OUT`` for a fusion tuning its weight (only a run that learned nothing from the training
        queries, a Lucene run, ranks any of them fairly), of ``QuerySet.TRAINING`` for a re-ranker learning from its
        negatives.  ``None`` (the default): the run its stage wrote of those queries, if any — a trained model's
        run of the queries it held out.

        Args:
            ctx: The :class:`Context` of the split it works on (its own settings object in ``ctx.settings``).
            tag: One of its runs that a later node reads.
            query_set: Which training queries: ``HELD_OUT`` (a fusion tunes on them) or ``TRAINING`` (a re-ranker
                learns from them).
        """
        return None

    def default_tags(self) -> list[str]:
        """The runs it writes when switched on with its default settings."""
        return self.tags(self.settings_class.from_config({self.name: {} if self.always_enabled else {"enabled": True}}))

    def node(self, tag: str, settings, node_of: Callable[[str], Any]):
        """The run ``tag`` it writes as a node of the plan's graph: the :class:`~irglow.rankers.Ranker` its bound
        ``settings`` make, each part the graph's own node (``node_of(part's tag)``), so the graph's edges are
        objects.  A part no stage makes raises :class:`~irglow.rankers.UnmadeRun` from ``node_of``; a stage that
        can do without the run returns ``None`` (the run is left out of the plan).  By default a run of its own, with
        no parts (:class:`~irglow.rankers.StageRun`); a stage with a ranker class of its own makes that
        (``Lexical("bm25f")``).

        Args:
            tag: One of its runs.
            settings: Its bound settings object (its ``settings_class``'s, as :mod:`irglow.plan` bound it).
            node_of: The graph's node of a run's name (a part of this one).
        """
        return StageRun(self.name, tag)

    def tags(self, settings) -> list[str]:
        """The runs it writes, known from its settings (what they read is the graph's to check: :meth:`node`).

        Args:
            settings: Its bound settings object (its ``settings_class``'s, as :mod:`irglow.plan` bound it).
        """
        raise NotImplementedError

    def check_plan(self, settings, plan) -> None:
        """Stop before any work if it cannot do what the bound plan (:class:`irglow.plan.Plan`: the collection, the
        runs a fusion tunes on …) asks of it; what it needs of another section comes from there, not from the
        configuration.

        Args:
            settings: Its bound settings object (its ``settings_class``'s, as :mod:`irglow.plan` bound it).
            plan: The bound plan (:class:`irglow.plan.Plan`).
        """

    def resolved(self, settings) -> Any:
        """Its settings as plain values (the manifest and the cache key).

        Args:
            settings: Its bound settings object (its ``settings_class``'s, as :mod:`irglow.plan` bound it).
        """
        return asdict(settings) if is_dataclass(settings) else settings

    def reused_models(self, settings) -> dict[str, Path]:
        """Trained models it loads from a path instead of training (the cache keys on their content).

        Args:
            settings: Its bound settings object (its ``settings_class``'s, as :mod:`irglow.plan` bound it).
        """
        return {}

    def train(self, settings, source, train_root: Path, bm25=None, nodes=()) -> dict[str, Path]:
        """Train (or find trained) its models: ``{name: model directory}``.  ``bm25``: the experiment's BM25 (its
        bound ``[lexical]`` k1 and b, a :class:`~irglow.lexical.searchers.LexicalConfig`), which every BM25 pool
        a trainer searches (negatives, validation candidates) takes.

        Args:
            settings: Its bound settings object (its ``settings_class``'s, as :mod:`irglow.plan` bound it).
            source: Where models train (:class:`irglow.models.source.TrainSource`: collection, index, statistics,
                split).
            train_root: The models folder (``$IRGLOW_MODELS``), shared by every output folder.
            bm25: The experiment's BM25 (a :class:`~irglow.lexical.searchers.LexicalConfig`).
            nodes: Its nodes of the plan's graph (the re-rankings whose models it trains).
        """
        return {}

    def chosen_on_key(self, ctx: Context) -> dict[str, Any]:
        """What else chose its checkpoints (other sources' queries, :mod:`irglow.models.validation`).

        Args:
            ctx: The :class:`Context` of the split it works on (its own settings object in ``ctx.settings``).
        """
        return {}

    def units(self, node, ctx: Context) -> list[Unit]:
        """The cached pieces of work that make ``node`` (a node of the plan's graph this stage writes): what a unit
        reads is its node's parts' runs, what it needs of later nodes the context says (:attr:`Context.held_out`).
        By default one: :meth:`run` kept to the node's runs, keyed on the whole settings object and every run before
        (:meth:`run` runs once for all its nodes of a split: the first unit that is not found cached runs it).

        Args:
            node: The node (a :class:`~irglow.rankers.Ranker`) to make.
            ctx: The :class:`Context` of the split it works on (its own settings object in ``ctx.settings``).
        """
        tag = node.tag

        def produce():
            if self.name not in ctx.produced:
                out = self.run(ctx)
                ctx.produced[self.name] = out if isinstance(out, Produced) else Produced(out)
            produced = ctx.produced[self.name]
            return Produced({k: r for k, r in produced.runs.items() if RunKey.of(k).tag == tag}, produced.result)

        return [Unit(unit_name(self.name, tag), self.resolved(ctx.settings), lambda: ctx.runs.of(ctx.runs), produce,
                     (tag,), collective=self.collective)]

    def transformer(self, ranker, folder) -> Any:
        """``ranker`` — a run this stage made in the run folder ``folder`` (:class:`irglow.pyterrier.RunFolder`: its
        index, bound settings, each unit's :class:`Result`, ``folder.build(part)`` for the rankers it is made of) —
        as a PyTerrier transformer that ranks as its run file.  A stage that cannot says so, naming the file.

        Args:
            ranker: A ranker this stage made in the folder.
            folder: The run folder (:class:`irglow.pyterrier.RunFolder`).
        """
        raise ValueError(f"{ranker.tag}: the {self.name} stage builds no PyTerrier transformer; take its run file "
                         f"({Path(folder.out) / (ranker.tag + '.run')})")

    def run(self, ctx: Context) -> "Mapping[Any, Any] | Produced":
        """Its runs (``{tag or RunKey: run}``, each written at ``RunKey.of(key).path(ctx.out)``), or them and its
        :class:`Result` as :class:`Produced`.

        Args:
            ctx: The :class:`Context` of the split it works on (its own settings object in ``ctx.settings``).
        """
        raise NotImplementedError
