"""Issue 41 item 1: query-performance predictors on hand-built score lists, and the per-query weighted fusion."""

from __future__ import annotations

import math

import pytest

from irglow.runs.qpp import _overlaps, fuse_weighted, nqc, percentile_weights, qpp_weights, spread
from irglow.runs.trec import Run

SCORES = [5.0, 4.0, 3.0, 2.0, 1.0]


def test_predictors_by_hand():
    # NQC, top 3: mean 4, σ = √(2/3) = 0.816497; reference: the list's mean, 3
    assert nqc(SCORES, k=3) == pytest.approx(math.sqrt(2 / 3) / 3)
    assert nqc(SCORES, k=3, reference=-2.0) == pytest.approx(math.sqrt(2 / 3) / 2)
    assert spread(SCORES, k=3) == pytest.approx(5 - 3.5)
    assert nqc([]) == spread([1.0]) == 0.0
    assert nqc([0.0, 0.0]) == 0.0  # a zero reference: no commitment to measure


def test_overlaps_and_percentiles_by_hand():
    # J(a, b) = 1/3, J(a, c) = J(b, c) = 0
    assert _overlaps([["a", "b"], ["a", "c"], ["x", "y"]], k=2) == [[1 / 3, 0.0], [1 / 3, 0.0], [0.0, 0.0]]
    assert percentile_weights({"r": {"q1": 0.1, "q2": 0.5, "q3": 0.5, "q4": 0.9}}) == {
        "r": {"q1": 0.25, "q2": 0.75, "q3": 0.75, "q4": 1.0}}


def test_diverse_weights_let_repeated_runs_share_one_say():
    a = Run({"q": [("d1", 2.0), ("d2", 1.0)]}, "a")
    b = Run({"q": [("d1", 9.0), ("d2", 8.0)]}, "b")  # the same top 2 as a: overlap 1 with a
    c = Run({"q": [("d3", 0.9), ("d4", 0.8)]}, "c")
    assert qpp_weights([a, b, c], [False, False, True], "diverse", k=2) == {"q": [0.5, 0.5, 1.0]}
    with pytest.raises(ValueError, match="distinct tags"):
        qpp_weights([a, a], [False, False])


def test_qpp_weights_follow_each_runs_own_confidence():
    # run x is committed on q1 (its top stands apart) and not on q2; run y the other way round
    x = Run({"q1": [("d1", 10.0)] + [(f"n{i}", 1.0) for i in range(5)], "q2": [(f"m{i}", 1.0) for i in range(6)]}, "x")
    y = Run({"q1": [("d1", 0.5), ("d2", 0.5)], "q2": [("d1", 0.9), ("d2", 0.1)]}, "y")
    w = qpp_weights([x, y], [False, True], "qpp")
    assert w == {"q1": [1.5, 1.0], "q2": [1.0, 1.5]}


def test_weighted_rrf_by_hand():
    a = Run({"q": [("d1", 2.0), ("d2", 1.0)]}, "a")
    b = Run({"q": [("d2", 2.0), ("d1", 1.0)]}, "b")
    fused = fuse_weighted([a, b], {"q": [2.0, 1.0]}, k=60)
    # d1: 2/61 + 1/62, d2: 2/62 + 1/61
    assert fused.ranking["q"] == [("d1", pytest.approx(2 / 61 + 1 / 62)), ("d2", pytest.approx(2 / 62 + 1 / 61))]
    equal = fuse_weighted([a, b], {}, k=60)  # no weights: plain RRF, a tie broken by id descending
    assert [d for d, _ in equal.ranking["q"]] == ["d2", "d1"]


def test_fuse_per_query_on_the_command_line(tmp_path, capsys):
    """``irglow fuse --per-query``: the run fuse_weighted makes with qpp_weights, the weights written beside it."""
    from irglow.cli import main
    from irglow.runs.qpp import looks_dense

    lexical = Run({"q1": [("d1", 12.0), ("d2", 3.0), ("d3", 2.5)], "q2": [("d2", 4.0), ("d1", 3.9), ("d3", 3.8)]},
                  "bm25")
    dense = Run({"q1": [("d3", 0.9), ("d1", 0.2)], "q2": [("d1", 0.8), ("d3", 0.79)]}, "bert")
    assert not looks_dense(lexical) and looks_dense(dense)
    paths = [str(lexical.write(tmp_path / "bm25.run")), str(dense.write(tmp_path / "bert.run"))]
    assert main(["fuse", *paths, "--per-query", "qpp", "-o", str(tmp_path / "out.run")]) == 0
    expected = fuse_weighted([Run.read(p) for p in paths], qpp_weights([lexical, dense], [False, True], "qpp"),
                             tag="out")
    assert Run.read(tmp_path / "out.run").ranking == expected.ranking
    # bm25's NQC is higher on q1 (12 far above the rest) than on q2, and bert's spread too (0.7 against
    # 0.01): each run's more confident query gets 0.5 + 1, the other 0.5 + 1/2
    assert (tmp_path / "out.run.weights.tsv").read_text() == "query\tbm25\tbert\nq1\t1.5\t1.5\nq2\t1\t1\n"
    with pytest.raises(SystemExit, match="--per-query weighs reciprocal-rank fusion itself"):
        main(["fuse", *paths, "--per-query", "qpp", "--method", "wsum", "-o", str(tmp_path / "x.run")])
