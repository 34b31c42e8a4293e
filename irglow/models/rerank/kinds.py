"""Re-ranker kinds as a registry: irglow's own (monoBERT, NRM-F) and any a package registers, each found by name.

A kind is what ``>>`` puts after a ranker (``Lexical("bm25") >> Model("linear")``) and what ``[rerank] models``
and a variant's ``kind`` name.  irglow's own kinds are :class:`TorchKind` entries of :data:`BUILT_IN` that train in
its one training loop (:mod:`irglow.models.rerank.train`); another package's kind is a :class:`RerankerKind`
registered under the entry-point group ``irglow.rerankers`` (``linear = "linear_rerank:LinearReranker"``,
``examples/linear_rerank.py``).  Both are found by :func:`reranker_kinds` and go the same way: the re-ranking stage
gives it its first stage's run of the training queries, holds out the same queries every trainer holds out (so a
fusion with it is tuned on queries it never saw), caches its model by its settings and training data, writes the
kind into the model folder (``irglow-model.json``: loaded by it, never guessed from file names), re-ranks any run
— a fusion, another re-ranking — and builds its PyTerrier transformer.
"""

from __future__ import annotations

import copy
import json
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any, Sequence

from irglow.models.rerank.builtin import TORCH_MODELS, TorchModel
from irglow.settings import check_fields, check_settings
from irglow.utils.atomic import output_lock
from irglow.utils.plugins import RERANKERS, class_code, defined, module_code, registered

ENTRY_POINTS = RERANKERS
MODEL_FILE = "irglow-model.json"  # {"kind": ...} in every re-ranking model folder irglow writes


@dataclass(frozen=True)
class KindTraining:
    """A registered kind's training settings, bound by the kind (:meth:`RerankerKind.bound`).

    Args:
        kind: The kind's name.
        settings: Its training settings, bound by the kind (its ``settings_class``'s object; ``None`` for a kind
            without settings).
    """

    kind: str
    settings: Any = None


@dataclass(frozen=True)
class FitJob:
    """What a kind's model is trained from, as the re-ranking stage gives it: the training side (``source``: its
    queries, judgments, index and collection), the run of the training queries it will re-rank (``first_stage``;
    ``None``: BM25's, :meth:`bm25_run`), the experiment's BM25 (``bm25``, a
    :class:`~irglow.lexical.searchers.LexicalConfig`), where trainings are kept (``train_root``), the model's name
    (``owner``), the experiment's seed, the training documents (``docs``; ``None``: the source's) and whether
    checkpoints are also chosen on other sources (``validate_elsewhere``).

    Args:
        source: The training side: its queries, judgments, index and collection.
        first_stage: The run of the training queries it will re-rank (``None``: BM25's, :meth:`bm25_run`).
        bm25: The experiment's BM25 (a :class:`~irglow.lexical.searchers.LexicalConfig`).
        train_root: Where trainings are kept (the shared models folder).
        owner: The model's name.
        seed: The experiment's seed (the held-out split's).
        docs: The training documents (``None``: the source's).
        validate_elsewhere: Whether checkpoints are also chosen on ``[validation] also``'s sources.
    """

    source: Any
    first_stage: Any
    bm25: Any
    train_root: Path
    owner: str
    seed: int | None = None
    docs: Any = None
    validate_elsewhere: bool = False

    def bm25_run(self):
        """The experiment's BM25 run of every training query, on the training index."""
        from irglow.lexical.searchers import LexicalSearcher, pool_config

        return LexicalSearcher(self.source.index, pool_config(self.bm25)).search(self.source.queries(), tag="bm25")


class RerankerKind:
    """A kind of re-ranking model.  Another package sets ``name`` and ``settings_class`` (a dataclass of
    :func:`irglow.settings.setting` fields, bound from ``[rerank.<name>]`` or a variant), and implements
    :meth:`train` and :meth:`rerank`; the stage trains it through :meth:`fit`, re-ranks through :meth:`rerank_run`
    and builds its PyTerrier transformer from them.  irglow's own kinds (:class:`TorchKind`) override those three
    with its training loop, torchrun shares, int8 and resumable re-rankings: one path for every kind."""

    name = ""
    title = ""  # what it is, in a few words (its command's help)
    settings_class: type | None = None
    collective = False  # True: every torchrun rank trains with it and re-ranks its share of the queries
    precisions: tuple[str, ...] = ("fp32",)  # what [rerank] precision it can re-rank in

    def __init__(self, **settings: Any) -> None:
        """``settings``: training settings that differ from its ``[rerank.<name>]`` table, as ``MonoBERT(**settings)``
        takes them (``first >> LinearReranker(steps=50)``)."""
        self.settings = settings

    def bind(self, table: dict[str, Any], where: str) -> Any:
        """Its training settings from a table; a misspelt key or a wrong value is named before any work.

        Args:
            table: Its settings table, as a configuration holds it (``[rerank.<kind>]`` or a variant's).
            where: Where the table is, for an error (``rerank.linear``).
        """
        if self.settings_class is None:
            if table:
                raise ValueError(f"[{where}]: the {self.name} re-ranker takes no settings, not {sorted(table)}")
            return None
        check_settings(table, self.settings_class.__dataclass_fields__, f"[{where}]")
        return check_fields(self.settings_class(**table), where)

    def bound(self, table: dict[str, Any], where: str) -> Any:
        """Its bound training settings, which say their ``kind`` (what a configuration's model holds).

        Args:
            table: Its settings table, as a configuration holds it (``[rerank.<kind>]`` or a variant's).
            where: Where the table is, for an error (``rerank.linear``).
        """
        return KindTraining(self.name, self.bind(table, where.removesuffix(".model")))

    def train(self, settings: Any, queries: Sequence, qrels: Sequence, first_stage, docs, model_dir: Path) -> None:
        """Train on the training ``queries`` (their judgments ``qrels``; ``first_stage``: the run it will re-rank, of
        those queries) and save the model into ``model_dir``.

        Args:
            settings: Its bound training settings (``settings_class``'s object).
            queries: The training queries (those held out for validation left out).
            qrels: Their judgments.
            first_stage: The run it will re-rank, of the training queries.
            docs: The training collection's documents by id (``docs.get(doc_id)``).
            model_dir: The folder to save the model into (written atomically: it appears once complete).
        """
        raise NotImplementedError

    def rerank(self, model_dir: Path, run, queries: Sequence, docs, depth: int, tag: str):
        """``run`` with each query's top ``depth`` re-ordered by the model in ``model_dir``, the rest kept below in
        its order (:func:`irglow.models.rerank.rerank.rerank_ranking`), as a :class:`~irglow.runs.trec.Run`.

        Args:
            model_dir: The model folder :meth:`train` saved.
            run: The run to re-rank.
            queries: The queries (their text) of the run.
            docs: The documents by id.
            depth: The top documents of each query re-ordered (the rest kept below, in order).
            tag: The re-ranked run's name.
        """
        raise NotImplementedError

    def settings_dict(self, settings: Any) -> dict[str, Any]:
        """Its settings as plain values (the cache key and the manifest).

        Args:
            settings: Its bound training settings.
        """
        return asdict(settings) if is_dataclass(settings) else {}

    def code(self) -> dict[str, str] | None:
        """A digest of its code, in its cache keys: an edited plugin runs again (irglow's own kinds: ``None``,
        irglow's version keys them).  Its module's files (:func:`~irglow.utils.plugins.module_code`), or, for a class
        defined where there is no file (a notebook cell), the class and what it calls
        (:func:`~irglow.utils.plugins.class_code`)."""
        import sys

        cls = type(self)
        if getattr(sys.modules.get(cls.__module__), "__file__", None) is None:
            return {"module": cls.__module__, "class": cls.__qualname__, "source": class_code(cls)}
        return module_code(cls.__module__)

    def load(self, model_dir: str | Path) -> Any:
        """What :meth:`rerank_run` is given: the model folder itself (a kind loads its model in :meth:`rerank`).

        Args:
            model_dir: The model folder.
        """
        return Path(model_dir)

    def rerank_run(self, model: Any, run, queries: Sequence, docs, depth: int, tag: str, *, precision: str = "fp32",
                   checkpoint: Path | None = None, batch_size: int = 64, device=None, desc: str | None = None):
        """``run`` re-ranked by ``model`` (:meth:`load`'s): every re-ranking irglow does goes through here.

        Args:
            model: What :meth:`load` gave.
            run: The run to re-rank.
            queries: The queries of the run.
            docs: The documents by id.
            depth: The top documents of each query re-ordered.
            tag: The re-ranked run's name.
            precision: ``fp32``, or ``int8`` where the kind offers it (``precisions``).
            checkpoint: A file a killed re-ranking resumes from (irglow's kinds).
            batch_size: Query-document pairs scored per batch (irglow's kinds).
            device: The torch device (irglow's kinds; unset: a GPU where there is one).
            desc: The progress bar's label (unset: ``tag``).
        """
        return self.rerank(Path(model), run, queries, docs, depth, tag)

    def fit(self, bound: Any, job: FitJob) -> Path:
        """The trained model's folder: found trained for these settings and training data, or trained on the first
        stage's run of the training queries with the queries every trainer holds out left out (they tune fusions;
        a kind whose settings declare ``val_fraction`` holds out that share).

        Args:
            bound: Its bound training settings (:meth:`bound`'s).
            job: What it trains from (:class:`FitJob`: the training side, the first stage's run, BM25, where trainings
                are kept).
        """
        from irglow.models.source import keyed_train_dir

        source = job.source
        first = job.first_stage if job.first_stage is not None else job.bm25_run()
        settings = self.settings_dict(bound.settings)
        # by kind and content, not by the re-ranking's name: one model for one kind, settings and training data
        folder = keyed_train_dir(Path(job.train_root) / f"{self.name}-train", {
            "kind": self.name, "code": self.code(), "settings": settings, "source": source.digest, "seed": job.seed,
            "first_stage": first.digest()})
        with output_lock(folder):  # shared by every output folder: one trains it, another then finds it
            return self._fit(bound, job, folder, first, settings)

    def _fit(self, bound: Any, job: FitJob, folder: Path, first, settings: dict[str, Any]) -> Path:
        from irglow.data.docstore import docs_store
        from irglow.defaults import SEED, VAL_FRACTION
        from irglow.models.checkpoints import split_validation
        from irglow.runs.trec import Run
        from irglow.utils.atomic import atomic_dir, atomic_write_text

        source = job.source
        model_dir = folder / "best"
        if (model_dir / MODEL_FILE).is_file():
            return model_dir
        qrels = list(source.qrels())
        ids = sorted({r.query_id for r in qrels if r.relevance > 0})
        fraction = getattr(bound.settings, "val_fraction", VAL_FRACTION)
        val_ids, train_ids = split_validation(ids, fraction, job.owner, SEED if job.seed is None else job.seed)
        kept = set(train_ids)
        atomic_write_text(folder / "training.json", json.dumps({  # before the model: a model never lacks it
            "kind": self.name, "settings": settings, "train_queries": len(train_ids),
            "val_queries": len(val_ids), "val_query_ids": val_ids}, indent=1))
        with atomic_dir(model_dir) as tmp:
            self.train(bound.settings, [q for q in source.queries() if q.query_id in kept],
                       [r for r in qrels if r.query_id in kept],
                       Run({q: d for q, d in first.ranking.items() if q in kept}, first.tag),
                       docs_store(source.collection), tmp)
            write_kind(tmp, self.name)
        return model_dir


class TorchKind(RerankerKind):
    """irglow's own kinds (:data:`~irglow.models.rerank.builtin.TORCH_MODELS`): a torch scorer trained in irglow's
    one training loop (:mod:`irglow.models.rerank.train`: hard negatives from the first stage, validation on other
    sources too, checkpoints and resumption, torchrun), re-ranking in batches with AMP, int8 and a checkpoint a
    killed re-ranking resumes from (:func:`irglow.models.rerank.rerank.rerank`).

    Args:
        name: The kind's name (``monobert``, ``nrmf``).
        model: Its declared torch model and settings classes.
    """

    collective = True
    precisions = ("fp32", "int8")

    def __init__(self, name: str, model: TorchModel) -> None:
        super().__init__()
        self.name, self.title, self.declared = name, model.title, model

    @property
    def model_class(self) -> type:
        """Its torch model (``MonoBERT``, ``NRMF``): ``load`` and ``for_training`` make one."""
        return self.declared.model_class

    @property
    def config_class(self) -> type:
        """Its model's settings (``[rerank.<kind>.model]``)."""
        return self.declared.config_class

    @property
    def settings_class(self) -> type:
        from irglow.models.rerank.train import RerankTrainConfig

        return RerankTrainConfig

    def bound(self, table: dict[str, Any], where: str) -> Any:
        """A :class:`~irglow.models.rerank.train.RerankTrainConfig`, its model's table checked too (a misspelt key
        is named before any work, not when the model is built after the first stage ran).

        Args:
            table: Its settings table, as a configuration holds it (``[rerank.<kind>]`` or a variant's).
            where: Where the table is, for an error (``rerank.linear``).
        """
        bound = self.settings_class.from_dict({**table, "kind": self.name})
        bound.model_config(where)
        return bound

    def load(self, model_dir: str | Path) -> Any:
        return self.model_class.load(model_dir)

    def rerank_run(self, model: Any, run, queries: Sequence, docs, depth: int, tag: str, *, precision: str = "fp32",
                   checkpoint: Path | None = None, batch_size: int = 64, device=None, desc: str | None = None):
        from irglow.models.rerank.rerank import rerank

        return rerank(model, run, queries, docs, depth, batch_size, tag=tag, device=device, desc=desc or tag,
                      precision=precision, checkpoint=checkpoint)

    def fit(self, bound: Any, job: FitJob) -> Path:
        from irglow.data.docstore import docs_store
        from irglow.lexical.searchers import pool_inputs
        from irglow.models.rerank.train import RerankTrainer
        from irglow.models.source import keyed_train_dir
        from irglow.models.validation import chosen_on

        source, first_stage = job.source, job.first_stage
        # the checkpoint may be chosen on other sources too (irglow.models.validation)
        also, validated_on = chosen_on(source, job.validate_elsewhere)
        inputs = {"source": source.digest, **validated_on, **pool_inputs(job.bm25)}
        if first_stage is not None:
            inputs["first_stage"] = [first_stage.tag, first_stage.digest()]
        # by kind and content, not by the re-ranking's name: monobert over a tuned fusion learns from BM25's run, as
        # monobert over BM25 does, and finds that model trained
        train_dir = keyed_train_dir(Path(job.train_root) / f"{self.name}-train", {"settings": asdict(bound), **inputs})
        docs = job.docs if job.docs is not None else docs_store(source.collection)
        with output_lock(train_dir):  # shared by every output folder: one trains it, another then finds it
            return RerankTrainer(copy.deepcopy(bound), train_dir).train(
                source.index, docs, source.queries(), source.qrels(), first_stage=first_stage, validation=also,
                bm25=job.bm25)


# irglow's own kinds: the registry's first entries (a plugin may not take their names)
BUILT_IN: dict[str, RerankerKind] = {name: TorchKind(name, model) for name, model in TORCH_MODELS.items()}


def plugin_kinds() -> dict[str, RerankerKind]:
    """The kinds other packages register (entry-point group ``irglow.rerankers``), and those used as objects in this
    process (``first >> LinearReranker()``: a class defined anywhere, a notebook cell included); a name irglow's
    kinds (or another plugin) use is an error naming both, as is an entry point that is no :class:`RerankerKind`."""
    found: dict[str, RerankerKind] = {}
    for point in registered(ENTRY_POINTS):
        where = f"entry point {point.name} = {point.value!r} ({ENTRY_POINTS})"
        try:
            loaded = point.load()
            kind = loaded() if isinstance(loaded, type) else loaded
        except Exception as e:  # noqa: BLE001 - a plugin's own failure, named with its entry point
            raise ValueError(f"{where} failed to load: {type(e).__name__}: {e}") from e
        if not isinstance(kind, RerankerKind) or not kind.name:
            raise ValueError(f"{where} is not a re-ranker kind with a name (a subclass of "
                             f"irglow.models.rerank.kinds.RerankerKind, name = '...'): it is {loaded!r}")
        if kind.name != point.name:  # the entry point's name is the kind's (its [rerank.<name>] table)
            raise ValueError(f"{where}: the entry point is named {point.name!r}, its kind {kind.name!r}: name them alike")
        if kind.name in BUILT_IN or kind.name in found:
            raise ValueError(f"{where}: the re-ranker kind {kind.name!r} is taken")
        found[kind.name] = kind
    for name, kind in defined(ENTRY_POINTS).items():  # used as objects in this process (a notebook's class)
        taken = BUILT_IN.get(name) or found.get(name)
        if taken is not None and type(taken) is not type(kind):
            raise ValueError(f"the re-ranker kind {name!r} of {type(kind).__module__}.{type(kind).__qualname__} is "
                             f"taken by {type(taken).__module__}.{type(taken).__qualname__}: give yours another name")
        found[name] = kind
    return found


def reranker_kinds() -> dict[str, RerankerKind]:
    """Every re-ranker kind by name: irglow's, then the registered ones (the one registry)."""
    return {**BUILT_IN, **plugin_kinds()}


def kind_names() -> tuple[str, ...]:
    """Every re-ranker kind's name: irglow's, then the registered ones."""
    return tuple(reranker_kinds())


def reranker_kind(name: str) -> RerankerKind:
    """The kind ``name``; an unknown name is an error listing the known ones."""
    kinds = reranker_kinds()
    if name not in kinds:
        raise ValueError(f"{name!r} is not a re-ranker kind; the kinds: {', '.join(kinds)}")
    return kinds[name]


def write_kind(model_dir: Path, kind: str) -> None:
    """Say a model folder's kind in it (what :func:`kind_of` reads).

    Args:
        model_dir: The model folder.
        kind: The kind's name.
    """
    Path(model_dir).mkdir(parents=True, exist_ok=True)
    (Path(model_dir) / MODEL_FILE).write_text(json.dumps({"kind": kind}))


def kind_of(model_dir: str | Path) -> str:
    """The kind a model folder says it holds.

    Args:
        model_dir: A model folder irglow wrote.
    """
    f = Path(model_dir) / MODEL_FILE
    if not Path(model_dir).is_dir():  # a run folder naming a model since removed (irglow cache prune, a new cache)
        raise FileNotFoundError(f"the model folder {model_dir} is gone (removed from $IRGLOW_MODELS, or another "
                                f"machine's): run the experiment again to train it, or name another with model_dir")
    if not f.is_file():
        raise FileNotFoundError(f"{model_dir} is not a re-ranker folder irglow wrote: it has no {MODEL_FILE} (a "
                                f"folder trained before irglow recorded model kinds: train it again)")
    return json.loads(f.read_text())["kind"]


def load_reranker(path: str | Path):
    """The torch model in ``path``, of the kind its folder says (``irglow-model.json``: monoBERT or NRM-F)."""
    kind = reranker_kind(kind_of(path))
    if not isinstance(kind, TorchKind):
        raise ValueError(f"{path} holds a {kind.name!r} re-ranker: its kind re-ranks it (irglow.models.rerank.kinds), "
                         f"not a torch scorer")
    return kind.load(path)
