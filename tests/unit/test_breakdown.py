"""Issue 39 item 1: Δ broken down by query characteristics — the groups and each group's figures by hand."""

from __future__ import annotations

import math

import pytest

from irglow.eval.breakdown import Characteristic, breakdown_tables, characteristics, group_rows, quantile_groups


def test_quantile_groups_keep_equal_values_together_and_cut_at_the_nearest_boundary():
    assert quantile_groups({str(i): i for i in range(1, 9)}) == (
        ["1–2", "3–4", "5–6", "7–8"], {"1": 0, "2": 0, "3": 1, "4": 1, "5": 2, "6": 2, "7": 3, "8": 3})
    # nDCG@10 = 1 on four of seven queries: a group of its own, not swallowed with 0.5 (quantile cuts at 1.75,
    # 3.5, 5.25 → the nearest boundaries hold 2, 3 and 7 (the end) queries)
    values = {"a": 0.1, "b": 0.2, "c": 1.0, "d": 1.0, "e": 1.0, "f": 1.0, "g": 0.5, "h": None}
    labels, of = quantile_groups(values, digits=2)
    assert labels == ["0.10–0.20", "0.50", "1.00", "no value"]
    assert of == {"a": 0, "b": 0, "g": 1, "c": 2, "d": 2, "e": 2, "f": 2, "h": 3}
    assert quantile_groups({}) == ([], {}) and quantile_groups({"q": 3}) == (["3"], {"q": 0})


def test_group_rows_by_hand():
    char = Characteristic("x", "x", "", ["short", "long", "none"], {"q1": 0, "q2": 0, "q3": 1})
    rows = group_rows({"q1": 0.1, "q2": 0.3, "q3": -0.2, "q4": 0.5}, char)  # q4 in no group
    n, mean, low, high, wins, losses, ties = rows[0]
    # mean 0.2; sd √((0.01 + 0.01)/1) = 0.141421; t(0.975, 1) = 12.7062 → half 12.7062 · 0.141421 / √2 = 1.27062
    assert (n, wins, losses, ties) == (2, 2, 0, 0) and mean == pytest.approx(0.2)
    assert low == pytest.approx(0.2 - 1.270620, abs=1e-5) and high == pytest.approx(0.2 + 1.270620, abs=1e-5)
    assert rows[1] == [1, pytest.approx(-0.2), None, None, 0, 1, 0]  # one query: no interval
    assert rows[2] == [0, None, None, None, 0, 0, 0]


def test_breakdown_tables_use_the_measures_own_difficulty_and_score_missing_queries_zero():
    per_query = {"base": {"m1": {"q1": 0.0, "q2": 1.0}, "m2": {"q1": 0.5, "q2": 0.5}},
                 "run": {"m1": {"q1": 0.5}, "m2": {"q1": 1.0, "q2": 0.0}}}  # run lacks q2 on m1: 0
    chars = characteristics(["q1", "q2"], {"q1": "a b", "q2": "a b c d"}, {"q1": 1, "q2": 2},
                            {m: per_query["base"][m] for m in ("m1", "m2")}, "base")
    assert [c.key for c in chars] == ["length", "relevant", "difficulty:m1", "difficulty:m2"]
    tables = breakdown_tables(per_query, ["base", "run"], ["m1", "m2"], "base", ["q1", "q2"], chars)
    assert set(tables) == {"run"} and set(tables["run"]["m1"]) == {"length", "relevant", "difficulty:m1"}
    by_length = tables["run"]["m1"]["length"]  # q1 (2 words): +0.5, q2 (4 words): 0 − 1 = −1
    assert [r[:2] for r in by_length] == [[1, 0.5], [1, -1.0]]
    assert tables["run"]["m2"]["difficulty:m2"] == [[2, 0.0, pytest.approx(-6.353, abs=1e-3),
                                                     pytest.approx(6.353, abs=1e-3), 1, 1, 0]]


def test_cluster_labels_name_each_cluster_by_its_distinctive_words():
    from irglow.dense.clusters import cluster_labels

    texts = {"a": "vitamin d deficiency", "b": "vitamin d and bone", "c": "cancer of the breast",
             "d": "breast cancer screening"}
    labels = cluster_labels(texts, {"a": 0, "b": 0, "c": 1, "d": 1}, words=2)
    # "vitamin" twice in cluster 0, never in 1: 2·ln(1 + 2/1); "deficiency", "bone" once: ln 3; "d" too short
    assert labels == {0: "vitamin · bone", 1: "breast · cancer"}


def test_default_cluster_count():
    from irglow.dense.clusters import default_clusters

    assert [default_clusters(n) for n in (4, 60, 300, 7000)] == [2, 2, 12, 12]
    assert math.isclose(default_clusters(100), 4)
