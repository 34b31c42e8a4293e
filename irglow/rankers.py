"""Rankers as objects that compose and nest (PyTerrier's model): every run an experiment makes is a
:class:`Ranker` — a stage's run (:class:`Lexical`, QL, :class:`TWBert`, :class:`Dense`, any stage's through
:class:`StageRun`), a :class:`Fusion` of rankers, or a :class:`Rerank` of a ranker by a trained model — and
``Fusion`` and ``Rerank`` take rankers, so they nest to any depth::

    from irglow import Experiment, Lexical, TWBert, Dense, MonoBERT, NRMF, Fusion, Rerank

    hybrid = Fusion([Lexical("bm25f"), Dense("glow")])
    Experiment("demo", systems=[Lexical("bm25"), hybrid, Rerank(hybrid, MonoBERT()),
                                Lexical("bm25") + Rerank(TWBert(), NRMF())])

One operator, one meaning: ``a + b`` is ``Fusion([a, b])`` (and the tag ``a+b``); ``a >> model`` is
``Rerank(a, model)`` (the tag ``monobert(a)``; ``monobert`` alone re-ranks BM25).  A ranker writes itself
into a configuration (:meth:`Ranker.configure`: the sections and entries that make its run), which
:func:`irglow.plan.bind_plan` binds like any file — so ``Experiment``, configuration files and the CLI make the
same runs, and ``irglow.pyterrier.transformer`` builds PyTerrier pipelines from the same objects.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterator, Mapping, Sequence

from irglow import settings as declared
from irglow.config import as_names, flag
from irglow.utils.plugins import RERANKERS, define

# Run tags: a ranker's tag is its canonical name, written by its ``tag`` and read back by the functions below —
# a fusion's (``a+b``) and a re-ranking's (``monobert(a)``), one pair each way, beside the classes that write them
# (the ir_measures pattern: a measure's name and its parser in one place).
ALL = "all"  # fusion.runs = ["all"]: every run of the experiment that can be tuned, fused at the end


def split_fusion(tag: str) -> list[str]:
    """A fusion's tag as its parts: ``"a+b"`` → ``["a", "b"]``.  ``+`` means fusion and nothing else; inside
    parentheses it belongs to a part (``"bm25+monobert(bm25f+glow)"``: BM25 fused with monoBERT re-ranking the
    hybrid ``bm25f+glow``; ``"a+(b+c)"``: a fused with the hybrid b+c).

    Args:
        tag: A fusion's run name.
    """
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(tag):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            raise ValueError(f"run {tag!r}: a ')' without its '('")
        if ch == "+" and depth == 0:
            parts.append(tag[start:i])
            start = i + 1
    if depth:
        raise ValueError(f"run {tag!r}: a '(' without its ')'")
    parts.append(tag[start:])
    if any(not p for p in parts):
        raise ValueError(f"run {tag!r}: an empty part between '+'")
    return [p[1:-1] if p.startswith("(") and p.endswith(")") and len(split_fusion(p[1:-1])) > 1 else p
            for p in parts]


def fusion_tag(parts) -> str:
    """The tag of the fusion of ``parts``: joined by ``+``, a part that is itself a fusion in parentheses."""
    return "+".join(f"({p})" if len(split_fusion(p)) > 1 else p for p in parts)


def reranked_tag(model: str, first: str) -> str:
    """The run of ``model`` re-ranking ``first``: ``monobert(bm25f+glow)``."""
    return f"{model}({first})"


def split_reranked(tag: str) -> tuple[str, str] | None:
    """A re-ranking's tag as ``(model, first)`` (``monobert(bm25f+glow)`` → ``("monobert", "bm25f+glow")``), the
    inverse of :func:`reranked_tag`; ``None`` for a tag of another form (``bm25``, a fusion ``a+monobert(b)``).

    Args:
        tag: A run's name.
    """
    model, paren, rest = tag.partition("(")
    if not paren or not model or not rest.endswith(")") or len(split_fusion(tag)) > 1:
        return None
    depth = 0
    for ch in rest[:-1]:  # its own parentheses close at the end, not before: "a(b)+c(d)" is no re-ranking
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return None
    return (model, rest[:-1]) if depth == 0 and rest[:-1] else None


RERANKED_BY_DEFAULT = declared.value({}, "rerank", "first_stage")  # what a model's bare name re-ranks
TWBERT_RUNS = ("twbert", "twbert-rm3", "bm25-ngram")  # TW-BERT's stage writes these (twbert-rm3 with rm3 on)


class Ranker:
    """A run of an experiment.  Subclasses say its :attr:`tag` (its run file's name), the :attr:`stage` that makes
    it (and builds its PyTerrier transformer: :meth:`irglow.stage.Stage.transformer`), write what makes it into a
    configuration (:meth:`configure`) and list the rankers it is made of (:attr:`parts`).  (``stage`` is each
    subclass's own: a class constant, or :class:`StageRun`'s field.)"""

    @property
    def tag(self) -> str:
        """The run's name: its run file is ``<tag>.run``, its row in the tables ``<tag>``."""
        raise NotImplementedError

    @property
    def parts(self) -> tuple["Ranker", ...]:
        """The rankers this one is made of (a fusion's parts, a re-ranking's first stage); none for a stage's own run."""
        return ()

    def configure(self, config: dict[str, Any]) -> None:
        """Write into ``config`` the sections and entries that make this ranker's run (its parts' first): the one
        writer of rankers into a configuration (:func:`written`: ``Experiment.save``, a manifest); a setting another
        ranker of the same experiment set otherwise is an error naming both values."""
        raise NotImplementedError

    def settings_of(self, config: dict[str, Any]) -> None:
        """Write into ``config`` the settings this ranker (and its parts) sets for a whole section (``QL(mu=500)``:
        ``[lexical] mu``; a plugin's :class:`StageRun` settings), not which runs are made (the rankers bound say
        that); a setting another ranker set otherwise is an error naming both values.  By default none (a ranker's
        own options are its node's)."""
        for part in self.parts:
            part.settings_of(config)

    def __add__(self, other: "Ranker") -> "Fusion":
        """``a + b``: the fusion of both (a fusion without settings of its own is extended, not nested)."""
        left = list(self.rankers) if isinstance(self, Fusion) and self.plain else [self]
        right = list(other.rankers) if isinstance(other, Fusion) and other.plain else [other]
        return Fusion([*left, *right])

    def __rshift__(self, model: Any) -> "Rerank":
        """``first >> MonoBERT()`` (or ``first >> LinearReranker()``, a kind as an object): the model re-ranking this
        ranker's run."""
        return Rerank(self, model)

    def __str__(self) -> str:
        return self.tag


def _section(config: dict[str, Any], name: str) -> dict[str, Any]:
    section = config.setdefault(name, {})
    if not isinstance(section, dict):
        raise ValueError(f"[{name}] must be a table of settings, not {section!r}")
    return section


def _set(section: dict[str, Any], key: str, value: Any, where: str) -> None:
    """Set a setting a ranker needs; another ranker of the same experiment needing another value is an error."""
    if key in section and section[key] != value and key != "enabled":
        raise ValueError(f"{where}.{key}: one experiment asks for {section[key]!r} and {value!r}; a stage has one "
                         f"value — compare the two in two experiments (or a grid)")
    section[key] = value


@dataclass(frozen=True)
class StageRun(Ranker):
    """The run ``run`` of the stage whose section is ``stage``, switched on with ``settings`` (``QL(mu=500)``,
    or a plugin's ranker: any stage's run needs no class of its own)."""

    stage: str
    run: str
    settings: dict = field(default_factory=dict)

    @property
    def tag(self) -> str:
        return self.run

    def configure(self, config: dict[str, Any]) -> None:
        self.settings_of(config)

    def settings_of(self, config: dict[str, Any]) -> None:
        section = _section(config, self.stage)
        section["enabled"] = True
        for key, value in self.settings.items():
            _set(section, key, value, self.stage)


@dataclass(frozen=True)
class Listed(StageRun):
    """A run a stage writes for each name listed under ``key`` of its section (a re-ranker a configuration
    defines: ``rerank.models``).  A configuration's switches and lists are read into these, and each is bound by its
    stage's :meth:`~irglow.stage.Stage.node`, from the stage's settings.

    Args:
        stage: The section of the stage that writes it.
        run: The run's name, listed under ``key``.
        settings: Settings of the section it needs.
        key: The list its name goes in (``models``).
    """

    key: str = "models"

    def configure(self, config: dict[str, Any]) -> None:
        super().configure(config)
        section = config[self.stage]
        names = list(section.get(self.key, []))
        if self.run not in names:
            section[self.key] = names + [self.run]


@dataclass(frozen=True)
class Lexical(Ranker):
    """A Lucene run of ``[lexical]``: ``bm25``, ``bm25f``, ``bm25-mf``, ``tfidf``, ``qld`` (query likelihood), and
    ``bm25`` and ``bm25-mf`` with RM3 (``Lexical("bm25", rm3=True)``, the run ``bm25-rm3``).

    Args:
        system: The lexical system (a registered one too: ``irglow.lexical`` entry points); ``"bm25-rm3"`` is
            ``system="bm25", rm3=True``.
        rm3: Whether the query is expanded by RM3 (Pyserini's) before it is searched.
    """

    stage: ClassVar[str] = "lexical"

    system: str = "bm25"
    rm3: bool = False

    def __post_init__(self):
        if self.system.endswith("-rm3"):  # one value for one run: Lexical("bm25-rm3") is Lexical("bm25", rm3=True)
            object.__setattr__(self, "system", self.system.removesuffix("-rm3"))
            object.__setattr__(self, "rm3", True)

    @property
    def tag(self) -> str:
        return self.system + ("-rm3" if self.rm3 else "")

    def configure(self, config: dict[str, Any]) -> None:
        systems = _section(config, "lexical").setdefault("systems", [])
        if self.tag not in systems:
            systems.append(self.tag)


@dataclass(frozen=True)
class TWBert(Ranker):
    """TW-BERT's runs: ``twbert`` (learned term weights in Lucene), ``twbert-rm3`` (with RM3) or ``bm25-ngram``
    (the same uni- and bi-gram query, unweighted: what the weights add).

    Args:
        run: Which of TW-BERT's runs: ``twbert``, ``twbert-rm3`` or ``bm25-ngram``.
    """

    stage: ClassVar[str] = "twbert"

    run: str = "twbert"

    @property
    def tag(self) -> str:
        return self.run

    def __post_init__(self):
        if self.run not in TWBERT_RUNS:
            raise ValueError(f"TWBert({self.run!r}): its runs are {', '.join(TWBERT_RUNS)}")

    def configure(self, config: dict[str, Any]) -> None:
        section = _section(config, "twbert")
        section["enabled"] = True
        runs = list(section.get("runs", []))
        if self.run not in runs:
            section["runs"] = runs + [self.run]
        if self.run == "twbert-rm3":
            section["rm3"] = True
        else:
            section.setdefault("rm3", False)


@dataclass(frozen=True)
class Dense(Ranker):
    """A GLOW/BERT encoder's faiss run: a trained ``variant`` (``bert``, ``glow``, the ablations ``glow-idf`` …)
    or the untrained checkpoint (``minilm``, ``minilm-fields``, ``minilm-glow``)."""

    stage: ClassVar[str] = "glow"

    variant: str = "glow"

    @property
    def tag(self) -> str:
        return self.variant

    def configure(self, config: dict[str, Any]) -> None:
        section = _section(config, "glow")
        section["enabled"] = True
        key = "untrained" if self.variant.startswith("minilm") else "variants"
        names = list(section.get(key, []))
        if self.variant not in names:
            section[key] = names + [self.variant]


@dataclass(frozen=True)
class Model:
    """A re-ranking model to train: ``kind`` (``monobert`` or ``nrmf``) and training settings that differ from
    its kind's section (``NRMF(epochs=3, model={"dim": 64})``).  ``of``: the re-ranking whose trained model this
    one uses (a configuration's ``model_of``), a node of the plan's graph: its training comes first.

    Args:
        kind: The re-ranker kind (``monobert``, ``nrmf`` or a registered one).
        of: The re-ranking whose trained model this one re-ranks with (it trains nothing itself).
        **settings: Training settings that differ from ``[rerank.<kind>]`` (``epochs=3``, ``model={"dim": 64}``).
    """

    kind: str
    settings: dict = field(default_factory=dict)
    of: "Rerank | None" = None

    def __init__(self, kind: str, of: "Rerank | None" = None, **settings: Any):
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "settings", settings)
        object.__setattr__(self, "of", of)


def as_model(model: Any) -> Model:
    """What ``>>`` and :class:`Rerank` take: a :class:`Model`, or a re-ranker kind used as an object (an instance of
    a :class:`~irglow.models.rerank.kinds.RerankerKind` subclass defined anywhere, a notebook cell included:
    ``Lexical("bm25") >> LinearReranker(steps=50)``), which this process then knows by its name.

    Args:
        model: A :class:`Model` (``MonoBERT()``, ``NRMF(epochs=3)``) or a ``RerankerKind`` instance.
    """
    if isinstance(model, Model):
        return model
    name = getattr(model, "name", None)
    if isinstance(name, str) and name and callable(getattr(model, "rerank_run", None)):
        define(RERANKERS, name, model)
        return Model(name, **dict(getattr(model, "settings", None) or {}))
    raise TypeError(f"a re-ranking takes a model (MonoBERT(), NRMF(), an instance of a RerankerKind subclass), "
                    f"not {model!r}")


def MonoBERT(**settings: Any) -> Model:  # noqa: N802 (a constructor, as PyTerrier's)
    """The monoBERT cross-encoder (``[rerank.monobert]``, changed by ``settings``)."""
    return Model("monobert", **settings)


def NRMF(**settings: Any) -> Model:  # noqa: N802
    """NRM-F, the multi-field neural ranker (``[rerank.nrmf]``, changed by ``settings``)."""
    return Model("nrmf", **settings)


@dataclass(frozen=True)
class Rerank(Ranker):
    """``model`` re-ranking ``first``'s run — any ranker: a lexical run, TW-BERT, a dense run, a fusion, another
    re-ranking — to ``depth`` documents per query (unset: ``[rerank] depth``).  Its tag is the model's kind over BM25
    (``monobert``), else ``kind(first)`` (``monobert(bm25f+glow)``), unless ``name`` gives one.  The model learns
    from ``first``'s run of the training queries where its stage writes one (lexical runs, QL, TW-BERT's), else from
    BM25's."""

    stage: ClassVar[str] = "rerank"

    first: Ranker
    model: Model
    name: str | None = None
    # the depth of its re-ranked block (a fusion takes that block only): its own where given (Rerank(…, depth=20)),
    # else binding sets [rerank]'s; not compared: the user's Rerank(first, model) equals its bound node
    depth: int | None = field(default=None, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "model", as_model(self.model))  # a kind given as an object: its Model

    @property
    def tag(self) -> str:
        if self.name:
            return self.name
        plain = self.first.tag == RERANKED_BY_DEFAULT and not self.model.settings
        return self.model.kind if plain else reranked_tag(self.model.kind, self.first.tag)

    @property
    def parts(self) -> tuple[Ranker, ...]:
        return (self.first,) if self.model.of is None else (self.first, self.model.of)

    def configure(self, config: dict[str, Any]) -> None:
        self.first.configure(config)
        of = self.model.of  # whose trained model it re-ranks with: written first, named by model_of
        if of is not None:
            of.configure(config)
        section = _section(config, "rerank")
        section["enabled"] = True
        models = list(section.get("models", []))
        listed = self.tag in models  # by another ranker of the experiment (or this one, again)
        if not listed:
            section["models"] = models + [self.tag]
        own = {"depth": self.depth} if self.depth is not None else {}  # its own depth: its variant's
        if of is not None:
            own["model_of"] = of.tag
        if self.tag == self.model.kind:  # the kind's own section, over [rerank] first_stage
            if "first_stage" not in section and self.first.tag != RERANKED_BY_DEFAULT:
                section["first_stage"] = self.first.tag  # a name read with a file's first stage brings it
            first = section.get("first_stage", RERANKED_BY_DEFAULT)
            if first != self.first.tag:
                raise ValueError(f"[rerank] first_stage = {first!r} makes {self.tag!r} re-rank {first}, not "
                                 f"{self.first.tag}: give this re-ranking a name (Rerank(…, name=…))")
            variant = own
        else:
            variant = {"kind": self.model.kind, "first_stage": self.first.tag, **self.model.settings, **own}
        defined = section.get("variants", {}).get(self.tag)
        said = {**variant, "depth": self.depth, "model_of": of.tag if of is not None else None}  # none unless its own
        if (defined is not None and {k: defined.get(k) for k in said} != said) or (defined is None and listed and own):
            raise ValueError(f"rerank.variants.{self.tag}: already defined as {defined or {}!r}, not {variant!r}: one "
                             f"run name names one re-ranking; give one of them a name (Rerank(…, name=…))")
        if defined is None and (self.name or self.model.settings or own):  # kind(first) says itself: no table
            section.setdefault("variants", {})[self.tag] = variant


@dataclass(frozen=True)
class Named(Ranker):
    """The run named ``run``, whichever stage writes it: a part a configuration names by its tag
    (``fusion.runs = ["bm25f+glow"]``).  Binding puts the run's own node in its place (:mod:`irglow.plan`'s graph);
    it configures nothing itself."""

    run: str

    @property
    def tag(self) -> str:
        return self.run

    def configure(self, config: dict[str, Any]) -> None:
        """Nothing: the run is another ranker's (binding checks that one is made).

        Args:
            config: The configuration.
        """


def _ranker(part: "Ranker | str") -> Ranker:
    return part if isinstance(part, Ranker) else Named(str(part))


@dataclass(frozen=True)
class Fusion(Ranker):
    """The fusion of ``rankers`` (tag ``a+b``; a part that is itself a fusion in parentheses): the weighted sum of
    normalised scores with weights tuned on training queries no fused model saw (``[fusion]``), or this fusion's
    own ``method`` (``rrf`` / ``wsum``), ``norm`` or fixed ``weights`` (then nothing is tuned).  A part may be a
    fusion: a tuned one gives this one its cross-fitted run of the tuning queries (no query fused with weights its
    own judgments chose: :func:`irglow.runs.fusion.cross_fitted`).

    A part may be given by its run's name (``Fusion(["bm25", "glow"])``, ``Fusion("bm25+glow")``: each a
    :class:`Named`), as a ``fusion.runs`` entry gives it; ``Fusion(["all"])`` fuses every run of the experiment that
    can be tuned (``fusion.runs = ["all"]``)."""

    stage: ClassVar[str] = "fusion"

    rankers: tuple[Ranker, ...]
    method: str | None = None
    norm: str | None = None
    weights: tuple[float, ...] | None = None

    def __init__(self, rankers: "Sequence[Ranker | str] | str", method: str | None = None, norm: str | None = None,
                 weights: Sequence[float] | None = None):
        rankers = tuple(map(_ranker, split_fusion(rankers) if isinstance(rankers, str) else rankers))
        every = len(rankers) == 1 and rankers[0] == Named(ALL)
        if not every and (len(rankers) < 2 or not all(isinstance(r, Ranker) for r in rankers)):
            raise ValueError(f"Fusion takes two rankers or more, not {rankers!r}")
        object.__setattr__(self, "rankers", rankers)
        object.__setattr__(self, "method", method)
        object.__setattr__(self, "norm", norm)
        object.__setattr__(self, "weights", None if weights is None else tuple(weights))

    @property
    def every(self) -> bool:
        """It fuses every run that can be tuned (``all``), its parts known once they exist."""
        return self.rankers == (Named(ALL),)

    @property
    def part_tags(self) -> tuple[str, ...]:
        """Its parts' runs, by name."""
        return tuple(r.tag for r in self.rankers)

    @property
    def plain(self) -> bool:
        """It sets no method, normalisation or weights of its own."""
        return not self.options()

    @property
    def tag(self) -> str:
        return fusion_tag(self.part_tags)

    @property
    def parts(self) -> tuple[Ranker, ...]:
        return () if self.every else self.rankers

    def options(self) -> dict[str, Any]:
        """The settings it sets itself (what its cache key adds to ``[fusion]``'s)."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in
                (("method", self.method), ("norm", self.norm), ("weights", self.weights)) if v is not None}

    def tuned(self, default_method: str) -> bool:
        """Whether its weights are tuned: no fixed weights and not reciprocal-rank (``default_method``: [fusion]'s)."""
        from irglow.runs.fusion import method_of  # numpy and the measures: not on a command's start

        return self.weights is None and method_of(self.method or default_method).tuned

    def settings_text(self) -> str:
        """Its own settings as an error message names them (``{'weights': [1, 0]}``, or the [fusion] defaults)."""
        return str(self.options() or "the [fusion] defaults")

    def entry(self) -> str | dict[str, Any]:
        """As a ``fusion.runs`` entry: its tag, or a table when it sets anything itself."""
        return {"runs": list(self.part_tags), **self.options()} if self.options() else self.tag

    def same_fusion(self, other: "Fusion") -> bool:
        """Whether ``other`` fuses the same runs with the same settings (whatever objects name its parts)."""
        return self.entry() == other.entry()

    @classmethod
    def of(cls, entry: Any, where: str = "fusion.runs") -> "Fusion":
        """A ``fusion.runs`` entry (``"a+b"``, ``["a", "b"]``, a table, a Fusion) as a Fusion; a table's wrong key,
        method, normalisation or weights is an error naming it.

        Args:
            entry: The entry as a configuration holds it.
            where: Its place in the configuration, for the error.
        """
        if isinstance(entry, Fusion):
            return entry
        if isinstance(entry, (str, list)):
            return cls.of({"runs": entry}, where)
        if not isinstance(entry, dict):
            raise ValueError(f"{where} = {entry!r} must be 'a+b', a list of run tags or a table {{runs = [...], "
                             f"method = ..., weights = [...]}}")
        unknown = sorted(set(entry) - {"runs", "method", "norm", "weights"})
        if unknown or "runs" not in entry:
            raise ValueError(f"{where}: a hybrid table takes runs, method, norm and weights"
                             f"{'; not ' + ', '.join(unknown) if unknown else '; runs is missing'}")
        runs = entry["runs"]
        if not (isinstance(runs, str) or (isinstance(runs, list) and all(isinstance(r, str) for r in runs))):
            raise ValueError(f"{where}.runs = {runs!r} must be 'a+b' or a list of run tags")
        if entry.get("method") is not None:
            from irglow.runs.fusion import method_of

            method_of(entry["method"], f"{where}.method")
        if entry.get("norm") is not None and entry["norm"] not in declared.FUSION_NORMS:
            raise ValueError(f"{where}.norm = {entry['norm']!r} must be one of {', '.join(declared.FUSION_NORMS)}")
        parts = split_fusion(runs) if isinstance(runs, str) else runs
        weights = entry.get("weights")
        if len(parts) < 2 and parts != [ALL]:
            raise ValueError(f"{where}: {parts} fuses nothing; name two runs or more")
        if weights is not None:
            ok = isinstance(weights, list) and len(weights) == len(parts) and all(
                isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w) and w >= 0
                for w in weights) and sum(weights) > 0
            if not ok:
                raise ValueError(f"{where}.weights = {weights!r} must be {len(parts)} numbers >= 0, one per "
                                 f"run, not all 0")
        return cls(parts, entry.get("method"), entry.get("norm"), weights)

    def configure(self, config: dict[str, Any]) -> None:
        for ranker in self.rankers:
            ranker.configure(config)
        section = _section(config, "fusion")
        section["enabled"] = True
        entries = list(_entries(section))
        same = next((h for h in map(Fusion.of, entries) if h.tag == self.tag), None)
        if same is None:
            section["runs"] = entries + [self.entry()]
        elif not same.same_fusion(self):  # one tag names one run file: the second would be dropped without a word
            raise ValueError(f"two fusions of {self.tag} with different settings ({same.settings_text()} and "
                             f"{self.settings_text()}) in one experiment; a run tag names one run: compare "
                             f"them in two experiments (or a grid)")


def written(config: dict[str, Any], rankers: Sequence[Ranker], baseline: str | None = None) -> dict[str, Any]:
    """``config`` with ``rankers`` written into it (:meth:`Ranker.configure`, each once): the one writer of rankers
    into a configuration (``Experiment.save``, the manifest of an experiment bound from its objects), which
    :func:`irglow.plan.bind_plan` reads back into equal nodes.  ``baseline``: the run the others are compared with
    (``[eval] baseline``; the others become ``[eval] runs``)."""
    for ranker in rankers:
        ranker.configure(config)
    if baseline is not None:
        ev = _section(config, "eval")
        ev["baseline"] = baseline
        ev["runs"] = [t for t in dict.fromkeys(r.tag for r in rankers) if t != baseline]
    return config


def configured_fusions(config: dict[str, Any]) -> list[Fusion]:
    """The configured fusions (``Fusion(["all"])`` for the all-runs fusion), each part a :class:`Named` run;
    ``fusion.runs`` that is not a non-empty list of entries is an error.

    Args:
        config: A configuration (its ``[fusion]`` section).
    """
    if not flag(config, "fusion"):
        return []
    entries = _entries(config.get("fusion", {}))
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"fusion.runs = {entries!r} must be a non-empty list, e.g. [['twbert', 'glow']]")
    out: list[Fusion] = []
    for i, entry in enumerate(entries):
        fusion = Fusion.of(entry, f"fusion.runs[{i}]")
        same = next((h for h in out if h.tag == fusion.tag), None)
        if same is not None and not same.same_fusion(fusion):  # one tag names one run file: one would be dropped
            raise ValueError(f"fusion.runs[{i}]: two hybrids of {fusion.tag} with different settings "
                             f"({same.settings_text()} and {fusion.settings_text()}); "
                             f"a run tag names one run: keep one, or compare the settings in two experiments")
        if same is None:
            out.append(fusion)
    return out


def _entries(fs: dict[str, Any]):
    """``fusion.runs`` as written: a list, or one ``"a+b,a+b+c"`` string (``--set``, ``FUSE=``)."""
    entries = fs.get("runs", [])
    return as_names(entries) if isinstance(entries, str) else entries


class UnmadeRun(ValueError):
    """A run a node reads that no stage of the plan makes (binding stops on it, naming the reader, unless the
    reader's stage handles it: :func:`irglow.plan._bound`).

    Args:
        tag: The run read.
        reader: The run that reads it (``None``: the configuration's).
        runs: The runs the configuration makes.
    """

    def __init__(self, tag: str, reader: str | None, runs: Sequence[str]):
        self.tag, self.reader, self.runs = tag, reader, tuple(runs)
        super().__init__(f"{reader + ' reads ' if reader else ''}{tag!r}, which is not a run of this configuration; "
                         f"its runs: {', '.join(self.runs)}")


class Graph(Mapping[str, Ranker]):
    """An experiment bound: ``{run: node}``, each node a :class:`Ranker` whose parts are the graph's own nodes
    (object edges), each bound by its stage (:mod:`irglow.plan`).  The pipeline makes a unit of work per node, after
    its parts' (a unit sees its node, never the graph), and asks the graph once which runs a later node reads of
    the held-out training queries (a fusion tunes on its parts').  ``tunes``: whether fusions tune (not where the
    experiment fuses by reciprocal rank zero-shot).

    Args:
        nodes: ``{run: node}``, each node's parts the graph's own nodes.
        tunes: Whether fusions tune (not where the experiment fuses by reciprocal rank zero-shot).
    """

    def __init__(self, nodes: Mapping[str, Ranker] | None = None, tunes: bool = True):
        self._nodes = dict(nodes or {})
        self.tunes = tunes

    def __getitem__(self, tag: str) -> Ranker:
        return self._nodes[tag]

    def __iter__(self) -> Iterator[str]:
        return iter(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    def __repr__(self) -> str:
        return f"Graph({self._nodes!r})"

    def untuned(self) -> "Graph":
        """The same graph where no fusion tunes (zero-shot reciprocal-rank fusion): no held-out run is read."""
        return Graph(self._nodes, tunes=False)

    def inputs(self) -> set[str]:
        """The runs some node reads (its inputs): every node's parts; every run where a fusion fuses ``all``."""
        if any(isinstance(n, Fusion) and n.every for n in self.values()):
            return set(self)
        return {p.tag for n in self.values() for p in n.parts}

    def reads_held_out(self, tag: str) -> bool:
        """Whether a fusion tunes on ``tag``'s run of the training queries its model held out: ``tag`` is a part of
        a fusion, or ``all`` fuses every run."""
        return self.tunes and any(isinstance(n, Fusion) and (n.every or tag in n.part_tags) for n in self.values())
