"""What a pipeline writes beside its runs for a person to read: the stages' report, the settings note, the
results page and the diagnostic plots."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Mapping

import irglow.stages  # noqa: F401 - every stage's Result kinds registered, a plugin's too (read_results)
from irglow.hybrid import FusionResult
from irglow.models.rerank.stage import RerankResult
from irglow.plan import Plan
from irglow.rankers import Fusion, Rerank
from irglow.preparation import Prepared
from irglow.runs.trec import Run
from irglow.stage import ModelsResult, Result, result_of
from irglow.eval.plots import plot_per_query, plot_training_curves
from irglow.eval.report import report_data, write_report
from irglow.models.checkpoints import training_summary
from irglow.models.explain import glow_weights, report_analysis, twbert_weights
from irglow.models.source import used_models

log = logging.getLogger(__name__)


def diagnostic_plots(cmp, out: Path, results: Mapping[str, Result]) -> list[str]:
    """``per-query.png`` (each system's per-query difference to the baseline, first measure) and
    ``training-curves.png`` (loss and validation per step of every model the run's units used: ``results``)."""
    made = [plot_per_query(cmp, str(cmp.means.columns[0]), out / "per-query.png")]
    curves = {}
    for name, folder in used_models(results).items():
        f = folder / "training.json"
        if f.is_file():
            curves[name] = json.loads(f.read_text()).get("state", {}).get("history", [])
    made.append(plot_training_curves(curves, out / "training-curves.png"))
    for name in ("per-query.png", "training-curves.png"):  # an earlier experiment's plot would pass for this one's
        if all(p is None or p.name != name for p in made):
            (out / name).unlink(missing_ok=True)
    return [p.name for p in made if p is not None]


def read_results(folder: Path) -> dict[str, Result]:
    """What each unit of a finished run folder's pipeline did (the manifest's ``results``), as typed results: every
    stage's module is loaded (:mod:`irglow.stages`, plugins too), so each result's class has registered its kind."""
    manifest = Path(folder) / "manifest.json"
    recorded = json.loads(manifest.read_text()).get("results", {}) if manifest.is_file() else {}
    return {name: r for name, r in ((n, result_of(v)) for n, v in recorded.items()) if r is not None}


def stage_report(results: Mapping[str, Result]) -> str:
    """Markdown lines on what the model stages did: each model's training and validation queries, optimizer
    steps, validation (start → kept, at which step) and training time, fusion weights and throughput, from the
    results of this run's units."""
    def num(x, fmt="{:.4f}"):
        return "–" if x is None or x != x else fmt.format(x)

    def mixed(t) -> str:  # kept a mix with the starting checkpoint (irglow.models.mixing), or a length chosen by CV
        if t.get("folds"):
            return f" ({t['folds']}-fold cross-validation; then trained on every query)"
        return f", mixed with the checkpoint at m {t['mix']:.2f}" if t.get("mix") is not None else ""

    models = {n: f for r in results.values() if isinstance(r, ModelsResult) for n, f in r.models.items()}
    models.update({r.run: r.model for r in results.values() if isinstance(r, RerankResult)})
    rows = []
    for name, model_dir in models.items():
        t = training_summary(model_dir)
        rows.append(f"| {name} | {num(t['train_queries'], '{}')} | {num(t['val_queries'], '{}')} | "
                    f"{num(t['steps'], '{}')} | {num(t['start'])} | {num(t['validation'])} | "
                    f"{num(t['step'], '{}')}{mixed(t)} | {num(t['seconds'], '{:.0f}')} |")
    lines = []
    pairs = {r.run: r.pairs_per_s for r in results.values() if isinstance(r, RerankResult)}
    encoded = {n: v for r in results.values() if isinstance(r, ModelsResult) for n, v in r.encode_docs_per_s.items()}
    for section, rates, unit in (("glow", encoded, "documents encoded/s"), ("rerank", pairs, "query-document pairs/s")):
        measured = {n: r for n, r in rates.items() if r == r}  # NaN: found made (a corpus encoding), not measured
        if measured:
            lines.append(f"- {section} throughput ({unit}): " + ", ".join(f"{n} {r:.1f}" for n, r in measured.items()))
        elif rates:
            lines.append(f"- {section} throughput: not measured (the corpus encodings were found, not made)")
    lines += [fusion_line(r) for r in results.values() if isinstance(r, FusionResult)]
    if rows:
        rows = ["| model | training queries | validation queries | optimizer steps | validation nDCG@10 at step 0 | "
                "kept | at step | training s |", "|:--|--:|--:|--:|--:|--:|--:|--:|", *rows]
    return "\n".join(rows + ([""] if rows and lines else []) + lines)


def fusion_line(f: FusionResult) -> str:
    """One hybrid as the report says it: method, weights per part, and where they were tuned (or why not)."""
    tuned = (f" (tuned on {f.tuning_queries} {f.tuning_set or 'held-out training'} queries, {f.measure} "
             f"{f.tuning_score:.4f}" + (f"; carried from {f.carried_from}, nothing of this collection's judgments "
                                       f"read" if f.carried_from else "") + ")" if f.tuning_queries else
             f" ({f.why})" if f.why else "")
    weights = ", ".join(f"{n} {w:.2f}" for n, w in zip(f.parts, f.weights))
    return f"- {f.tag}: {f.method} fusion, weights {weights}{tuned}"


def settings_note(plan: Plan, p: Prepared, tags: list[str]) -> str:
    """What the caption owes the reader about parameters: each multi-field system's field weights (tuned for it
    on the training queries, or as configured), and any system scoring BM25 with other k1/b than [lexical]."""
    lx = p.lexical
    parts = []
    for system, weights in p.field_weights.items():
        how = "tuned for it on the training queries" if lx.tune_bm25f else "as configured"
        parts.append(f"`{system}` {weights or '1.0 per field'} ({how})")
    text = f"Field weights: {'; '.join(parts)}.\n" if parts else ""
    for stage, bound in plan.stages:
        values = stage.bm25_parameters(bound)
        if values is not None:
            if (values["k1"], values["b"]) != (lx.k1, lx.b):
                runs = [t for t in plan.written[stage.name] if t in tags]
                text += (f"{', '.join(f'`{t}`' for t in runs)} score BM25 with k1 {values['k1']:g}, b {values['b']:g} "
                         f"([{stage.name}.model]), not [lexical]'s k1 {lx.k1:g}, b {lx.b:g}.\n")
    return text + cut_fusions_note(plan, tags)


def cut_fusions_note(plan: Plan, tags: list[str]) -> str:
    """The hybrids that fuse a re-ranking's re-ranked block alone (its top ``depth``, not the first stage's tail
    below it, which the re-ranker never scored): a fusion of two re-rankings ranks no deeper than their blocks."""
    lines = []
    for node in plan.graph.values():
        if not isinstance(node, Fusion) or node.tag not in tags:
            continue
        cut = {p.tag: p.depth for p in node.parts if isinstance(p, Rerank) and p.depth is not None}
        if cut:
            blocks = ", ".join(f"`{t}` (top {d})" for t, d in cut.items())
            deepest = (f"; it ranks at most {sum(cut.values())} documents per query" if len(cut) == len(node.parts)
                       else "")
            lines.append(f"`{node.tag}` fuses the re-ranked block of {blocks} only, not the first stage below "
                         f"it{deepest}.")
    return "".join(line + "\n" for line in lines)


def write_results_page(out: Path, cmp, runs: dict[str, Run], qrels, ctx, results: Mapping[str, Result], title: str,
                       clusters: int | None = None, notes: list[str] | None = None) -> Path:
    """``report.html`` beside the tables: the results browser (:mod:`irglow.eval.report`), with TW-BERT's
    learned term weights for its runs and the word weights GLOW's attention used, where those stages ran, the
    index's analysis for highlighting, and ``clusters`` topic clusters of the queries ([output] clusters)."""
    weights = {}

    def models_of(stage: str) -> dict[str, str]:  # {model: folder} of a stage's units (one per run)
        return {n: f for name, r in results.items() if isinstance(r, ModelsResult)
                and name.partition(":")[0] == stage for n, f in r.models.items()}

    model = models_of("twbert").get("twbert")
    if model and Path(model).is_dir() and any(t in runs for t in ("twbert", "twbert-rm3")):
        w = twbert_weights(model, ctx.index, ctx.test_queries)
        weights = {t: w for t in ("twbert", "twbert-rm3") if t in runs}
    for variant, folder in models_of("glow").items():
        if variant in runs and variant != "bert" and Path(folder).is_dir():
            weights[variant] = glow_weights(folder, ctx.index, ctx.stats, ctx.test_queries)
    texts = {q.query_id: q.text for q in ctx.test_queries}
    judged = {q.query_id for q in qrels}
    extras = report_analysis(ctx.index, ctx.stats, {q: t for q, t in texts.items() if q in judged}, clusters=clusters,
                             k1=ctx.lexical.k1, b=ctx.lexical.b)
    data = report_data(cmp, runs, qrels, texts, ctx.collection, term_weights=weights, title=f"irglow: {title}",
                       notes=notes, **extras)
    return write_report(out / "report.html", data)
