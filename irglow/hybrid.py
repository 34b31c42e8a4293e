"""The pipeline's one fusion: any runs of one pipeline — lexical, TW-BERT, dense, re-ranked — fused into a
hybrid, its weights tuned on training queries that *no* fused model trained on.  It is the only place runs
are fused (``bm25f+glow``, ``bm25+nrmf`` and ``twbert+glow+monobert`` alike), configured in one section:

    [fusion]
    enabled = true
    runs = ["bm25f+glow", ["twbert", "glow"], ["twbert", "glow", "monobert"]]   # or one "a+b,a+b+c" string
    method = "wsum"      # wsum (normalised score sums) | rrf
    norm = "min-max"
    step = 0.05          # convex weight grid
    measure = "nDCG@10"  # what the weights maximise on the tuning queries
    zero_shot = "carried"  # models trained elsewhere: carried (the training collection's weights) | rrf

Each model stage writes, beside its test run, the run of the queries its training held out
(``<out>/tuning/<tag>.run``) when a fusion names it.  The tuning queries are the intersection of those
held-out sets, so the weights are tuned on queries every fused model never saw; lexical runs of the
same queries come from the training collection's index.  Re-ranked runs take part with their re-ranked
block only (the kept-below tail's placeholder scores would stretch min-max).  Zero-shot (models
trained on another collection) the stages write their runs of the *training* collection's held-out queries,
and the weights tuned there are carried over unchanged (``zero_shot = "carried"``, the default: best of the
schemes measured in BENCHMARKS.md "Zero-shot fusion without judgments"); ``zero_shot = "rrf"`` fuses by
reciprocal rank instead.  Nothing is ever tuned on the evaluated collection, and its judgments are read only
after every run is written.  Each hybrid is made (and
cached) as soon as the runs it fuses exist, so a later stage can re-rank it (``rerank.rerank_also``).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any, ClassVar

from irglow.defaults import FUSION_METHOD, FUSION_NORM
from irglow import settings
from irglow.runs.fusion import convex_grid, cross_fitted, fuse, fuse_tuned, method_of, restricted
from irglow.runs.trec import Run
from irglow.runs.keys import Runs, held_out
from irglow.rankers import Fusion, Rerank, UnmadeRun, configured_fusions, fusion_tag, split_fusion
from irglow.stage import Produced, Result, Stage, Unit, unit_name
from irglow.eval.measures import parse_measures

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class FusionSettings:
    """``[fusion]`` bound: the hybrids and the defaults a hybrid does not set itself."""

    hybrids: tuple[Fusion, ...]  # each part a Named run
    method: str
    norm: str
    step: float
    measure: str
    optional: bool
    zero_shot: str = "carried"

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "FusionSettings":
        settings.check(config, ("fusion",))  # types, ranges, choices and misspelt keys, each named
        keys = ("method", "norm", "step", "measure", "optional", "zero_shot")
        bound = cls(tuple(configured_fusions(config)), *(settings.value(config, "fusion", k) for k in keys))
        method_of(bound.method, "fusion.method")  # a registered method, named before any work
        parse_measures([bound.measure])
        try:  # the weight grid is built after every model trained: its step is checked now
            convex_grid(1, bound.step)
        except ValueError as e:
            raise ValueError(f"fusion.step = {bound.step!r}: {e}") from None
        return bound

    @property
    def tags(self) -> list[str]:
        return [h.tag for h in self.hybrids]


@dataclass(frozen=True)
class FusionResult(Result):
    """One hybrid made: its parts, method, normalisation and weights, and why they are what they are — tuned
    (``measure`` reaching ``tuning_score`` on ``tuning_queries`` of the ``tuning_set``, carried from another
    collection zero-shot) or not tuned (``why``)."""

    kind: ClassVar[str] = "fusion"
    tag: str
    parts: list = field(default_factory=list)
    method: str = FUSION_METHOD
    weights: list = field(default_factory=list)
    norm: str | None = None
    why: str | None = None
    measure: str | None = None
    tuning_score: float | None = None
    tuning_queries: int | None = None
    tuning_set: str | None = None
    carried_from: str | None = None

    @classmethod
    def of(cls, tag: str, info: dict[str, Any], measure: str) -> "FusionResult":
        """From :func:`fuse_entry`'s info (its ``tuning_<measure>`` the score)."""
        score = info.get(f"tuning_{measure}")
        return cls(tag, list(info.get("parts", [])), info["method"], list(info["weights"]), info.get("norm"),
                   info.get("why"), measure if score is not None else None, score, info.get("tuning_queries"),
                   info.get("tuning_set"), info.get("carried_from"))


def fuse_entry(ctx, parts: list[str], cut: dict[str, int], hybrid: Fusion | None = None,
               held_out_too: bool = False) -> tuple[Run, dict, Run | None]:
    """One configured hybrid of the runs in ``ctx.runs``: weights tuned on the held-out training queries every
    fused model left out (lexical parts searched for them on the training index), or reciprocal-rank fusion
    zero-shot or when a model has no held-out run; ``cut``: re-ranked tags and their depth.  ``hybrid``: its own
    method and normalisation (else ``[fusion]``'s), or fixed weights (then nothing is tuned).

    ``held_out_too`` (another fusion tunes on this one): also its run of the tuning queries — cross-fitted where
    its weights are tuned (:func:`~irglow.runs.fusion.cross_fitted`: no query's run fused with weights its own
    judgments chose), else its parts' runs of them fused as the test runs are.  Returns the test run, what was
    done (:class:`FusionResult`'s fields) and that held-out run (``None`` where none was asked or none can be
    made)."""
    fs = ctx.settings
    method, norm, measure, step = fs.method, fs.norm, fs.measure, fs.step
    if hybrid is not None:
        method, norm = hybrid.method or method, hybrid.norm or norm
    depth, runs, tag = ctx.lexical.depth, ctx.runs, fusion_tag(parts)

    def top(run: Run, name: str) -> Run:
        return Run({q: d[: cut[name]] for q, d in run.ranking.items()}, run.tag) if name in cut else run

    test = [top(runs[p], p) for p in parts]
    fixed = hybrid is not None and hybrid.weights is not None
    if fixed or not method_of(method).tuned:  # nothing tuned: its held-out run fuses its parts' as the test runs are
        weights = list(hybrid.weights) if fixed else [1.0] * len(parts)
        tuning = _parts_on_tuning_queries(ctx, parts, top) if held_out_too else None
        held = fuse(tuning[0], method, norm, weights, depth=depth, tag=tag) if isinstance(tuning, tuple) else None
        return fuse(test, method, norm, weights, depth=depth, tag=tag), {
            "method": method, "norm": norm if method_of(method).normalises else None, "weights": weights,
            "why": "fixed weights" if fixed else f"method = {method} (nothing tuned)", "parts": list(parts)}, held
    carried = ctx.zero_shot and fs.zero_shot == "carried"
    tuning = _parts_on_tuning_queries(ctx, parts, top) if carried or not ctx.zero_shot else None
    if not isinstance(tuning, tuple):
        why = "zero-shot (fusion.zero_shot = rrf)" if tuning is None else \
            ("zero-shot, " if ctx.zero_shot else "") + tuning
        return fuse(test, "rrf", depth=depth, tag=tag), {"method": "rrf", "weights": [1.0] * len(parts), "why": why,
                                                         "parts": list(parts)}, None
    tune, qrels, tuning_set = tuning
    run, info = fuse_tuned(test, tune, qrels, method, norm, measure, step, depth=depth, tag=tag)
    info["tuning_set"] = tuning_set
    if carried:  # tuned on the training collection's held-out queries, used here unchanged
        info["carried_from"] = f"{ctx.source.collection.name} / {ctx.source.split}"
    held = cross_fitted(tune, qrels, method, norm, measure, step, depth=depth, tag=tag)[0] if held_out_too else None
    return run, {**info, "parts": list(parts)}, held


def _parts_on_tuning_queries(ctx, parts: list[str], top) -> "tuple[list[Run], list, str] | str":
    """The parts' runs of the queries a fusion tunes on, their judgments and which queries they are: the trained
    parts' runs of the queries they held out, intersected (a part that learned nothing from the training queries
    — a Lucene run — ranks whichever the others held out), or every judged training query where no part
    trained.  Where there are none, why (a string)."""
    runs = ctx.runs
    held = {p: runs.held_out(p) for p in parts if not runs.searchable(p) and runs.held_out(p) is not None}
    missing = [p for p in parts if p not in held and not runs.searchable(p)]
    if missing:
        return "no held-out runs of " + ", ".join(missing)
    if held:  # a model's held-out queries: the ones no fused model trained on
        qids = set.intersection(*(set(r.ranking) for r in held.values()))
    else:  # runs that learned nothing from the training queries: every judged one tunes the weights
        judged = _training_queries(ctx)
        if judged is None:
            return "the training collection has no judged training queries to tune on"
        qids = {q.query_id for q in judged}
    qrels = [r for r in ctx.source.qrels() if r.query_id in qids]
    queries = [q for q in ctx.source.queries() if q.query_id in qids]
    tune = [top(restricted(held[p], qids), p) if p in held else runs.of_training_queries(p, queries) for p in parts]
    return tune, qrels, "held-out training" if held else "training"


def _training_queries(ctx):
    """The training collection's judged training queries, or ``None`` where it has none (no training split)."""
    try:
        judged = {r.query_id for r in ctx.source.qrels()}
        return [q for q in ctx.source.queries() if q.query_id in judged] or None
    except (KeyError, ValueError, FileNotFoundError):
        return None


class FusionStage(Stage):
    """``[fusion]``: every hybrid of the experiment, each made as soon as its runs exist."""

    name = "fusion"
    settings_class = FusionSettings

    def tags(self, s: FusionSettings) -> list[str]:
        """The hybrids (with ``optional``, the graph leaves out those whose runs the plan does not make: :meth:`node`)."""
        return s.tags

    def resolved(self, s: FusionSettings) -> dict[str, Any]:
        """The hybrids as written in a configuration (a tag, or a table where one sets its own method or weights)."""
        return {"runs": [h.entry() for h in s.hybrids], "method": s.method, "norm": s.norm, "step": s.step,
                "measure": s.measure, "optional": s.optional, "zero_shot": s.zero_shot}

    def transformer(self, ranker, folder):
        """Its parts' transformers fused with the method and weights the run tuned (its result); a fusion whose
        settings differ from the one the folder made is refused (those weights are not its)."""
        from irglow.runs.pt import Fusion

        info = folder.result(ranker, checked=False)  # compared below, naming the settings that differ
        if info is None:
            raise ValueError(f"{ranker.tag}: the run in {folder.out} made no such fusion (its weights are tuned there)")
        # the fusion as the folder's [fusion] binds it, never the recorded configuration's raw table
        made = next((h for h in folder.bound("fusion").hybrids if h.tag == ranker.tag), None)
        if made is not None and not made.same_fusion(ranker):
            raise ValueError(f"{ranker.tag}: the run in {folder.out} fused it with {made.settings_text()} "
                             f"({info.method}, weights {info.weights}), not {ranker.settings_text()}: run "
                             f"an experiment with this fusion")
        return Fusion(*(folder.build(p) for p in ranker.rankers), method=info.method, norm=info.norm or FUSION_NORM,
                      weights=info.weights, depth=folder.lexical.depth)

    def node(self, tag, s: FusionSettings, node_of):
        """``Fusion(its parts' nodes, its own settings)``; ``all``, whose parts are known once the other runs exist,
        a run of its own (its unit reads every run not made from it).  A part the plan does not make stops binding,
        naming every missing part — or, with ``optional``, leaves this hybrid out (``None``)."""
        hybrid = next(h for h in s.hybrids if h.tag == tag)
        if hybrid.every:
            return hybrid
        parts, missing, runs = [], [], ()
        for p in hybrid.part_tags:
            try:
                parts.append(node_of(p))
            except UnmadeRun as e:
                if e.tag != p:  # a run further down a part's own parts: that part's error
                    raise
                missing.append(p)
                runs = e.runs
        if missing and s.optional:
            log.warning("fusion: %s left out: this configuration does not produce %s (fusion.optional)", tag, missing)
            return None
        if missing:
            raise ValueError(f"fusion.runs: {tag} needs runs this configuration does not produce: {missing}; its runs: "
                             f"{', '.join(runs)}")
        return Fusion(parts, hybrid.method, hybrid.norm, hybrid.weights)

    def bind(self, ranker, s: FusionSettings, bind_part):
        """``Fusion(its parts' nodes, its own settings)`` (its method, normalisation and weights checked as a
        ``fusion.runs`` table's); ``all``, whose parts are known once the other runs exist, as it is."""
        Fusion.of(ranker.entry(), f"fusion {ranker.tag}")
        if ranker.every:
            return ranker
        return Fusion([bind_part(p) for p in ranker.rankers], ranker.method, ranker.norm, ranker.weights)

    def with_nodes(self, s: FusionSettings, nodes) -> FusionSettings:
        """Its hybrids: its nodes."""
        return dataclasses.replace(s, hybrids=tuple(nodes))

    def run_of(self, ctx, tag, query_set):
        """A hybrid whose weights are not tuned (fixed, reciprocal-rank), of parts that each search any query: the
        fusion of its parts' runs of the queries asked for, as its test run fuses theirs (a tuned one gives its
        cross-fitted held-out run instead, and no training queries' run)."""
        hybrid = next((h for h in ctx.settings.hybrids if h.tag == tag), None)
        if hybrid is None or hybrid.every or hybrid.tuned(ctx.settings.method) or \
                not all(map(ctx.runs.searchable, hybrid.part_tags)):
            return None
        parts = list(hybrid.part_tags)
        return lambda queries: fuse_entry(
            dataclasses.replace(ctx, runs=Runs({p: ctx.runs.of_training_queries(p, queries) for p in parts})),
            parts, {}, hybrid)[0]

    def units(self, node, ctx) -> list[Unit]:
        """One unit per hybrid, reading its parts (the pipeline runs it once they exist; ``all`` once every run not
        made from it does: its parts are known then, among ``ctx.among``)."""
        fs, tag, every = ctx.settings, node.tag, node.every

        def parts() -> list[str]:
            return self.all_parts(ctx) if every else list(node.part_tags)

        def cut() -> dict[str, int]:  # the re-ranked parts and the depth of their re-ranked block
            fused = set(parts())
            return {p.tag: p.depth for p in (ctx.among if every else node.rankers)
                    if isinstance(p, Rerank) and p.tag in fused}

        # another hybrid tunes on this one's run of its tuning queries, unless this one ranks any query as its parts
        # do (its searcher: then it searches the queries it wants, as of a Lucene run)
        held_out_too = ctx.reads_held_out(tag) and not ctx.runs.searchable(tag)

        def settings() -> dict[str, Any]:
            return {"parts": parts(), "method": fs.method, "norm": fs.norm, "step": fs.step, "measure": fs.measure,
                    "cut": cut(), "zero_shot": ctx.zero_shot and fs.zero_shot, **node.options(),
                    **({"held_out": True} if held_out_too else {})}

        def produce():
            run, info, held = fuse_entry(ctx, parts(), cut(), node, held_out_too)
            run.write(ctx.out / f"{tag}.run")
            log.info("%s: %s", tag, info)
            written = dict([held_out(tag).write(ctx.out, held)]) if held is not None else {}
            return Produced({tag: run, **written}, FusionResult.of(tag, info, fs.measure))

        return [Unit(unit_name(self.name, tag), settings, lambda: ctx.runs.of([*parts(), *map(held_out, parts())]),
                     produce, (tag,), loads={})]

    @staticmethod
    def all_parts(ctx) -> list[str]:
        """What ``all`` fuses: every run that can be tuned on held-out training queries — the lexical runs and
        every model run whose stage wrote its held-out run (zero-shot: of the training collection, the weights
        carried over).  Every run where fusion is reciprocal-rank (``fusion.zero_shot = "rrf"``), or where no
        model run has a held-out run (models reused without their held-out queries): an ``all`` of the lexical
        runs alone would leave the models out.  Never the other hybrids."""
        hybrids, runs = set(ctx.settings.tags), ctx.runs
        every = [t for t in runs if t not in hybrids]
        tunable = [t for t in every if runs.searchable(t) or runs.held_out(t) is not None]
        if ctx.zero_shot and (ctx.settings.zero_shot == "rrf" or
                              (len(tunable) < len(every) and all(runs.searchable(t) for t in tunable))):
            return every
        return tunable
