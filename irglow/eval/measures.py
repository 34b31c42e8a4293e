"""Measures as ir_measures objects parsed from strings, plus NCG@k registered the ir_measures way.

NCG@k (normalized cumulative gain, as in the GLOW paper) is the gain collected in the top k
divided by the best gain any ranking could collect in its top k: Σ_{i≤k} rel_i / Σ_{i≤k} rel*_i.
Unlike nDCG it ignores the order inside the top k, which is what a first-stage retriever
feeding a re-ranker should be judged on.
"""

from __future__ import annotations

import itertools
import logging
import re
from typing import Iterable, Sequence

import ir_measures
import numpy as np
from ir_measures import Metric
from ir_measures.measures.base import SumAgg
from ir_measures.providers import registry

from irglow.data.records import Qrel
from irglow.data.trec import MAX_LABEL, check_label, pooled_label
from irglow.eval import vectorized
from irglow.runs.columns import Columns, RankedRun
from irglow.runs.trec import Run

from irglow.eval.defaults import DEFAULT_MEASURES  # noqa: E402,F401 (re-exported)
from irglow.utils.forked import forked_map

log = logging.getLogger(__name__)


def _ncg(qrels, run, k: int | None):
    """qrels/run: pandas frames from ir_measures' runtime provider, in any order: the run is put in
    trec_eval's order (score descending, ties by document id descending) here."""
    gains = qrels.assign(relevance=qrels["relevance"].clip(lower=0))
    by_query = {qid: dict(zip(g["doc_id"], g["relevance"])) for qid, g in gains.groupby("query_id")}
    run = run.sort_values(["query_id", "score", "doc_id"], ascending=[True, False, False], kind="stable")
    for qid, ranked in run.groupby("query_id", sort=False):
        judged = by_query.get(qid)
        if judged is None:
            continue
        ideal = sorted(judged.values(), reverse=True)[:k] if k else sorted(judged.values(), reverse=True)
        ideal_gain = float(sum(ideal))
        docs = ranked["doc_id"].tolist()[:k] if k else ranked["doc_id"].tolist()
        gain = float(sum(judged.get(d, 0) for d in docs))
        yield qid, (gain / ideal_gain) if ideal_gain > 0 else 0.0


_base = ir_measures.define(lambda qrels, run: iter(()), name="NCG", support_cutoff=True,
                           pretty_name="Normalized Cumulative Gain",
                           short_desc="gain in the top k over the ideal gain in the top k")


class _NCGMeasure(type(_base)):  # the class ir_measures.define built, so the runtime provider evaluates it
    def runtime_impl(self, qrels, run):
        for qid, value in _ncg(qrels, run, self.params.get("cutoff")):
            yield Metric(qid, self, value)


NCG = _NCGMeasure()
CUSTOM = {"NCG": NCG}


MAX_CUTOFF = 10**9  # pytrec_eval keeps cutoffs in C ints; a larger one overflows into an unreadable error


def parse_measure(text: str):
    """``"nDCG@10"``, ``"R@1000"``, ``"NCG@20"`` … → an ir_measures measure object.  A cutoff must be a
    whole number from 1 to 10^9: ``@0`` would score every run 1.0 (NCG) or abort the process inside
    pytrec_eval (nDCG), and a huge one overflows there.

    Args:
        text: One measure's name as ir_measures spells it (``nDCG@10``, ``P(rel=2)@5``) or ``NCG@k``.
    """
    m = re.fullmatch(r"(\w+)(?:@(\d+))?", text.strip())
    if m and m.group(1) in CUSTOM:
        base = CUSTOM[m.group(1)]
        measure = base @ int(m.group(2)) if m.group(2) else base
    else:
        try:
            measure = ir_measures.parse_measure(text)
            measure.validate_params()  # ir_measures checks a parameter's type only when it computes the measure
        except (ValueError, NameError, SyntaxError, TypeError, AssertionError) as e:
            raise ValueError(f"unknown measure {text!r} ({e}); examples: nDCG@10, RR@10, R@1000, AP, NCG@10"
                             ) from None
    cutoff = measure.params.get("cutoff")
    if measure.NAME == "IPrec":  # its "@" is a recall level
        level = measure.params.get("recall")
        if level is None or isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 <= level <= 1:
            raise ValueError(f"measure {text!r}: IPrec@r takes a recall level r from 0 to 1, e.g. IPrec@0.2")
    elif cutoff is not None and (isinstance(cutoff, bool) or not isinstance(cutoff, int)
                               or not 1 <= cutoff <= MAX_CUTOFF):
        raise ValueError(f"measure {text!r}: the cutoff must be a whole number from 1 to {MAX_CUTOFF:,}, "
                         f"not {cutoff!r}")
    rel = measure.params.get("rel")
    if rel is not None and (isinstance(rel, bool) or not isinstance(rel, int) or rel < 1):
        raise ValueError(f"measure {text!r}: rel must be a whole number >= 1 (the lowest label counted relevant; "
                         f"trec_eval's relevance level through pytrec_eval), not {rel!r}")
    if m and m.group(1) in CUSTOM:
        return measure
    if not computable(measure):
        raise ValueError(f"measure {text!r} is not computed here: irglow takes the measures of trec_eval "
                         "(pytrec_eval), gdeval (ERR@k, nDCG(dcg='exp-log2')@k), the judgment rate (Judged@k), "
                         "RR@k and NCG@k, each with the parameters those programs take")
    return measure


# the ir_measures providers whose values irglow reproduces exactly (each checked by the differential tests)
EXACT_PROVIDERS = ("pytrec_eval", "gdeval", "judged", "msmarco")


def computable(measure) -> bool:
    """Whether irglow computes ``measure`` exactly: irglow's own, or one of :data:`EXACT_PROVIDERS`'."""
    return measure in CUSTOM.values() or any(registry[name].supports(measure) for name in EXACT_PROVIDERS)


def split_measures(text: str) -> list[str]:
    """``"nDCG@10 AP, P(rel=2,judged_only=True)@5"`` → its measures: spaces and commas separate them, except
    inside a measure's parentheses.

    Args:
        text: Measures' names, separated by spaces or commas.
    """
    out, depth, current = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and (ch.isspace() or ch == ","):
            out.append(current)
            current = ""
        else:
            current += ch
    return [t for t in [*out, current] if t]


def parse_measures(texts: Iterable | str) -> list:
    """``"nDCG@10 AP"``, ``["nDCG@10", "AP"]`` or measure objects (passed through) → measure objects, each once:
    a repeated or equivalent spelling (``NDCG@10`` beside ``nDCG@10``, ``MRR@10`` beside ``RR@10``) is the same
    ir_measures measure and is computed once, in the place it first appears (as ir_measures does).

    Args:
        texts: One string of names, a list of names, or measure objects.
    """
    if isinstance(texts, str):
        texts = split_measures(texts)
    out, first = [], {}
    for t in texts:
        if isinstance(t, str):
            measure = parse_measure(t)
        elif hasattr(t, "NAME") and hasattr(t, "params"):  # an ir_measures measure object
            measure = t
        else:
            raise ValueError(f"measures: {t!r} is not a measure; name each as a string, e.g. [\"AP\", \"nDCG@10\"]")
        if str(measure) in first:
            log.info("measures: %s is %s again (given as %s); computed once", t, measure, first[str(measure)])
            continue
        first[str(measure)] = t
        out.append(measure)
    return out


def per_query(measures: Sequence, qrels: list[Qrel], run: Run, parallel: bool = True) -> dict[str, dict[str, float]]:
    """``{str(measure): {qid: value}}`` over every judged query; a query the run misses scores 0
    (like ``trec_eval -c``), so a system cannot gain by returning nothing for hard queries.

    The common measures are computed on the run's columns (:mod:`irglow.eval.vectorized`, the values
    pytrec_eval gives, at a fraction of its cost); any other goes to ir_measures.

    Args:
        measures: Measure objects (:func:`parse_measures`).
        qrels: The judgments; every judged query is scored.
        run: The run.
        parallel: Whether a large run is evaluated in worker processes.
    """
    qids = sorted({q.query_id for q in qrels})
    for q in qrels:  # qrels from Python or ir_datasets, not only from a file (read_qrels checks those by line)
        check_label(q.relevance, f"query {q.query_id}, document {q.doc_id}: ")
    if any(q.relevance < -MAX_LABEL for q in qrels):
        qrels = [q if q.relevance >= -MAX_LABEL else q._replace(relevance=pooled_label(q.relevance)) for q in qrels]
    # a query the run misses, as ``trec_eval -c`` scores it: NumQ counts it and NumRel its relevant documents (both
    # follow the judgments alone); every other measure is 0
    out: dict[str, dict[str, float]] = {str(m): missed_values(m, qrels, qids) for m in measures}
    if not len(run):
        return out
    fast = [m for m in measures if vectorized.supports(m)]
    rest = [m for m in measures if not vectorized.supports(m)]
    if fast:
        columns = run.as_columns() if isinstance(run, RankedRun) else Columns.from_run(run)
        for measure, values in vectorized.per_query(columns, vectorized.Judgments.of(qrels), fast).items():
            out[measure].update(values)
    if rest:
        # ir_measures routes each measure to a provider, and they break score ties differently (RR@k goes
        # to the msmarco provider, which does not use trec_eval's doc-id-descending order).  Rank-valued
        # scores in the Run's (trec_eval) order make every provider see one and the same ranking.
        ranked = run if isinstance(run, RankedRun) else RankedRun.from_run(run)
        judged: dict[str, list] = {}
        for q in qrels:
            judged.setdefault(q.query_id, []).append(q)
        # every query is scored on its own, so a large run is scored a part of the queries at a time (with
        # those queries' judgments): the dicts ir_measures reads never exist for the whole run at once, and
        # the parts of a columnar run go to one process per core
        for measure, qid, value in _scored_parts(ranked, rest, judged, parallel):
            if qid in out[measure]:
                out[measure][qid] = value
    return out


def missed_values(measure, qrels: list[Qrel], qids: list[str]) -> dict[str, float]:
    """``{qid: value}`` of ``measure`` for a judged query the run does not rank (``trec_eval -c``): 1 for NumQ, the
    relevant judgments (label >= the measure's ``rel``) for NumRel, else 0.

    Args:
        measure: A measure object.
        qrels: The judgments.
        qids: The queries the run misses.
    """
    if measure.NAME == "NumQ":
        return dict.fromkeys(qids, 1.0)
    out = dict.fromkeys(qids, 0.0)
    if measure.NAME == "NumRel":
        level = measure.params.get("rel", 1)
        for q in qrels:
            if q.relevance >= level:
                out[q.query_id] += 1.0
    return out


PART_LINES = 500_000  # lines of a run scored at once
PARALLEL_FROM = 1_000_000  # a columnar run this long is scored on every core


def _score_part(part: dict, measures: list, judged: dict) -> list[tuple[str, str, float]]:
    # a query the run holds with no document is a query it misses (0, as in a run file, which cannot hold one):
    # ir_measures' judgment rate divides by the list's length and stops on it
    part = {qid: docs for qid, docs in part.items() if docs}
    part_qrels = [q for qid in part for q in judged[qid]]
    # trec_eval reads a negative label as "in the pool, not judged" (form_res_rels.c: RELVALUE_UNJUDGED): it is
    # never relevant, -J drops it like an unjudged document, and only infAP tells it from a document outside the
    # pool.  So infAP (and the judgment rate) is given the negative labels and every other measure the others,
    # which is the same for them.  A query whose every label is negative is given to no measure: trec_eval sizes
    # its label counts by the largest label and reads past them (pytrec_eval corrupts memory, found by
    # tests/unit/test_evaluation_differential.py); it scores as a judged query with no judgment, 0.
    scored_qrels = [q for q in part_qrels if q.relevance >= 0]
    with_labels = {q.query_id for q in scored_qrels}
    pooled_qrels = [q for q in part_qrels if q.query_id in with_labels]
    longest = max((len(d) for d in part.values()), default=0)
    # a query judged with negative labels only is retrieved all the same: NumRet counts its documents, as trec_eval
    # does (every other count and measure is 0, or the judgment rate's, computed on ``part_qrels`` below)
    out = [(str(m), qid, float(len(docs))) for m in measures if m.NAME == "NumRet" and m.params.get("rel") is None
           for qid, docs in part.items() if qid not in with_labels]
    for group, depth in _by_depth(measures, longest):
        families: dict[tuple, list] = {}
        for m in group:
            given = "part" if m.NAME == "Judged" else "pooled" if m.NAME == "infAP" else "scored"
            families.setdefault((given, _evaluator_key(m)), []).append(m)
        for (given, _), family in families.items():
            qrels = {"part": part_qrels, "pooled": pooled_qrels, "scored": scored_qrels}[given]
            out += _iter_calc(family, qrels, part, depth)
    return out


def _evaluator_key(measure) -> tuple:
    """The parameters that give a measure a pytrec_eval evaluator of its own (all but the cutoff)."""
    return tuple(sorted((k, repr(v)) for k, v in measure.params.items() if k != "cutoff"))


_QUERY_NUMBERS = itertools.count(1)


def _iter_calc(measures: list, qrels: list[Qrel], part: dict, depth: int | None) -> list[tuple[str, str, float]]:
    """ir_measures' values of ``measures`` sharing one evaluator, each query's ranking cut at ``depth``.

    The queries are given as numbers never used before in this process (their ids back after): gdeval.pl takes
    numeric topic ids only, and trec_eval keeps the last query's judged ranking in a static cache keyed by the
    query id alone (form_res_rels.c), so pytrec_eval's evaluators for other parameters (``judged_only``, ``rel``)
    run on the same ids can be handed each other's rankings (found by tests/unit/test_measure_differential.py:
    NumRet counted the -J ranking)."""
    numbers = {qid: str(next(_QUERY_NUMBERS)) for qid in part}
    names = {n: qid for qid, n in numbers.items()}
    view = {numbers[q]: (d if depth is None else dict(itertools.islice(d.items(), depth))) for q, d in part.items()}
    given = [Qrel(numbers[q.query_id], q.doc_id, q.relevance) for q in qrels]
    return [(str(m.measure), names[m.query_id], float(m.value)) for m in ir_measures.iter_calc(measures, given, view)]


def _score_chunk(shared: tuple, chunk: list[int]) -> list[tuple[str, str, float]]:
    columns, measures, judged = shared
    return _score_part(columns.dicts(chunk), measures, judged)


def _scored_parts(ranked: RankedRun, measures: list, judged: dict, parallel: bool):
    """``parallel``: a long columnar run's parts on one process per core (``False`` where the caller already
    gives each core a run of its own)."""
    import os

    columns = ranked.columns if ranked.columnar else None
    workers = os.cpu_count() or 1
    if columns is None or not parallel or workers < 2 or len(columns.docs) < PARALLEL_FROM:
        for part in ranked.parts(set(judged), PART_LINES):
            yield from _score_part(part, measures, judged)
        return

    chunks = columns.chunks(set(judged), PART_LINES // 2)
    for scored in forked_map(_score_chunk, (columns, measures, judged), chunks, workers, ordered=False):
        yield from scored


# measures whose value at cutoff k depends on the top k documents only (trec_eval's *_cut, ir_measures'
# Judged@k, irglow's NCG@k): they are computed on each ranking's top k, which at MS MARCO depth (1,000
# per query) saves most of the evaluation and changes no value (tested)
TOP_K_ONLY = {"nDCG", "RR", "P", "R", "AP", "Judged", "NCG", "Success", "Rprec_cut"}


def _by_depth(measures: Sequence, longest: int | None = None) -> list[tuple[list, int | None]]:
    """Measures grouped by how deep a ranking they read: one group per cutoff of the top-k-only measures,
    and ``None`` (the whole ranking) for the rest and for cutoffs at least as deep as the longest ranking."""
    groups: dict[int | None, list] = {}
    for m in measures:
        # judged_only=True drops unjudged documents before the cutoff: its top k may lie anywhere in the ranking
        k = m.params.get("cutoff") if m.NAME in TOP_K_ONLY and not m.params.get("judged_only") else None
        groups.setdefault(None if k is None or (longest is not None and k >= longest) else k, []).append(m)
    return [(g, k) for k, g in sorted(groups.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))]


def summed(measure) -> bool:
    """Whether trec_eval (and ir_measures) sum a measure over the queries instead of averaging it: the counts
    NumQ, NumRet, NumRel and NumRelRet.

    Args:
        measure: A measure object.
    """
    return isinstance(measure.aggregator(), SumAgg)


def summary(measure, values: Sequence[float]) -> float:
    """A measure's value over the queries, as trec_eval reports it: the sum of a count, the mean of the rest.

    Args:
        measure: A measure object.
        values: Its per-query values.
    """
    if not len(values):
        return float("nan")
    total = float(np.sum(values))
    return total if summed(measure) else total / len(values)


def aggregate(measures: Sequence, qrels: list[Qrel], run: Run) -> dict[str, float]:
    """Each measure's mean over the judged queries (counts summed, as trec_eval does), by the measure's name.

    Args:
        measures: Measure objects (:func:`parse_measures`).
        qrels: The judgments; every judged query counts (one the run misses scores 0).
        run: The run (:class:`~irglow.runs.trec.Run`).
    """
    by_name = {str(m): m for m in measures}
    return {m: summary(by_name[m], list(v.values())) for m, v in per_query(measures, qrels, run).items()}
