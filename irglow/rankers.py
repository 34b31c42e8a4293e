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

from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

from irglow import settings as declared
from irglow.runs.wanted import Hybrid, _entries, fusion_tag, reranked_tag

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
        """Write into ``config`` the sections and entries that make this ranker's run (its parts' first); a setting
        another ranker of the same experiment set otherwise is an error naming both values."""
        raise NotImplementedError

    def __add__(self, other: "Ranker") -> "Fusion":
        """``a + b``: the fusion of both (a fusion without settings of its own is extended, not nested)."""
        left = list(self.rankers) if isinstance(self, Fusion) and self.plain else [self]
        right = list(other.rankers) if isinstance(other, Fusion) and other.plain else [other]
        return Fusion([*left, *right])

    def __rshift__(self, model: "Model") -> "Rerank":
        """``first >> MonoBERT()``: the model re-ranking this ranker's run."""
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
        section = _section(config, self.stage)
        section["enabled"] = True
        for key, value in self.settings.items():
            _set(section, key, value, self.stage)


@dataclass(frozen=True)
class Listed(StageRun):
    """A run a stage writes for each name listed under ``key`` of its section (a re-ranker a configuration
    defines: ``rerank.models``)."""

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
    ``bm25`` and ``bm25-mf`` with RM3 (``Lexical("bm25", rm3=True)``, the run ``bm25-rm3``)."""

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
    (the same uni- and bi-gram query, unweighted: what the weights add)."""

    stage: ClassVar[str] = "twbert"

    run: str = "twbert"

    @property
    def tag(self) -> str:
        return self.run

    def configure(self, config: dict[str, Any]) -> None:
        if self.run not in TWBERT_RUNS:
            raise ValueError(f"TWBert({self.run!r}): its runs are {', '.join(TWBERT_RUNS)}")
        section = _section(config, "twbert")
        section["enabled"] = True
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
    one uses (a configuration's ``model_of``), a node of the plan's graph: its training comes first."""

    kind: str
    settings: dict = field(default_factory=dict)
    of: "Rerank | None" = None

    def __init__(self, kind: str, of: "Rerank | None" = None, **settings: Any):
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "settings", settings)
        object.__setattr__(self, "of", of)


def MonoBERT(**settings: Any) -> Model:  # noqa: N802 (a constructor, as PyTerrier's)
    """The monoBERT cross-encoder (``[rerank.monobert]``, changed by ``settings``)."""
    return Model("monobert", **settings)


def NRMF(**settings: Any) -> Model:  # noqa: N802
    """NRM-F, the multi-field neural ranker (``[rerank.nrmf]``, changed by ``settings``)."""
    return Model("nrmf", **settings)


@dataclass(frozen=True)
class Rerank(Ranker):
    """``model`` re-ranking ``first``'s run — any ranker: a lexical run, TW-BERT, a dense run, a fusion, another
    re-ranking.  Its tag is the model's kind over BM25 (``monobert``), else ``kind(first)``
    (``monobert(bm25f+glow)``), unless ``name`` gives one.  The model learns from ``first``'s run of the training
    queries where its stage writes one (lexical runs, QL, TW-BERT's), else from BM25's."""

    stage: ClassVar[str] = "rerank"

    first: Ranker
    model: Model
    name: str | None = None

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
        section = _section(config, "rerank")
        section["enabled"] = True
        models = list(section.get("models", []))
        if self.tag not in models:
            section["models"] = models + [self.tag]
        if self.tag == self.model.kind:  # the kind's own section, over [rerank] first_stage
            first = section.get("first_stage", RERANKED_BY_DEFAULT)
            if first != self.first.tag:
                raise ValueError(f"[rerank] first_stage = {first!r} makes {self.tag!r} re-rank {first}, not "
                                 f"{self.first.tag}: give this re-ranking a name (Rerank(…, name=…))")
            return
        variants = section.setdefault("variants", {})
        variant = {"kind": self.model.kind, "first_stage": self.first.tag, **self.model.settings}
        if self.tag in variants and {k: variants[self.tag].get(k) for k in variant} != variant:
            raise ValueError(f"rerank.variants.{self.tag}: already defined as {variants[self.tag]!r}, not {variant!r}")
        variants.setdefault(self.tag, variant)


@dataclass(frozen=True)
class Fusion(Ranker):
    """The fusion of ``rankers`` (tag ``a+b``; a part that is itself a fusion in parentheses): the weighted sum of
    normalised scores with weights tuned on training queries no fused model saw (``[fusion]``), or this fusion's
    own ``method`` (``rrf`` / ``wsum``), ``norm`` or fixed ``weights`` (then nothing is tuned).  A part may be a
    fusion: a tuned one gives this one its cross-fitted run of the tuning queries (no query fused with weights its
    own judgments chose: :func:`irglow.runs.fusion.cross_fitted`)."""

    stage: ClassVar[str] = "fusion"

    rankers: tuple[Ranker, ...]
    method: str | None = None
    norm: str | None = None
    weights: tuple[float, ...] | None = None

    def __init__(self, rankers: Sequence[Ranker], method: str | None = None, norm: str | None = None,
                 weights: Sequence[float] | None = None):
        rankers = tuple(rankers)
        if len(rankers) < 2 or not all(isinstance(r, Ranker) for r in rankers):
            raise ValueError(f"Fusion takes two rankers or more, not {rankers!r}")
        object.__setattr__(self, "rankers", rankers)
        object.__setattr__(self, "method", method)
        object.__setattr__(self, "norm", norm)
        object.__setattr__(self, "weights", None if weights is None else tuple(weights))

    @property
    def plain(self) -> bool:
        """It sets no method, normalisation or weights of its own."""
        return not self.hybrid.options()

    @property
    def hybrid(self) -> Hybrid:
        return Hybrid([r.tag for r in self.rankers], self.method, self.norm, self.weights)

    @property
    def tag(self) -> str:
        return fusion_tag([r.tag for r in self.rankers])

    @property
    def parts(self) -> tuple[Ranker, ...]:
        return self.rankers

    def configure(self, config: dict[str, Any]) -> None:
        for ranker in self.rankers:
            ranker.configure(config)
        section = _section(config, "fusion")
        section["enabled"] = True
        entries = list(_entries(section))
        same = next((h for h in map(Hybrid.of, entries) if h.tag == self.tag), None)
        if same is None:
            section["runs"] = entries + [self.hybrid.entry()]
        elif same != self.hybrid:  # one tag names one run file: the second would be dropped without a word
            raise ValueError(f"two fusions of {self.tag} with different settings ({same.settings_text()} and "
                             f"{self.hybrid.settings_text()}) in one experiment; a run tag names one run: compare "
                             f"them in two experiments (or a grid)")
