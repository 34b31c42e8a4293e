"""Fusion by hand: two runs of one query, every fused score worked out on paper."""

import math
import re
from pathlib import Path

import pytest

from irglow.cli import main
from irglow.data.records import Qrel
from irglow.runs.fusion import convex_grid, cross_fitted, fuse, tune_weights
from irglow.runs.trec import Run
from tests.files import write_trec


A = Run({"q1": [("d1", 3.0), ("d2", 2.0), ("d3", 1.0)]}, "a")
B = Run({"q1": [("d2", 0.9), ("d4", 0.5)]}, "b")


def scores(run):
    return dict(run.ranking["q1"])


def test_rrf():
    f = fuse([A, B], "rrf", k=60)
    assert [d for d, _ in f.ranking["q1"]] == ["d2", "d1", "d4", "d3"]
    s = scores(f)
    assert s["d2"] == pytest.approx(1 / 61 + 1 / 62) and s["d1"] == pytest.approx(1 / 61)
    assert s["d4"] == pytest.approx(1 / 62) and s["d3"] == pytest.approx(1 / 63)
    assert scores(fuse([A, B], "rrf", weights=[2, 1], k=1))["d1"] == pytest.approx(2 / 2)


def test_min_max_sum():
    # A → d1 1, d2 0.5, d3 0; B → d2 1, d4 0; a document a run missed takes the run's lowest (0 here)
    f = fuse([A, B], "wsum", "min-max", weights=[0.5, 0.5])
    assert scores(f) == pytest.approx({"d1": 0.5, "d2": 0.75, "d3": 0.0, "d4": 0.0})
    assert [d for d, _ in f.ranking["q1"]] == ["d2", "d1", "d4", "d3"]  # tie: trec_eval's order, doc id descending


def test_a_run_of_equal_scores_still_ranks_what_it_returned_above_what_it_did_not():
    """Issue 59.16: a run whose scores were all equal normalised to 1 everywhere, its missed documents included,
    so it had no influence.  C → d3 1, d4 1 (min-max: equal scores are 1), missed documents 0."""
    c = Run({"q1": [("d3", 7.0), ("d4", 7.0)]}, "c")
    assert scores(fuse([A, c], "wsum", "min-max")) == pytest.approx({"d1": 1.0, "d2": 0.5, "d3": 1.0, "d4": 1.0})
    # z-score: C's scores are 0 and what it missed −1; A's d1 +z, d2 0, d3 −z, d4 (missed) −z
    z = math.sqrt(1.5)
    assert scores(fuse([A, c], "wsum", "z-score")) == pytest.approx({"d1": z - 1, "d2": -1, "d3": -z, "d4": -z})


def test_z_score_sum_missing_document_takes_the_runs_lowest():
    # A: mean 2, sd √(2/3) → z = ±1.2247, 0; B: mean 0.7, sd 0.2 → z = +1, −1
    z = math.sqrt(1.5)
    f = fuse([A, B], "wsum", "z-score")
    assert scores(f) == pytest.approx({"d1": z - 1, "d2": 0 + 1, "d3": -z - 1, "d4": -z - 1})


def test_depth_union_of_queries_and_errors():
    C = Run({"q2": [("d9", 1.0)]}, "c")
    f = fuse([A, C], "wsum", "min-max", depth=2)
    assert set(f.ranking) == {"q1", "q2"} and len(f.ranking["q1"]) == 2 and f.ranking["q2"] == [("d9", 1.0)]
    with pytest.raises(ValueError, match="2 fusion weights for 3 runs"):
        fuse([A, B, C], weights=[1, 1])
    with pytest.raises(ValueError, match="fusion norm"):
        fuse([A, B], "wsum", "max")


def test_convex_weights_tuned_by_hand():
    assert convex_grid(2, 0.5) == [(0.0, 1.0), (0.5, 0.5), (1.0, 0.0)]
    assert len(convex_grid(3, 0.5)) == 6
    # d4 relevant: B alone ranks it 2nd (RR 1/2); (0.5, 0.5) and A alone rank it 3rd (1/3)
    w, best, curve = tune_weights([A, B], [Qrel("q1", "d4", 1)], "wsum", "min-max", "RR@10", step=0.5)
    assert w == (0.0, 1.0) and best == pytest.approx(0.5)
    assert [s for _, s in curve] == pytest.approx([1 / 2, 1 / 3, 1 / 3])


def test_every_measure_breaks_ties_like_trec_eval():
    """RR@k (ir_measures' msmarco provider) and nDCG (pytrec_eval) must see one ranking: ties by doc id
    descending, so d4 is 2nd of the three documents tied at 0."""
    from irglow.eval.measures import aggregate, parse_measures

    run = Run({"q1": [("d1", 0.0), ("d2", 1.0), ("d3", 0.0), ("d4", 0.0)]})
    got = aggregate(parse_measures(["RR@10", "RR", "nDCG@10", "AP"]), [Qrel("q1", "d4", 1)], run)
    assert got["RR@10"] == got["RR"] == got["AP"] == pytest.approx(0.5)
    assert got["nDCG@10"] == pytest.approx(1 / math.log2(3))


def test_many_runs_are_tuned_by_coordinate_ascent_not_the_grid():
    """Issue 33.3: an all-runs fusion of 16 runs would need C(35, 15) ≈ 3e9 grid points; coordinate ascent
    from equal weights keeps a change only where the score rises, and may drop a run (weight 0)."""
    from irglow.runs.fusion import scaled_ascent

    target = (0.5, 0.5, 0.0, 0.0, 0.0)

    def score(w):  # best at the target; every step toward it scores higher
        return -sum((a - b) ** 2 for a, b in zip(w, target))

    weights, best, curve = scaled_ascent(5, score)
    assert weights[2:] == (0.0, 0.0, 0.0) and weights[:2] == pytest.approx((0.5, 0.5), abs=1e-5)
    assert best == pytest.approx(0.0, abs=1e-9)
    assert curve[0] == ((0.2,) * 5, score((0.2,) * 5)) and len(curve) < 100


def test_fuse_refuses_to_overwrite_an_input(tmp_path, capsys):
    """30.5: ``irglow fuse a.run b.run -o a.run`` overwrote its input."""
    a = write_trec(tmp_path / "a.run", [("q1", "d1", 2.0), ("q1", "d2", 1.0)])
    b = write_trec(tmp_path / "b.run", [("q1", "d2", 2.0), ("q1", "d1", 1.0)])
    before = (tmp_path / "a.run").read_bytes()
    with pytest.raises(SystemExit, match="is one of the inputs; it would be overwritten"):
        main(["fuse", a, b, "-o", a])
    assert (tmp_path / "a.run").read_bytes() == before


def test_fused_run_keeps_its_order_through_the_file(tmp_path):
    from irglow.runs.fusion import fuse

    a = Run({"q": [(f"d{j}", 1000.0 - j) for j in range(1000)]}, "a")
    b = Run({"q": [(f"d{j}", float(j % 7)) for j in range(1000)]}, "b")
    fused = fuse([a, b], "wsum", weights=[0.05, 0.95], tag="f")
    assert Run.read(fused.write(tmp_path / "f.run")).ranking == fused.ranking


@pytest.mark.parametrize("args,message", [
    (["--step", "0"], "argument --step: --step = 0.0 must be a number > 0 and <= 0.5"),
    (["--step", "2"], "argument --step: --step = 2.0 must be a number > 0 and <= 0.5"),
    (["--k", "-1"], "RRF constant"), (["--depth", "-1"], "argument --depth: -1 must be >= 1"),
    (["--depth", "0"], "argument --depth: 0 must be >= 1"),
])
def test_fuse_refuses_settings_that_would_divide_by_zero_or_drop_documents(tmp_path, capsys, args, message):
    Run({"q": [("d1", 1.0), ("d2", 0.5)]}).write(tmp_path / "a.run")
    Run({"q": [("d2", 1.0)]}).write(tmp_path / "b.run")
    (tmp_path / "q.qrels").write_text("q 0 d1 1\n")
    extra = ["--tune-runs", str(tmp_path / "a.run"), str(tmp_path / "b.run"), "--tune-qrels",
             str(tmp_path / "q.qrels")] if "--step" in args else []
    try:
        rc = main(["fuse", str(tmp_path / "a.run"), str(tmp_path / "b.run"), "-o", str(tmp_path / "f.run"),
                   *args, *extra])
    except SystemExit as e:  # argparse's own usage error (a type that refuses the value), exit status 2
        rc = e.code
    assert rc == 2 and message in capsys.readouterr().err


def test_zscore_fusion_refuses_infinite_scores():
    from irglow.runs.fusion import fuse

    with pytest.raises(ValueError, match="infinite scores"):
        fuse([Run({"q": [("d1", float("inf")), ("d2", 1.0)]}, "a"), Run({"q": [("d1", 1.0)]}, "b")], "wsum", "z-score")


def test_a_long_tuning_shows_its_progress(tmp_path, capsys):
    """``irglow fuse --tune-runs`` over a fine grid and many queries draws a bar; a short one stays quiet."""
    import random

    rng = random.Random(3)
    paths = []
    for name in ("a", "b"):
        Run({f"q{i}": [(f"d{j}", rng.random()) for j in range(5)] for i in range(200)}, name).write(tmp_path / name)
        paths.append(str(tmp_path / name))
    (tmp_path / "t.qrels").write_text("".join(f"q{i} 0 d{i % 5} 1\n" for i in range(200)))
    args = ["fuse", *paths, "--tune-runs", *paths, "--tune-qrels", str(tmp_path / "t.qrels"), "-o"]
    assert main([*args, str(tmp_path / "fine.run"), "--step", "0.01"]) == 0
    assert "fusion weights" in capsys.readouterr().err
    assert main([*args, str(tmp_path / "coarse.run"), "--step", "0.5"]) == 0
    assert "fusion weights" not in capsys.readouterr().err


def test_a_cross_fitted_run_fuses_each_query_with_weights_its_own_judgments_did_not_choose():
    """Issue 61: a tuned fusion that is part of another fusion gives it a run of its tuning queries.  Both queries
    rank a: d1 2, d2 1 and b: d2 2, d1 1 (min-max: a gives d1 1 and d2 0, b the reverse); q1 judges d1, q2 d2.
    Two folds, in sorted order: q1 alone, q2 alone.  On q2 alone the grid (0, 1), (0.5, 0.5), (1, 0) first reaches
    nDCG 1 at (0, 1); on q1 alone only (1, 0) does (at (0.5, 0.5) d1 and d2 tie at 0.5 and trec_eval's order puts
    d2 first).  So q1 is fused with (0, 1): d2 1.0, d1 0.0; q2 with (1, 0): d1 1.0, d2 0.0 — each ranks its relevant
    document last, where in-sample weights would have ranked it first."""
    a = Run({q: [("d1", 2.0), ("d2", 1.0)] for q in ("q1", "q2")}, "a")
    b = Run({q: [("d2", 2.0), ("d1", 1.0)] for q in ("q1", "q2")}, "b")
    qrels = [Qrel("q1", "d1", 1, "0"), Qrel("q2", "d2", 1, "0")]
    run, weights = cross_fitted([a, b], qrels, step=0.5, folds=2, tag="a+b")
    assert weights == [(0.0, 1.0), (1.0, 0.0)]
    assert run.ranking == {"q1": [("d2", 1.0), ("d1", 0.0)], "q2": [("d1", 1.0), ("d2", 0.0)]}
    assert run.tag == "a+b"
    # a fold whose other folds judge nothing relevant takes equal weights: (0.5, 0.5) ties d1 and d2 at 0.5
    run, weights = cross_fitted([a, b], [Qrel("q1", "d1", 1, "0"), Qrel("q2", "d2", 0, "0")], step=0.5, folds=2)
    assert weights == [(0.5, 0.5), (1.0, 0.0)]
    assert run.ranking["q1"] == [("d2", 0.5), ("d1", 0.5)]


def test_a_fusion_method_is_one_registered_function(monkeypatch):
    """Issue 81.5 (docs/extending.md's cell, as written): a method registered once is what [fusion] method,
    Fusion(method=…) and fuse() take; whether it tunes its weights and reads scores is said where it is registered."""
    from irglow.rankers import Fusion
    from irglow.runs import fusion

    monkeypatch.setattr(fusion, "FUSION_METHODS", dict(fusion.FUSION_METHODS))

    page = (Path(__file__).parents[2] / "docs" / "extending.md").read_text()
    cell = next(b for b in re.findall(r"^```python\n(.*?)^```", page, re.S | re.M) if "combmax" in b)
    exec(compile(cell, "docs/extending.md (a fusion method)", "exec"), {})  # the page's cell, as written

    a = Run({"q1": [("d1", 3.0), ("d2", 1.0)]}, "a")
    b = Run({"q1": [("d2", 4.0), ("d3", 2.0)]}, "b")
    # min-max per run: a d1 1, d2 0; b d2 1, d3 0; the larger of each document's: d1 1, d2 1, d3 0
    assert dict(fuse([a, b], "combmax", "min-max").ranking["q1"]) == {"d1": 1.0, "d2": 1.0, "d3": 0.0}
    hybrid = Fusion.of({"runs": ["a", "b"], "method": "combmax"})
    assert hybrid.method == "combmax" and not hybrid.tuned("wsum") and Fusion(["a", "b"]).tuned("wsum")
    with pytest.raises(ValueError, match=r"fusion.runs.method = 'max' must be one of wsum, rrf, combmax"):
        Fusion.of({"runs": ["a", "b"], "method": "max"})
