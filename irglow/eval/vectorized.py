"""trec_eval's common measures computed with numpy over a columnar run, for evaluation at MS MARCO size.

ir_measures hands each provider the run as Python dicts, and pytrec_eval copies them again into C: at
7,000 queries × 1,000 documents that is most of an evaluation's time and memory.  Here a run stays the
arrays it was read into (:class:`~irglow.runs.columns.Columns`): every line gets its judgment by one
vectorized lookup, and each measure is a few masked sums per query (``np.bincount``), added in rank order
with trec_eval's own arithmetic (``gain / log2(rank + 1)``, ``rel_so_far / rank``), so a value is the one
pytrec_eval gives, not merely close to it.

Only measures whose definition is pinned here are computed this way, with ir_measures' default parameters:
nDCG and nDCG@k, AP and AP@k, R@k, P@k, RR and RR@k, Success@k, Judged@k and irglow's NCG / NCG@k.
Everything else (other parameters, bpref, infAP, ERR …) goes to ir_measures as before
(:func:`irglow.eval.measures.per_query` splits the measures).  ``tests/unit/test_evaluation_differential.py``
checks every value against ir_measures on generated runs and qrels (ties, negative labels, unjudged
queries, empty lists).

Conventions, as trec_eval and :mod:`irglow.eval.measures` have them: a label ≥ 1 is relevant (``rel=1``);
a negative label is "in the pool, not judged": it counts for Judged@k only; gains are the labels
themselves; Judged@k divides by ``min(k, documents the query has)`` (ir_measures' judgment rate).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from irglow.data.records import Qrel
from irglow.data.trec import pooled_label  # a negative label of any size, as int64 holds it
from irglow.runs.columns import Columns

# name → does the measure need a cutoff here (P@k, R@k … are only defined with one in trec_eval's names)
_NAMES = {"nDCG": False, "AP": False, "RR": False, "NCG": False, "R": True, "P": True, "Success": True,
          "Judged": True}


def supports(measure) -> bool:
    """Computed here: a name above, a cutoff where it needs one, and every other parameter at its default."""
    name = getattr(measure, "NAME", None)
    if name not in _NAMES:
        return False
    params = dict(measure.params)
    cutoff = params.pop("cutoff", None)
    if _NAMES[name] and cutoff is None:
        return False
    defaults = getattr(measure, "SUPPORTED_PARAMS", {})
    return all(k in defaults and defaults[k].default == v for k, v in params.items())


@dataclass
class Judgments:
    """Qrels as arrays: judgment ``i`` says query ``query_names[query[i]]`` gave ``doc_ids[doc[i]]`` the label
    ``label[i]``, sorted by query and label descending (the ideal ranking's order)."""

    query_names: list[str]
    query: np.ndarray  # int64
    doc_ids: pd.Index  # the judged document ids, distinct
    doc: np.ndarray  # int64
    label: np.ndarray  # int64

    @classmethod
    def of(cls, qrels: Sequence[Qrel]) -> "Judgments":
        """A (query, document) judged twice keeps its last label, as ir_measures' dicts do."""
        frame = pd.DataFrame({"q": [q.query_id for q in qrels], "d": [q.doc_id for q in qrels],
                              "l": np.array([pooled_label(q.relevance) for q in qrels], dtype=np.int64)})
        frame = frame.drop_duplicates(["q", "d"], keep="last")
        q_codes, q_names = pd.factorize(frame["q"], sort=True)
        d_codes, d_ids = pd.factorize(frame["d"])
        label = frame["l"].to_numpy()
        order = np.lexsort((-label, q_codes))
        return cls(list(q_names), q_codes[order].astype(np.int64), pd.Index(d_ids), d_codes[order].astype(np.int64),
                   label[order])

    def rows_of(self, query_names: Sequence[str]) -> np.ndarray:
        """Each of a run's queries as its judged-query number (-1: a query nobody judged)."""
        j_of = {q: i for i, q in enumerate(self.query_names)}
        return np.array([j_of.get(q, -1) for q in query_names], dtype=np.int64)

    def per_query(self, values: np.ndarray) -> np.ndarray:
        """Sum of ``values`` (one per judgment) per judged query."""
        return np.bincount(self.query, weights=values, minlength=len(self.query_names))

    def positions(self) -> np.ndarray:
        """Each judgment's place (0-based) in its query's ideal ranking."""
        starts = np.searchsorted(self.query, np.arange(len(self.query_names)))
        return np.arange(len(self.query)) - starts[self.query]


CHUNK_LINES = 500_000  # run lines scored at once: the temporaries stay a few MB whatever the run's size


def per_query(columns: Columns, judgments: Judgments, measures: Sequence) -> dict[str, dict[str, float]]:
    """``{str(measure): {qid: value}}`` for every query the run and the judgments share (the caller gives the
    other judged queries 0).  ``columns``: each query's documents in trec_eval's order."""
    unsupported = [str(m) for m in measures if not supports(m)]
    if unsupported:
        raise ValueError(f"not computed by the vectorized evaluator: {unsupported}")
    run_to_j = judgments.rows_of(columns.query_names)
    cutoffs = [m.params.get("cutoff") for m in measures]
    ideal = _ideal(judgments, measures, cutoffs)
    judged_doc = judgments.doc_ids.get_indexer(columns.doc_names)  # per distinct run document; -1: never judged
    lookup = _Lookup(judgments)
    counts = np.diff(columns.starts)
    values = {str(m): np.zeros(len(counts)) for m in measures}
    for lo, hi in _query_ranges(columns.starts, CHUNK_LINES):
        part = _Part(columns, lo, hi, None if any(k is None for k in cutoffs) else max(cutoffs))
        label, judged = lookup.labels(run_to_j[lo:hi][part.line_q], judged_doc[columns.docs[part.lines]])
        for m, k in zip(measures, cutoffs):
            values[str(m)][lo:hi] = part.value(m.NAME, k, label, judged, ideal.get(str(m)), run_to_j[lo:hi])
    shared = [i for i in np.flatnonzero(run_to_j >= 0).tolist() if counts[i]]
    names = columns.query_names
    return {m: dict(zip([names[i] for i in shared], v[shared].tolist())) for m, v in values.items()}


def judged_lines(columns: Columns, judgments: Judgments, labelled: bool = False) -> np.ndarray:
    """Whether each line of the run holds a judged document (any label) of its query; ``labelled``: one judged
    with a label ≥ 0 (what ``trec_eval -J`` keeps: a negative label is "in the pool, not judged")."""
    q_of_line = np.repeat(judgments.rows_of(columns.query_names), np.diff(columns.starts))
    label, judged = _Lookup(judgments).labels(q_of_line,
                                              judgments.doc_ids.get_indexer(columns.doc_names)[columns.docs])
    return judged & (label >= 0) if labelled else judged


def _query_ranges(starts: np.ndarray, lines: int) -> list[tuple[int, int]]:
    """Consecutive query ranges of about ``lines`` lines each (a query is never split)."""
    out, lo = [], 0
    n = len(starts) - 1
    while lo < n:
        hi = max(lo + 1, int(np.searchsorted(starts, starts[lo] + lines, side="right")) - 1)
        hi = min(hi, n)
        out.append((lo, hi))
        lo = hi
    return out


def _ideal(judgments: Judgments, measures: Sequence, cutoffs: list) -> dict[str, np.ndarray]:
    """Per judged query, what each measure divides by where it comes from the judgments alone: the ideal
    DCG (nDCG), the ideal gain (NCG), the number of relevant documents (AP, R)."""
    positions = judgments.positions()
    gain = np.where(judgments.label > 0, judgments.label, 0).astype(np.float64)
    num_rel = np.bincount(judgments.query[judgments.label >= 1], minlength=len(judgments.query_names))
    out = {}
    for m, k in zip(measures, cutoffs):
        top = (positions < k) if k is not None else np.ones(len(positions), bool)
        if m.NAME == "nDCG":
            out[str(m)] = judgments.per_query(np.where(top & (gain > 0), gain / np.log2(positions + 2.0), 0.0))
        elif m.NAME == "NCG":
            out[str(m)] = judgments.per_query(np.where(top, gain, 0.0))
        elif m.NAME in ("AP", "R"):
            out[str(m)] = num_rel.astype(np.float64)
    return {m: np.append(v, 0.0) for m, v in out.items()}  # [-1]: a run query nobody judged


class _Part:
    """The lines of queries ``lo`` … ``hi`` of a run that any measure reads (each query's first ``depth``)."""

    def __init__(self, columns: Columns, lo: int, hi: int, depth: int | None):
        counts = np.diff(columns.starts[lo:hi + 1])
        first = int(columns.starts[lo])
        q = np.repeat(np.arange(hi - lo, dtype=np.int64), counts)
        pos = np.arange(len(q), dtype=np.int64) - np.repeat(columns.starts[lo:hi] - first, counts)
        if depth is not None:
            kept = pos < depth
            q, pos = q[kept], pos[kept]
            self.lines = first + np.flatnonzero(kept)
        else:
            self.lines = np.arange(first, first + len(q))
        self.line_q, self.pos, self.counts = q, pos, counts

    def summed(self, values, mask: np.ndarray) -> np.ndarray:
        """Per query, the sum of ``values`` (an array over the lines, or one number) where ``mask`` holds, added
        in rank order."""
        weights = values[mask] if isinstance(values, np.ndarray) else np.full(int(mask.sum()), float(values))
        return np.bincount(self.line_q[mask], weights=weights, minlength=len(self.counts))

    def value(self, name: str, k: int | None, label: np.ndarray, judged: np.ndarray, ideal: np.ndarray | None,
              run_to_j: np.ndarray) -> np.ndarray:
        pos = self.pos
        top = (pos < k) if k is not None else np.ones(len(pos), bool)
        if name in ("nDCG", "NCG"):
            gained = top & (label > 0)
            gain = label.astype(np.float64)
            if name == "nDCG":
                gain = gain / np.log2(pos + 2.0)
            return _ratio(self.summed(gain, gained), ideal[run_to_j])
        relevant = top & (label >= 1)
        if name == "AP":
            hits = np.flatnonzero(relevant)
            hit_q = self.line_q[hits]
            rel_so_far = np.arange(1, len(hits) + 1) - np.searchsorted(hit_q, hit_q)  # 1, 2 … within each query
            precision = np.zeros(len(pos))
            precision[hits] = rel_so_far / (pos[hits] + 1.0)
            return _ratio(self.summed(precision, relevant), ideal[run_to_j])
        if name == "R":
            return _ratio(self.summed(1.0, relevant), ideal[run_to_j])
        if name == "P":
            return self.summed(1.0, relevant) / k
        if name in ("RR", "Success"):
            hits = np.flatnonzero(relevant)
            first_q, first = np.unique(self.line_q[hits], return_index=True)  # a query's first relevant line
            out = np.zeros(len(self.counts))
            out[first_q] = 1.0 / (pos[hits[first]] + 1.0) if name == "RR" else 1.0
            return out
        if name == "Judged":
            return _ratio(self.summed(1.0, top & judged), np.minimum(self.counts, k).astype(np.float64))
        raise ValueError(f"no vectorized {name}")


class _Lookup:
    """Labels of (judged query, judged document) pairs, found by binary search over their sorted keys."""

    def __init__(self, judgments: Judgments):
        self.n_docs = max(len(judgments.doc_ids), 1)
        keys = judgments.query * self.n_docs + judgments.doc
        order = np.argsort(keys, kind="stable")
        self.keys, self.label = keys[order], judgments.label[order]

    def labels(self, j_query: np.ndarray, j_doc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each line's label (0 where unjudged) and whether it is judged at all (any label, negative included)."""
        if not len(self.keys):
            return np.zeros(len(j_doc), np.int64), np.zeros(len(j_doc), bool)
        keys = np.where((j_doc >= 0) & (j_query >= 0), j_query * self.n_docs + j_doc, -1)
        at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        judged = (keys >= 0) & (self.keys[at] == keys)
        return np.where(judged, self.label[at], 0), judged


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is 0 (trec_eval's value for a query with nothing to find)."""
    out = np.zeros(len(numerator))
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out
