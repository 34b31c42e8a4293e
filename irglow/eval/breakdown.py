"""Why a run wins: its per-query difference to the baseline broken down by what the queries are like.

The question researchers script by hand after every table — does the new model help short queries, hard ones,
rare-term ones, one topic? — answered from the per-query values ``compare`` already holds.  Each characteristic
splits the judged queries into a few ordered groups; each group gets its mean Δ, a 95% Student's t interval of
that mean (per group, not adjusted for the number of groups: a guide to where to look, not a test), and its
wins, losses and ties.

Numeric characteristics are cut at quantiles of their own values with ties kept in one group (a quarter of the
queries each where the values allow), so a group never splits queries of equal value and the labels give the
values each group holds ("3–4", "0.00–0.21").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from scipy import stats as st

TIE = 1e-12  # |Δ| at or below this is a tie (the page's own rule)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)  # the page's word: letters and digits (\p{L}\p{N}+)
NO_VALUE = "no value"


@dataclass
class Characteristic:
    """One way of grouping queries: ordered group labels and each query's group (an index into ``labels``)."""

    key: str
    name: str
    description: str
    labels: list[str]
    of: dict[str, int] = field(default_factory=dict)
    measure: str | None = None  # set where the grouping depends on a measure (the baseline's difficulty)

    def header(self) -> dict:
        return {"key": self.key, "name": self.name, "description": self.description, "labels": self.labels,
                "measure": self.measure}


def quantile_groups(values: Mapping[str, float | None], groups: int = 4, digits: int = 0) -> tuple[list[str],
                                                                                                 dict[str, int]]:
    """Up to ``groups`` ordered groups of about equal size over ``values``, equal values always together (each
    cut at the boundary between distinct values nearest its quantile); a query whose value is ``None`` goes to
    a last group, ``"no value"``.  Labels give the smallest and largest
    value a group holds (``digits`` decimals)."""
    known = sorted((v, q) for q, v in values.items() if v is not None and not (isinstance(v, float) and math.isnan(v)))
    distinct = sorted({v for v, _ in known})
    count = {v: 0 for v in distinct}
    for v, _ in known:
        count[v] += 1
    # each quantile's cut goes to the boundary between distinct values nearest it (a block of equal values, such
    # as nDCG@10 = 1 on a third of the queries, then ends a group instead of swallowing the next quantile)
    below, seen = [], 0
    for v in distinct:
        seen += count[v]
        below.append(seen)  # queries with a value <= v
    n = len(known)
    ends = sorted({min(range(len(distinct)), key=lambda j: (abs(below[j] - n * i / groups), j))
                   for i in range(1, groups)} - {len(distinct) - 1}) if distinct else []
    cuts, start = [], 0
    for j in [*ends, len(distinct) - 1] if distinct else []:
        cuts.append(distinct[start:j + 1])
        start = j + 1
    cuts = [c for c in cuts if c]
    labels, group_of_value = [], {}
    for i, c in enumerate(cuts):
        low, high = f"{c[0]:.{digits}f}", f"{c[-1]:.{digits}f}"
        labels.append(low if low == high else f"{low}–{high}")
        group_of_value.update({v: i for v in c})
    of = {q: group_of_value[v] for v, q in known}
    missing = [q for q in values if q not in of]
    if missing:
        labels.append(NO_VALUE)
        of.update({q: len(labels) - 1 for q in missing})
    return labels, of


def labelled_groups(values: Mapping[str, str]) -> tuple[list[str], dict[str, int]]:
    """Groups named by their labels (embedding clusters), largest first."""
    sizes: dict[str, int] = {}
    for v in values.values():
        sizes[v] = sizes.get(v, 0) + 1
    labels = sorted(sizes, key=lambda v: (-sizes[v], v))
    index = {v: i for i, v in enumerate(labels)}
    return labels, {q: index[v] for q, v in values.items()}


def word_count(text: str) -> int:
    return len(_WORD.findall(text))


def characteristics(qids: Sequence[str], queries: Mapping[str, str], relevant: Mapping[str, int],
                    baseline_values: Mapping[str, Mapping[str, float | None]], baseline: str,
                    mean_idf: Mapping[str, float | None] | None = None,
                    clusters: Mapping[str, str] | None = None, cluster_source: str = "") -> list[Characteristic]:
    """The query characteristics the page breaks Δ down by: query length, judged relevant documents, the
    baseline's own score on each measure (difficulty), the mean IDF of the query's analyzed terms (with the
    index's statistics) and topic clusters of the queries' embeddings (where given)."""
    out = []
    if queries:
        labels, of = quantile_groups({q: word_count(queries.get(q, "")) for q in qids})
        out.append(Characteristic("length", "query length", "words in the query text (letters and digits)",
                                  labels, of))
    labels, of = quantile_groups({q: relevant.get(q, 0) for q in qids})
    out.append(Characteristic("relevant", "relevant documents judged", "documents judged relevant (grade > 0) "
                              "for the query", labels, of))
    for measure, values in baseline_values.items():
        labels, of = quantile_groups({q: values.get(q) for q in qids}, digits=2)
        out.append(Characteristic(f"difficulty:{measure}", f"{baseline}'s {measure}", f"the baseline's own "
                                  f"{measure} on the query, in quantiles (the hardest queries first)", labels, of,
                                  measure=measure))
    if mean_idf is not None:
        labels, of = quantile_groups({q: mean_idf.get(q) for q in qids}, digits=2)
        out.append(Characteristic("idf", "mean IDF of the query terms", "mean BM25 IDF over the query's analyzed "
                                  "terms (Lucene's analyzer, the index's statistics): rare-term queries last; "
                                  "a query left with no terms has no value", labels, of))
    if clusters:
        labels, of = labelled_groups({q: clusters[q] for q in qids if q in clusters})
        out.append(Characteristic("topic", "topic cluster", f"k-means clusters of the queries' embeddings "
                                  f"({cluster_source}), named by their most distinctive words", labels, of))
    return out


def group_rows(deltas: Mapping[str, float], char: Characteristic) -> list[list]:
    """Per group of ``char``: [queries, mean Δ, CI low, CI high, wins, losses, ties]; a 95% Student's t interval
    of the mean (``None`` for a group of one query)."""
    members: list[list[float]] = [[] for _ in char.labels]
    for q, d in deltas.items():
        if q in char.of:
            members[char.of[q]].append(d)
    rows = []
    for values in members:
        n = len(values)
        if n == 0:
            rows.append([0, None, None, None, 0, 0, 0])
            continue
        mean = sum(values) / n
        low = high = None
        if n > 1:
            sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
            half = float(st.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
            low, high = mean - half, mean + half
        rows.append([n, mean, low, high, sum(v > TIE for v in values), sum(v < -TIE for v in values),
                     sum(abs(v) <= TIE for v in values)])
    return rows


def breakdown_tables(per_query: Mapping[str, Mapping[str, Mapping[str, float]]], runs: Sequence[str],
                     measures: Sequence[str], baseline: str, qids: Sequence[str],
                     chars: Sequence[Characteristic]) -> dict[str, dict[str, dict[str, list[list]]]]:
    """run → measure → characteristic → group rows, for every run but the baseline.  A query a run lacks
    scores 0 (as in the comparison); a difficulty grouping is used only with its own measure."""
    out: dict[str, dict[str, dict[str, list[list]]]] = {}
    for run in runs:
        if run == baseline:
            continue
        out[run] = {}
        for m in measures:
            mine, base = per_query.get(run, {}).get(m, {}), per_query.get(baseline, {}).get(m, {})
            deltas = {q: (mine.get(q) or 0.0) - (base.get(q) or 0.0) for q in qids}
            out[run][m] = {c.key: group_rows(deltas, c) for c in chars if c.measure in (None, m)}
    return out
