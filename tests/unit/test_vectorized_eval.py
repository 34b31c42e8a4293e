"""The vectorized evaluator (irglow.eval.vectorized): values worked out by hand, and every supported measure
against ir_measures (pytrec_eval and its other providers) on generated runs, scored a few lines at a time."""

from __future__ import annotations

import math

import ir_measures
import pytest
from hypothesis import given, settings, strategies as st

from irglow.data.records import Qrel
from irglow.eval import vectorized
from irglow.eval.measures import _score_part, parse_measures, per_query
from irglow.runs.columns import Columns
from irglow.runs.trec import Run

QRELS = [Qrel("q1", "d1", 2), Qrel("q1", "d2", 1), Qrel("q1", "d3", 0), Qrel("q1", "d4", 1), Qrel("q1", "d8", -1),
         Qrel("q2", "d9", 1), Qrel("q3", "d1", 0)]
SUPPORTED = "nDCG@3 nDCG AP AP@2 R@2 P@3 RR RR@1 Success@2 Judged@3 NCG@2 NCG"


def scored(run: Run, measures: str, qrels=QRELS) -> dict[str, dict[str, float]]:
    return vectorized.per_query(Columns.from_run(run), vectorized.Judgments.of(qrels), parse_measures(measures))


def test_values_by_hand():
    # q1 ranks d3 (0), d2 (1), d8 (-1: pooled, not judged), d1 (2), d7 (unjudged); R = 3 relevant (d1, d2, d4)
    run = Run({"q1": [("d3", 5.0), ("d2", 4.0), ("d8", 3.0), ("d1", 2.0), ("d7", 1.0)], "q3": [("d1", 1.0)],
               "q9": [("d1", 1.0)]})
    v = scored(run, SUPPORTED)
    assert v["nDCG@3"]["q1"] == pytest.approx((1 / math.log2(3)) / (2 + 1 / math.log2(3) + 1 / 2))
    dcg = 1 / math.log2(3) + 2 / math.log2(5)
    ideal = 2 + 1 / math.log2(3) + 1 / 2
    assert v["nDCG"]["q1"] == pytest.approx(dcg / ideal)
    assert v["AP"]["q1"] == pytest.approx((1 / 2 + 2 / 4) / 3)
    assert v["AP@2"]["q1"] == pytest.approx((1 / 2) / 3)  # map_cut divides by every relevant document
    assert v["R@2"]["q1"] == pytest.approx(1 / 3)
    assert v["P@3"]["q1"] == pytest.approx(1 / 3)
    assert v["RR"]["q1"] == 0.5 and v["RR@1"]["q1"] == 0.0
    assert v["Success@2"]["q1"] == 1.0
    assert v["Judged@3"]["q1"] == 1.0  # d8's -1 counts as judged
    assert v["NCG@2"]["q1"] == pytest.approx(1 / 3) and v["NCG"]["q1"] == pytest.approx(3 / 4)
    # q3 judges nothing relevant: every measure 0 but the judgment rate, over its one document
    assert all(v[m]["q3"] == 0.0 for m in v if m != "Judged@3") and v["Judged@3"]["q3"] == 1.0
    assert "q9" not in v["AP"] and "q2" not in v["AP"]  # unjudged and missing queries are the caller's


def test_only_default_parameters_are_vectorized():
    assert all(vectorized.supports(m) for m in parse_measures(SUPPORTED))
    for text in ["P(rel=2)@3", "nDCG(dcg='exp-log2')@10", "Bpref", "Rprec", "P", "R", "Judged", "infAP", "ERR@10"]:
        assert not vectorized.supports(ir_measures.parse_measure(text)), text
    with pytest.raises(ValueError, match="not computed by the vectorized evaluator"):
        scored(Run({"q1": [("d1", 1.0)]}), "Bpref")


def test_per_query_sends_the_rest_to_ir_measures():
    run = Run({"q1": [("d3", 5.0), ("d2", 4.0), ("d1", 2.0)], "q2": [("d9", 1.0)]})
    v = per_query(parse_measures("AP P(rel=2)@1 Rprec"), QRELS, run)
    assert v["AP"]["q1"] == pytest.approx((1 / 2 + 2 / 3) / 3)
    assert v["P(rel=2)@1"] == {"q1": 0.0, "q2": 0.0, "q3": 0.0}
    assert v["Rprec"]["q2"] == 1.0


DOCS = [f"d{i}" for i in range(12)]


@st.composite
def cases(draw):
    queries = draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), unique=True, min_size=1, max_size=5))
    run = {q: [(d, float(draw(st.integers(0, 4)))) for d in draw(st.lists(st.sampled_from(DOCS), unique=True,
                                                                            max_size=9))] for q in queries}
    judged = draw(st.lists(st.sampled_from(["a", "b", "c", "f"]), unique=True, min_size=1, max_size=4))
    qrels = [Qrel(q, d, label) for q in judged
             for d, label in draw(st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 3), max_size=8)).items()]
    return Run(run), qrels


@settings(max_examples=150, deadline=None, derandomize=True)
@given(cases(), st.sampled_from([1, 2, 5, 10_000]))
def test_agrees_with_ir_measures(case, chunk_lines):
    """Tied scores (integers 0–4), empty lists, labels −1 … 3, queries judged but not run and run but not judged,
    scored a few lines at a time, against ir_measures on the same rank-valued run."""
    run, qrels = case
    if not qrels:
        return
    measures = parse_measures(SUPPORTED)
    old, vectorized.CHUNK_LINES = vectorized.CHUNK_LINES, chunk_lines
    try:
        got = scored(run, SUPPORTED, qrels)
    finally:
        vectorized.CHUNK_LINES = old
    judged: dict[str, list] = {}
    for q in qrels:
        judged.setdefault(q.query_id, []).append(q)
    ranked = {q: {d: float(len(docs) - i) for i, (d, _) in enumerate(docs)} for q, docs in run.ranking.items()
              if q in judged}
    want: dict[str, dict[str, float]] = {str(m): {} for m in measures}
    for m, q, value in _score_part(ranked, measures, judged):
        want[m][q] = value
    for m in want:
        for q in set(got[m]) | set(want[m]):
            assert math.isclose(got[m].get(q, 0.0), want[m].get(q, 0.0), rel_tol=1e-12, abs_tol=1e-12), (m, q)


def test_condensed_lists_of_a_columnar_run(tmp_path):
    """--judged-only on a run read into columns: unjudged lines masked out there (d8, labelled −1, with them, as
    trec_eval -J drops it), the same values as the condensed Run (whose lists are filtered in Python)."""
    from irglow.eval.compare import condensed, evaluate_run
    from irglow.runs.columns import read_ranked

    run = Run({"q1": [("d7", 6.0), ("d3", 5.0), ("d2", 4.0), ("d8", 3.0), ("d1", 2.0)], "q2": [("d5", 1.0)]})
    path = run.write(tmp_path / "a.run")
    columnar = read_ranked(path)
    assert columnar.columnar
    kept = condensed(columnar, QRELS)
    assert kept.columnar and kept.query_ids() == {"q1"}  # q2's only document is unjudged
    assert [d for d, _ in kept.top(10).ranking["q1"]] == ["d3", "d2", "d1"]
    a = evaluate_run(columnar, QRELS, parse_measures("nDCG@3 AP"), judged_only=True).values
    b = evaluate_run(run, QRELS, parse_measures("nDCG@3 AP"), judged_only=True).values
    assert a == b and a["AP'"]["q1"] == pytest.approx((1 / 2 + 2 / 3) / 3)
