"""Re-rankers as a pipeline stage: train each configured model on the train split, re-rank the test
split's first-stage run (BM25's unless ``first_stage`` names another; with ``rerank_also``, other runs such as
the hybrid ``bm25f+glow`` too).

Each model has its own first stage — ``[rerank] first_stage`` for all, or a variant's own — and learns from
that run of the training queries (hard negatives, validation candidates), so one experiment can hold monoBERT
over BM25 and monoBERT over TW-BERT side by side::

    [rerank.variants.monobert-twbert]
    kind = "monobert"
    first_stage = "twbert"

Each model is its own cached unit (``rerank:<name>``), keyed on its settings and the runs it reads only: adding a
model, or a stage whose runs it does not read, leaves the others' re-ranked runs as they are.

``models`` names kinds (``monobert``, ``nrmf``) or variants defined as named settings, e.g. the NRM-F
ablations of ``configs/bench/rerank.toml``::

    [rerank.variants.nrmf-title]
    kind = "nrmf"
    model = { fields = ["title"] }

A variant starts from its kind's section and changes only what it names.  Hybrids such as ``bm25+nrmf``
are the fusion stage's (``[fusion] runs = ['bm25+nrmf']``: the re-ranked block fused with BM25, weights tuned
on the queries the model's training held out).  Torch is imported inside the stage's methods only."""

from __future__ import annotations

import copy
import logging
import re
import time
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Mapping

from irglow import settings as declared
from irglow.config import as_names, merged
from irglow.data.docstore import docs_store
from irglow.lexical.searchers import LexicalSearcher
from irglow.models.rerank.kinds import FitJob, RerankerKind, kind_names, reranker_kind
from irglow.models.validation import ChoosesOnOtherSources
from irglow.stage import Produced, Result, Stage, Unit, unit_name
from irglow.eval.measures import parse_measures
from irglow.models.checkpoints import read_training, validation_score
from irglow.models.rerank.pt import CrossEncoder
from irglow.models.source import held_out_run_on_training_corpus, reused_model
from irglow.rankers import Lexical, Listed, Model, Rerank, UnmadeRun, reranked_tag, split_reranked
from irglow.runs.keys import held_out
from irglow.runs.trec import Run, gather_runs
from irglow.utils.digest import queries_digest, records_digest, tree_digest, value_digest
from irglow.utils.distributed import all_gather, current, on_main, rank_file, split

log = logging.getLogger(__name__)

# a [rerank.variants.<name>] table's keys that are not its model's settings: its kind, the run it re-ranks, and whose
# trained model it uses
NOT_TRAINING = ("kind", "first_stage", "model_of", "depth")


def _variant_trainer(name: str, table: dict, rcfg: dict) -> dict:
    """A ``[rerank.variants.<name>]`` table as its model's training settings: its kind's, changed by the table."""
    change = dict(table)
    kind = change.pop("kind", None)
    for key in NOT_TRAINING:  # the run it re-ranks, whose trained model it uses: not training settings
        change.pop(key, None)
    if kind not in kind_names():
        raise ValueError(f"[rerank.variants.{name}] needs kind = one of {', '.join(kind_names())}, not {kind!r}")
    return {**merged(rcfg.get(kind, {}), change), "kind": kind}


def _bound_trainer(name: str, trainer: dict, where: str):
    """A model's training settings, bound by its kind (:meth:`~irglow.models.rerank.kinds.RerankerKind.bound`): a
    misspelt key is named before any work, not when the model is built after the first stage ran."""
    return reranker_kind(trainer.get("kind", "")).bound({k: v for k, v in trainer.items() if k != "kind"}, where)


def _fill(value, field: str):
    """A ``{field}`` variant's value for one field: every ``"{field}"`` string (in lists, tables and the training
    settings' fields too) replaced."""
    from dataclasses import fields as dataclass_fields, is_dataclass, replace

    if isinstance(value, str):
        return value.replace("{field}", field)
    if isinstance(value, (list, tuple)):
        return type(value)(_fill(v, field) for v in value)
    if isinstance(value, dict):
        return {k: _fill(v, field) for k, v in value.items()}
    if is_dataclass(value):
        return replace(value, **{f.name: _fill(getattr(value, f.name), field) for f in dataclass_fields(value)
                                 if f.init})
    return value


@dataclass(frozen=True)
class RerankResult(Result):
    """One re-ranking model's unit: its run, the model it used, the depth of its re-ranked block, the run it re-ranked,
    its pairs per second and, for int8, the precision check."""

    kind: ClassVar[str] = "rerank"
    run: str
    model: str
    depth: int
    first_stage: str
    pairs_per_s: float
    precision: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reranker:
    """One configured re-ranker, bound: its training settings, the run it re-ranks, and the model whose trained
    weights it uses (``None``: its own; ``model_of = "<another model>"``: it trains nothing and re-ranks its own
    first stage with that model — the same monoBERT over BM25 and over TW-BERT, what the first stage alone
    changes)."""

    train: Any  # irglow.models.rerank.train.RerankTrainConfig
    first_stage: str
    model_of: str | None = None
    # what a variant sets itself, as written (its Model's settings: MonoBERT(epochs=2)); its kind's section is the rest
    changes: dict = field(default_factory=dict)
    depth: int | None = None  # its own re-ranking depth (Rerank(…, depth=20)); None: [rerank] depth


def _top(run, depth: int):
    """The re-ranked block only: the kept-below tail's placeholder scores would stretch min-max."""
    return Run({q: d[:depth] for q, d in run.ranking.items()}, run.tag)


@dataclass(frozen=True)
class RerankSettings:
    """``[rerank]`` bound once: the models as listed (a ``{field}`` variant stands for one model per field of the
    training index, expanded by :meth:`with_fields` once its fields are known — before that, from ``index.fields``
    where configured, else left out), each bound :class:`Reranker`, the re-ranking depth, other runs it re-ranks,
    a folder of trained models to reuse, and whether checkpoints are also chosen on ``[validation] also``."""

    listed: tuple[str, ...]
    rerankers: dict  # {listed name: Reranker}; a {field} name's training settings still hold "{field}"
    depth: int
    rerank_also: tuple[str, ...]
    model_dir: str | None
    # whether its trainers also choose checkpoints on [validation] also: the plan says so (ValidationSettings.uses)
    validate_elsewhere: bool = True
    precision: str = "fp32"
    fields: tuple[str, ...] | None = None  # the training index's, once known
    # {kind: its [rerank.<kind>] table as written}: a re-ranking's model is its kind's table changed by its own settings
    tables: Mapping[str, Any] = field(default_factory=dict)

    def trainer(self, model: Model, where: str):
        """The bound training settings of ``model`` (a re-ranking node's: its kind's ``[rerank.<kind>]`` table
        changed by the model's own settings, ``MonoBERT(epochs=2)``); a misspelt key is named with ``where``."""
        return _bound_trainer(model.kind, {**merged(self.tables.get(model.kind, {}), dict(model.settings)),
                                           "kind": model.kind}, where)

    @cached_property
    def expanded(self) -> dict:
        """``{model: Reranker}`` in the order listed, each ``{field}`` variant as one model per field (none where the
        training index has one field, or its fields are not known yet)."""
        out = {}
        for name, reranker in self.rerankers.items():
            if "{field}" not in name:
                out[name] = reranker
                continue
            for f in self.fields if self.fields and len(self.fields) > 1 else ():
                out[name.replace("{field}", f)] = Reranker(_fill(reranker.train, f), reranker.first_stage,
                                                           reranker.model_of, _fill(reranker.changes, f),
                                                           reranker.depth)
        return out

    def with_fields(self, fields) -> "RerankSettings":
        """The same settings for a training index with these ``fields`` (the ``{field}`` variants expanded), checked."""
        bound = replace(self, fields=tuple(fields))
        bound.check()
        return bound

    def check(self) -> None:
        models = self.expanded
        own = [m for m, r in models.items() if r.model_of is None]  # those that train their own model
        for name, r in models.items():
            owner = r.model_of
            if owner is not None and owner not in own:
                raise ValueError(f"[rerank.variants.{name}] model_of = {owner!r} must name a re-ranker of "
                                 f"rerank.models that trains its own model ({', '.join(own)})")
            if owner is not None and models[owner].train.kind != r.train.kind:
                raise ValueError(f"[rerank.variants.{name}] is a {r.train.kind} but model_of = {owner!r} "
                                 f"is a {models[owner].train.kind}")
            if name not in self.rerankers and hasattr(r.train, "model_config"):  # one field's model of a {field}
                r.train.model_config(f"rerank.{name}.model")  # variant: its filled-in table checked

    @classmethod
    def from_config(cls, config, fields: list[str] | None = None) -> "RerankSettings":
        """``fields``: the training index's where known; else ``index.fields`` where configured."""
        rcfg = dict(config.get("rerank", {}))
        declared.check_table("rerank", rcfg)  # misspelt keys, a negative or string depth: named before any work
        rcfg.pop("enabled", None)
        variants = dict(rcfg.get("variants", {}))
        first = declared.value(config, "rerank", "first_stage")
        listed = as_names(declared.value(config, "rerank", "models"))
        rerankers = {}
        for name in listed:
            table = variants.get(name, {})
            if name in kind_names():
                own = rcfg.get(name, {})
                if own.get("kind", name) != name:  # the table's name is its kind: another would be dropped unseen
                    raise ValueError(f"rerank.{name}.kind = {own['kind']!r}: [rerank.{name}] holds {name}'s settings; "
                                     f"to train a {own['kind']} model, list it (or a [rerank.variants] entry) in "
                                     f"rerank.models")
                trainer = {**own, "kind": name}
            elif name in variants:
                trainer = _variant_trainer(name, table, rcfg)
                table = _named_as_it_is(name, table, trainer["kind"], first)
            elif "{field}" in name:
                raise ValueError(f"rerank.models: {name!r} needs a [rerank.variants.\"{name}\"] table")
            elif (reranking := split_reranked(name)) is not None and reranking[0] in kind_names():
                kind, first_of_name = reranking  # its tag says it: kind(first), with its kind's settings
                trainer, table = {**rcfg.get(kind, {}), "kind": kind}, {"first_stage": first_of_name}
            else:
                raise ValueError(f"rerank.models: {name!r} is neither a kind ({', '.join(kind_names())}), a kind "
                                 f"re-ranking a run (monobert(twbert)) nor a variant defined under [rerank.variants]"
                                 + (f" ({', '.join(variants)})" if variants else ""))
            changes = copy.deepcopy({k: v for k, v in table.items() if k not in NOT_TRAINING})  # a snapshot
            depth = table.get("depth")
            if depth is not None:  # what [rerank] depth may be, as its declaration says
                declared.DECLARED["rerank"]["depth"].check(depth, f"rerank.variants.{name}.depth")
            rerankers[name] = Reranker(_bound_trainer(name, trainer, f"rerank.{name}.model"),
                                       table.get("first_stage", first),
                                       None if table.get("model_of") in (None, name) else table.get("model_of"), changes,
                                       depth)
        # a variant no model uses is checked all the same: a misspelt key there would surface only on the day it is used
        for name, table in variants.items():
            if name not in rerankers:
                _bound_trainer(name, _variant_trainer(name, table, rcfg), f"rerank.variants.{name}.model")
        fields = fields if fields is not None else config.get("index", {}).get("fields")
        bound = cls(tuple(listed), rerankers, declared.value(config, "rerank", "depth"),
                    tuple(as_names(declared.value(config, "rerank", "rerank_also"))), rcfg.get("model_dir"),
                    precision=declared.value(config, "rerank", "precision"),
                    tables={k: copy.deepcopy(rcfg.get(k, {})) for k in kind_names()})  # a snapshot
        return bound.with_fields(fields) if fields else (bound.check() or bound)


def _named_as_it_is(name: str, table: dict, kind: str, first: str) -> dict:
    """A variant named as a re-ranking, ``kind(first)``, is that re-ranking: its first stage is the run its name says
    (taken from the name where the table sets none), and a table that says another kind or first stage is refused —
    the table's row and a transformer built from the name would otherwise describe another ranker than the run."""
    said = split_reranked(name)
    if said is None or said[0] not in kind_names():
        return table
    said_kind, said_first = said
    given = table.get("first_stage", said_first)
    if said_kind != kind or given != said_first:
        what = " and ".join(w for w in (f"a {kind}" if said_kind != kind else "",
                                         f"re-ranks {given!r}" if given != said_first else "") if w)
        raise ValueError(f"[rerank.variants.{name!r}] is named as {said_kind} re-ranking {said_first!r} but {what}: a "
                         f"name of the form kind(first) must say what it is; rename the variant (e.g. "
                         f"{kind}-{given}) or make it {said_kind} over {said_first}")
    return {**table, "first_stage": said_first}


class RerankStage(ChoosesOnOtherSources, Stage):
    name = "rerank"
    settings_class = RerankSettings
    trains = True

    def tags(self, s: RerankSettings) -> list[str]:
        return [*s.expanded, *(reranked_tag(m, a) for a in s.rerank_also for m in s.expanded)]

    def with_fields(self, s: RerankSettings, fields) -> RerankSettings:
        return s.with_fields(fields)

    def node(self, tag, s: RerankSettings, node_of):
        """``Rerank(first stage's node, the model)``, equal to the ranker a user wrote for it (its model's own
        settings, and a name only where its tag is not the one a re-ranking computes); a model whose trained weights
        are another re-ranker's (``model_of``) holds that re-ranker's node: it learns nothing before that one has
        trained."""
        # its model, and the run it re-ranks: the model's first stage, or the rerank_also run whose re-ranking it is
        name, first = next((m, r.first_stage if a is None else a) for m, r in s.expanded.items()
                           for a in (None, *s.rerank_also) if tag == (m if a is None else reranked_tag(m, a)))
        reranker = s.expanded[name]
        owner, changes = reranker.model_of or name, reranker.changes
        # a rerank_also run re-ranks with its model's trained weights: that model's node is its owner
        of = node_of(owner) if owner != name or tag != name else None
        model = Model(reranker.train.kind, **({"of": of} if of is not None else {}), **changes)
        try:
            first_node = node_of(first)
        except UnmadeRun as e:
            if e.tag != first:  # a run further down its first stage's parts: that node's error
                raise
            if first != "bm25":  # BM25 it searches itself where no [lexical] system writes it
                where = f"rerank.first_stage = {first!r}" + (f" ({name})" if name not in kind_names() else "")
                raise ValueError(f"{where} is not a run of this configuration; its runs: {', '.join(e.runs)}") from None
            first_node = Lexical(first)
        node = Rerank(first_node, model, depth=reranker.depth or s.depth)  # its re-ranked block: what a fusion fuses
        return node if node.tag == tag else replace(node, name=tag)

    def bind(self, ranker, s: RerankSettings, bind_part):
        """``Rerank(its first stage's node, its model)`` with its depth (its own, else ``[rerank] depth``); a model
        whose trained weights are another re-ranking's (``Model.of``) holds that one's node, which trains its own
        model of the same kind.  Its training settings are bound now: a misspelt key stops before any work."""
        model = ranker.model
        of = bind_part(model.of) if model.of is not None else None
        if of is not None and (not isinstance(of, Rerank) or of.model.of is not None or of.model.kind != model.kind):
            raise ValueError(f"{ranker.tag}: its model is that of {of.tag}, which must be a {model.kind} re-ranking "
                             f"training its own model")
        s.trainer(model, f"rerank.{ranker.tag}.model")
        if ranker.depth is not None:  # what [rerank] depth may be, as its declaration says
            declared.DECLARED["rerank"]["depth"].check(ranker.depth, f"{ranker.tag}: depth")
        bound = Rerank(bind_part(ranker.first), Model(model.kind, of=of, **model.settings), ranker.name,
                       depth=ranker.depth if ranker.depth is not None else s.depth)
        return bound if bound.tag == ranker.tag else replace(bound, name=ranker.tag)

    def transformer(self, ranker, folder):
        """Its first stage's transformer cut to the re-ranked depth, then the model the run used (irglow's kinds
        or a registered one); a re-ranker a configuration names (a variant) re-ranks the first stage it recorded."""
        done = folder.result(ranker)
        if done is None:
            return super().transformer(ranker, folder)
        first = ranker.first if isinstance(ranker, Rerank) else folder.ranker(done.first_stage)
        return (folder.build(first) % done.depth) >> CrossEncoder(done.model, folder.docs)

    def resolved(self, s: RerankSettings):
        from dataclasses import asdict

        models = s.expanded
        own = {n: r.depth for n, r in models.items() if r.depth not in (None, s.depth)}  # a re-ranking's own depth
        return {"models": {n: asdict(r.train) for n, r in models.items()},
                "depth": s.depth, **({"depths": own} if own else {}),
                "first_stages": {n: r.first_stage for n, r in models.items()},
                "rerank_also": list(s.rerank_also), "model_dir": s.model_dir}

    def reused_models(self, s: RerankSettings) -> dict[str, Path]:
        """The trained models ``model_dir`` holds for the configured re-rankers (loaded instead of training)."""
        return {name: reused_model(s.model_dir, name) for name, r in s.expanded.items() if r.model_of is None} \
            if s.model_dir else {}

    def train(self, s: RerankSettings, source, train_root: Path, bm25=None, nodes=()) -> dict[str, Path]:
        """Train (or find trained, or reuse from ``model_dir``) the model of each re-ranking node that trains its own,
        on BM25's run of the training queries: ``{name: model directory}`` (the grid's selection).  ``bm25``: the
        experiment's BM25 (a :class:`~irglow.lexical.searchers.LexicalConfig`)."""
        return {n.tag: self.fit(s, n, source, train_root, None, bm25) for n in nodes if n.model.of is None}

    def fit(self, s: RerankSettings, owner: Rerank, source, train_root: Path, first_stage=None, bm25=None,
            docs: dict | None = None, seed: int | None = None) -> Path:
        """The model of the re-ranking ``owner`` trained (or found trained, or reused from ``model_dir``) by its kind
        (:meth:`~irglow.models.rerank.kinds.RerankerKind.fit`).  ``first_stage``: the run of the training queries
        it will re-rank (``None``: BM25's, which ``bm25`` searches); ``docs``: the training collection's documents
        when the caller has read them already."""
        if s.model_dir:
            return reused_model(s.model_dir, owner.tag)
        bound = s.trainer(owner.model, f"rerank.{owner.tag}.model")
        return reranker_kind(bound.kind).fit(bound, FitJob(source, first_stage, bm25, Path(train_root), owner.tag,
                                                           seed, docs, s.validate_elsewhere))

    def first_stage(self, ctx, first):
        """(the run the node ``first`` made, its training queries' run or ``None``, whether the model learns from
        ``first``).  The experiment's BM25 (searched here where the plan does not make it) gives ``None``: the trainer
        searches its negatives itself, to its own depth.  A run whose stage makes no run of the training queries (a
        dense run, a tuned fusion, a re-ranking) gives ``None`` too: the model then learns from BM25's, as the notes
        say."""
        if first == Lexical("bm25"):
            run = ctx.runs.get("bm25") or LexicalSearcher(ctx.index, ctx.lexical_config("bm25")).search(
                ctx.test_queries, tag="bm25")
            return run, None, True
        training = ctx.runs.training(first.tag, ctx.source.queries())
        return ctx.runs[first.tag], training, training is not None

    def units(self, node, ctx) -> list:
        """One cached unit per re-ranking node, reading only its first stage (and the training-query run of the
        first stage its model learns from): a model added, or another stage's runs changed, re-runs no other one."""
        from dataclasses import asdict

        s = ctx.settings
        owner = node.model.of or node  # whose trained model it re-ranks with (model_of): its own, by default
        trainer = s.trainer(owner.model, f"rerank.{owner.tag}.model")
        kind = reranker_kind(trainer.kind)
        code = kind.code()
        # its first stage's training-query run is made when the model trains (Stage.run_of), from that run's
        # stage: the first stage's test run here stands for it in the key
        reads = {node.first.tag, owner.first.tag}
        # content, not names: its own name is its record's (.stages/rerank-<name>.json), another's model is named
        settings = {"model": asdict(trainer), "model_of": owner.tag if owner is not node else None,
                    "depth": node.depth or s.depth,
                    "first_stage": node.first.tag, "trained_on_first_stage": owner.first.tag, "model_dir": s.model_dir,
                    **({"precision": s.precision} if s.precision != "fp32" else {}),  # fp32: the keys of before
                    **({"code": code} if code else {})}  # a registered kind's code: edited, it runs again
        return [Unit(unit_name(self.name, node.tag), settings, lambda: ctx.runs.of(reads),
                     lambda: self.rerank_with(ctx, node), (node.tag,),
                     loads={owner.tag: reused_model(s.model_dir, owner.tag)} if s.model_dir else {},
                     collective=kind.collective)]

    def rerank_with(self, ctx, node) -> Produced:
        """One re-ranking node's unit, for every kind: its first stage re-ranked by its model (trained once per
        settings and training data), and its held-out training queries' run for a fusion.  A collective kind
        (irglow's own) re-ranks under torchrun each rank's share of the queries."""
        s, source, test_q, name = ctx.settings, ctx.source, ctx.test_queries, node.tag
        owner = node.model.of or node
        depth = node.depth or s.depth
        kind = reranker_kind(owner.model.kind)
        docs = docs_store(ctx.collection)  # by id, a query's re-ranking depth at a time
        first, first_training, own = self.first_stage(ctx, node.first)
        # a first stage whose stage makes no run of the training queries (a dense run, a tuned fusion, a re-ranking): the
        # model learns from BM25's, and no held-out run is written (it would re-rank BM25, not this first stage)
        if not own:
            log.info("%s: %s has no run of the training queries: the model learns from BM25's; a fusion with %s is "
                     "reciprocal-rank", name, node.first.tag, name)
        owner_training = first_training if owner.first.tag == node.first.tag else \
            self.first_stage(ctx, owner.first)[1]
        model_dir = self.fit(s, owner, source, ctx.train_root, owner_training, ctx.lexical_config("bm25"),
                             docs=None if ctx.zero_shot else docs, seed=ctx.seed)  # in domain: the same documents
        model = kind.load(model_dir)
        val_ids = set(read_training(model_dir).get("val_query_ids", []))
        tune_q = [q for q in source.queries() if q.query_id in val_ids]
        tune_first = None
        if tune_q and (s.precision == "int8" or ctx.reads_held_out(name)):
            tune_first = LexicalSearcher(source.index, ctx.lexical_config("bm25")).search(tune_q, tag="bm25") \
                if first_training is None else Run({q.query_id: first_training.ranking.get(q.query_id, [])
                                                    for q in tune_q}, first_training.tag)
        source_docs = docs_store(source.collection) \
            if ctx.zero_shot and tune_first is not None else docs  # the held-out queries' documents
        precision, check, tune_run = self._precision(s.precision, kind, model, tune_first, tune_q, source_docs, source,
                                                     depth, name)
        t = time.perf_counter()
        # under torchrun a collective kind's ranks each re-rank a share of the queries (each its own checkpoint: a
        # killed re-ranking resumes with the batches it had not scored); rank 0 writes the run
        mine = split(test_q) if kind.collective else test_q
        run = first
        if kind.collective and current().size > 1:  # this rank's queries of the run (the others are their ranks')
            run = Run({q.query_id: run.ranking[q.query_id] for q in mine if q.query_id in run.ranking}, run.tag)
        out = kind.rerank_run(model, run, mine, docs, depth, name, precision=precision, desc=name,
                              checkpoint=ctx.out / rank_file(f".{name}.rerank-partial.jsonl"))
        produced = gather_runs({name: out}, test_q) if kind.collective else {name: out}
        rate = sum(min(depth, len(first.ranking.get(q.query_id, []))) for q in mine) / max(1e-9, time.perf_counter() - t)
        rate = sum(all_gather(rate)) if kind.collective else rate  # the job's pairs per second
        produced[name].write(ctx.out / f"{name}.run")
        # its held-out training queries' run, which a fusion tunes on (zero-shot: carried)
        if ctx.reads_held_out(name) and tune_first is not None and own:
            if tune_run is None:
                tune_run = on_main(lambda: self._held_out_run(kind, model, model_dir, tune_first, tune_q, source_docs,
                                                              depth, name, precision, ctx))
            produced.update([held_out(name).write(ctx.out, _top(tune_run, depth))])
        return Produced(produced, RerankResult(name, str(model_dir), depth, first.tag, rate, check or {}))

    @staticmethod
    def _held_out_run(kind: RerankerKind, model, model_dir: Path, tune_first, tune_q, docs, depth: int, name: str,
                      precision: str, ctx):
        """The model's re-ranking of its held-out training queries, for the fusion.  Zero-shot it re-ranks the
        training collection's documents, the same for every collection of a suite, so it is kept under the
        training folder (:func:`~irglow.models.source.held_out_run_on_training_corpus`), keyed by the model's
        files, the first stage's run of those queries, the training index, the depth and the precision."""
        def make(work=None):
            return kind.rerank_run(model, tune_first, tune_q, docs, depth, name, precision=precision,
                                   desc=f"{name} (held-out training queries)")

        if not ctx.zero_shot:
            return make()

        first = records_digest((d.query_id, d.doc_id, d.score) for d in tune_first.scored_docs())
        key = value_digest({"model": tree_digest(model_dir), "first_stage": first, "queries": queries_digest(tune_q),
                            "index": Path(ctx.source.index.path).name, "depth": depth, "precision": precision})
        return held_out_run_on_training_corpus(ctx.train_root, name, key, make)

    @staticmethod
    def _precision(asked: str, kind: RerankerKind, model, tune_first, tune_q, docs, source, depth: int, name: str):
        """(the precision the test runs use, the check's figures, the held-out run in that precision or None).
        int8 is kept only where, on the held-out training queries, its nDCG@10 is within the tolerance of fp32's
        (:func:`~irglow.models.int8.kept_precision`): quantization that moves the ranking is said once and not
        used."""
        from irglow.models.int8 import kept_precision

        if asked != "int8":
            return asked, {}, None
        if asked not in kind.precisions:
            log.warning("%s: a %s re-ranks in %s only; re-ranking in fp32", name, kind.name, ", ".join(kind.precisions))
            return "fp32", {"asked": "int8", "used": "fp32", "why": f"{kind.name} has no int8 path"}, None
        if tune_first is None:
            log.warning("%s: no held-out training queries to check int8 on; re-ranking in fp32", name)
            return "fp32", {"asked": "int8", "used": "fp32", "why": "no held-out queries to check int8 on"}, None
        runs = {p: kind.rerank_run(model, tune_first, tune_q, docs, depth, name, precision=p,
                                   desc=f"{name} ({p}, held-out queries)") for p in ("fp32", "int8")}
        wanted = {x.query_id for x in tune_q}
        judged = [q for q in source.qrels() if q.query_id in wanted]
        scores = {p: validation_score(parse_measures(["nDCG@10"]), judged, _top(r, depth)) for p, r in runs.items()}
        used, check = kept_precision(name, scores, len(tune_q), "held-out training queries", "re-ranking in fp32")
        return used, check, runs[used]
