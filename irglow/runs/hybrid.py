"""The pipeline's own fusion: any runs of one pipeline — lexical, TW-BERT, dense, re-ranked — fused into a
hybrid, its weights tuned on training queries that *no* fused model trained on.

    [fusion]
    enabled = true
    runs = [["twbert", "glow"], ["twbert", "glow", "monobert"]]   # or "twbert+glow,twbert+glow+monobert"
    method = "wsum"      # wsum (normalised score sums) | rrf
    norm = "min-max"
    step = 0.05          # convex weight grid
    measure = "nDCG@10"  # what the weights maximise on the tuning queries

Each model stage writes, beside its test run, the run of the queries its training held out
(``<out>/tuning/<tag>.run``) when a fusion names it.  The tuning queries are the intersection of those
held-out sets, so the weights are tuned on queries every fused model never saw; lexical runs of the
same queries come from the training collection's index.  Re-ranked runs take part with their re-ranked
block only (the kept-below tail's placeholder scores would stretch min-max).  Zero-shot (models
trained on another collection, so no held-out runs on this one) the hybrid is reciprocal-rank fusion,
which has no weight to tune.  Nothing is ever tuned on the evaluated split.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from irglow.config import as_names, flag
from irglow.runs.fusion import METHODS, NORMS, fuse, fuse_tuned
from irglow.runs.trec import Run

log = logging.getLogger(__name__)

TUNING = "tuning/"  # run tags under this prefix are runs of the tuning (held-out training) queries
SETTINGS = ("enabled", "runs", "method", "norm", "step", "measure")


def components(config: dict[str, Any]) -> list[list[str]]:
    """The configured hybrids, each as its list of run tags."""
    fs = config.get("fusion", {})
    if not flag(config, "fusion"):
        return []
    out = []
    for entry in _entries(fs):
        parts = entry.split("+") if isinstance(entry, str) else list(entry)
        out.append([str(p) for p in parts])
    return out


def _entries(fs: dict[str, Any]):
    """``fusion.runs`` as written: a list, or one ``"a+b,a+b+c"`` string (``--set``, ``FUSE=``)."""
    entries = fs.get("runs", [])
    return as_names(entries) if isinstance(entries, str) else entries


def fused_tags(config: dict[str, Any]) -> list[str]:
    return ["+".join(parts) for parts in components(config)]


def wants_tuning(config: dict[str, Any], tag: str) -> bool:
    """Whether a stage should also write ``tag``'s run of its held-out training queries (a fusion uses it)."""
    return any(tag in parts for parts in components(config))


def check(config: dict[str, Any], produced: list[str]) -> None:
    """Stop before any work on a hybrid of runs the configuration does not produce, or a bad setting."""
    fs = config.get("fusion", {})
    if not flag(config, "fusion"):
        return
    entries = _entries(fs)
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"fusion.runs = {entries!r} must be a non-empty list, e.g. [['twbert', 'glow']]")
    for parts in components(config):
        if len(parts) < 2:
            raise ValueError(f"fusion.runs: {parts} fuses nothing; name two runs or more")
        missing = [p for p in parts if p not in produced]
        if missing:
            raise ValueError(f"fusion.runs: {'+'.join(parts)} needs runs this configuration does not produce: "
                             f"{missing}; its runs: {', '.join(produced)}")
        if "+".join(parts) in produced:
            raise ValueError(f"fusion.runs: {'+'.join(parts)} is already a run of another stage; rename or drop one")
    if fs.get("method", "wsum") not in METHODS or fs.get("norm", "min-max") not in NORMS:
        raise ValueError(f"fusion.method must be one of {METHODS} and fusion.norm one of {NORMS}")
    step = fs.get("step", 0.05)
    if isinstance(step, bool) or not isinstance(step, (int, float)) or not 0 < step <= 0.5:
        raise ValueError(f"fusion.step = {step!r} must be a number in (0, 0.5]")
    from irglow.eval.measures import parse_measures

    parse_measures([fs.get("measure", "nDCG@10")])


def fuse_configured(config: dict[str, Any], runs: dict[str, Run], out: Path, source, zero_shot: bool,
                    lexical_searcher, lexical: set[str], cut: dict[str, int] | None = None
                    ) -> tuple[dict[str, Run], dict]:
    """Every configured hybrid: ``({tag: run}, {tag: how it was fused})``.  ``lexical``: the lexical run tags,
    whose tuning runs ``lexical_searcher(tag)`` searches on the training collection (no model held anything
    out from them); ``cut``: re-ranked tags and their depth."""
    fs = config.get("fusion", {})
    method, norm = fs.get("method", "wsum"), fs.get("norm", "min-max")
    depth = config.get("lexical", {}).get("depth", 1000)
    cut = cut or {}

    def top(run: Run, tag: str) -> Run:
        return Run({q: d[: cut[tag]] for q, d in run.ranking.items()}, run.tag) if tag in cut else run

    produced, info = {}, {}
    for parts in components(config):
        tag = "+".join(parts)
        test = [top(runs[p], p) for p in parts]
        held_out = [runs.get(TUNING + p) for p in parts if TUNING + p in runs]
        models = [p for p in parts if p not in lexical]
        if zero_shot or len(held_out) < len(models) or not held_out:
            why = "zero-shot" if zero_shot else "no held-out runs of " + ", ".join(
                p for p in models if TUNING + p not in runs)
            produced[tag] = fuse(test, "rrf", depth=depth, tag=tag)
            info[tag] = {"method": "rrf", "weights": [1.0] * len(parts), "why": why}
        else:
            qids = set.intersection(*(set(r.ranking) for r in held_out))
            qrels = [r for r in source.qrels() if r.query_id in qids]
            queries = [q for q in source.queries() if q.query_id in qids]
            tune = [top(_restricted(runs[TUNING + p], qids), p) if TUNING + p in runs
                    else lexical_searcher(p).search(queries, tag=p) for p in parts]
            produced[tag], info[tag] = fuse_tuned(test, tune, qrels, method, norm, fs.get("measure", "nDCG@10"),
                                                  fs.get("step", 0.05), depth=depth, tag=tag)
        produced[tag].write(out / f"{tag}.run")
        log.info("%s: %s", tag, info[tag])
    return produced, info


def _restricted(run: Run, qids: set[str]) -> Run:
    return Run({q: d for q, d in run.ranking.items() if q in qids}, run.tag)


def write_tuning_run(out: Path, tag: str, run: Run) -> tuple[str, Run]:
    """``<out>/tuning/<tag>.run``, returned under the tag the stage cache and the fusion step know it by."""
    (Path(out) / TUNING).mkdir(parents=True, exist_ok=True)
    run.write(Path(out) / f"{TUNING}{tag}.run")
    return TUNING + tag, run
