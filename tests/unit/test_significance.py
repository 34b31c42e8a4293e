"""Issue 22: every statistic worked out by hand (or by an independent enumeration in the test)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from irglow.data.records import Qrel
from irglow.eval import significance as sig
from irglow.eval.compare import compare, condensed
from irglow.runs.trec import Run


@pytest.mark.parametrize("diffs", [[0.1, 0.2, -0.05, 0.3], [0.5, -0.5, 0.25, 0.0, 0.125, -0.25, 0.75, 0.1, 0.2, -0.3]])
def test_randomization_p_is_exact_for_small_n(diffs):
    d = np.array(diffs)
    observed = abs(d.sum())
    hits = sum(abs(np.dot(signs, d)) >= observed - 1e-12 for signs in itertools.product([1, -1], repeat=len(d)))
    assert sig.randomization_pvalues(d, 10_000)[0] == pytest.approx(hits / 2 ** len(d), abs=1e-15)


def test_randomization_by_hand():
    # |sum| of ±0.1 ±0.2 ±0.05 ±0.3 reaches 0.55 for (+,+,−,+), (+,+,+,+) and their negations: 4 of 16
    assert sig.randomization_pvalues(np.array([0.1, 0.2, -0.05, 0.3]))[0] == 0.25


def test_sampled_randomization_counts_the_observed_assignment_and_is_seeded():
    d = np.full(30, 0.1)  # 2^30 assignments: sampled; only all-plus / all-minus reach the observed sum
    p = sig.randomization_pvalues(d, 2000, seed=3)[0]
    assert p == pytest.approx(1 / 2001)
    assert sig.randomization_pvalues(np.random.default_rng(1).normal(0, 1, 40), 500, seed=5)[0] == \
        sig.randomization_pvalues(np.random.default_rng(1).normal(0, 1, 40), 500, seed=5)[0]


def test_bootstrap_on_tiny_cases():
    p, low, high = sig.bootstrap(np.array([[0.2], [0.2], [0.2]]), 999, seed=1)
    assert (p[0], low[0], high[0]) == (pytest.approx(1 / 1000), pytest.approx(0.2), pytest.approx(0.2))
    p, low, high = sig.bootstrap(np.array([[1.0], [-1.0]]), 999, seed=1)  # observed mean 0: every resample reaches it
    assert p[0] == 1.0 and low[0] == -1.0 and high[0] == 1.0


def paired_tests(x, ys, test):
    """Each of ``ys`` against ``x`` through the one call a table makes (queries × comparisons)."""
    return sig.test_differences(np.stack([np.asarray(y) - np.asarray(x) for y in ys], axis=1), test)


def test_t_test_equals_scipy_and_wilcoxon_too():
    rng = np.random.default_rng(0)
    x, y = rng.random(25), rng.random(25)
    result = paired_tests(x, [y], "t")[0]
    assert result.p == pytest.approx(stats.ttest_rel(y, x).pvalue)
    assert (result.ci_low, result.ci_high) == pytest.approx(stats.ttest_rel(y, x).confidence_interval(0.95))
    assert paired_tests(x, [y], "wilcoxon")[0].p == pytest.approx(stats.wilcoxon(y - x).pvalue)


def test_wins_ties_losses_and_identical_runs():
    r = paired_tests(np.array([0.1, 0.5, 0.3, 0.2]), [np.array([0.2, 0.5, 0.1, 0.4])], "randomization")[0]
    assert (r.wins, r.ties, r.losses) == (2, 1, 1) and r.delta == pytest.approx(0.025)
    same = paired_tests(np.array([0.1, 0.5]), [np.array([0.1, 0.5])], "t")[0]
    assert same.p == 1.0


def test_corrections_by_hand():
    p = [0.01, 0.04, 0.03, 0.2]
    assert sig.adjust(p, "holm") == pytest.approx([0.04, 0.09, 0.09, 0.2])
    assert sig.adjust(p, "bonferroni") == pytest.approx([0.04, 0.16, 0.12, 0.8])
    assert sig.adjust(p, "bh") == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.2])
    assert sig.adjust(p, "none") == p


def test_tukey_groups_on_a_fixture():
    rng = np.random.default_rng(0)
    base = rng.random(60)
    scores = np.stack([base + 0.3, base + 0.01, base, base - 0.3], axis=1)  # A ≫ B ≈ C ≫ D
    p = sig.tukey_hsd(scores, 1000, seed=0)
    assert p[1, 2] > 0.05 and p[0, 1] < 0.05 and p[2, 3] < 0.05 and (p == p.T).all()
    assert sig.groups(["A", "B", "C", "D"], list(scores.mean(0)), p) == {"A": "a", "B": "b", "C": "b", "D": "c"}
    # overlapping groups: X ≈ Y, Y ≈ Z, X ≠ Z
    pm = np.array([[1, 0.5, 0.01], [0.5, 1, 0.5], [0.01, 0.5, 1]])
    assert sig.groups(["X", "Y", "Z"], [3, 2, 1], pm) == {"X": "a", "Y": "ab", "Z": "b"}


def test_risk_by_hand():
    # δ = (0.2, −0.2, 0); α = 1: z = (0.2, −0.4, 0); URisk = −0.2/3; sd(z) = √(0.18667/2)
    u, t, p = sig.risk(np.array([0.5, 0.2, 0.1]), np.array([0.3, 0.4, 0.1]), 1.0)
    assert u == pytest.approx(-0.2 / 3)
    assert t == pytest.approx((-0.2 / 3) / (math.sqrt((0.8 / 3) ** 2 + (1 / 3) ** 2 + (0.2 / 3) ** 2) / math.sqrt(2)
                                             / math.sqrt(3)))
    assert p == pytest.approx(2 * stats.t.sf(abs(t), 2))
    assert sig.risk(np.array([0.5, 0.2, 0.1]), np.array([0.3, 0.4, 0.1]), 5.0)[0] == pytest.approx((0.2 - 1.2) / 3)


def test_dersimonian_laird_by_hand():
    # homogeneous: w = 10000, 2500, 5000; fixed = 0.03; Q = 2500·0.02² + 5000·0.01² = 1.5 < k − 1, so τ² = 0
    pooled = sig.dersimonian_laird([0.03, 0.01, 0.04], [1e-4, 4e-4, 2e-4])
    assert (pooled.effect, pooled.tau2, pooled.i2, pooled.q) == pytest.approx((0.03, 0.0, 0.0, 1.5))
    assert pooled.ci_high - pooled.effect == pytest.approx(stats.norm.ppf(0.975) * math.sqrt(1 / 17500))
    # heterogeneous: Q = 1000·(0.01 + 0.01) = 20, C = 3000 − 3e6/3000 = 2000, τ² = 18/2000, I² = 18/20
    pooled = sig.dersimonian_laird([0.1, -0.1, 0.0], [1e-3] * 3)
    assert (pooled.effect, pooled.tau2, pooled.i2, pooled.q) == pytest.approx((0.0, 0.009, 0.9, 20.0))
    assert pooled.ci_high == pytest.approx(stats.norm.ppf(0.975) * math.sqrt(1 / 300))


def test_dersimonian_laird_leaves_out_collections_without_variance():
    """Issue 30.8: two collections where a system equals the baseline (variance 0) got a 1e-12 floor, so the CI's
    width followed the floor.  They are left out; the pooled figures are those of the three others, by hand:
    w = 1/v = (628930.82, 33003.30, 190114.07); fixed = Σwy/Σw = −0.0013297; Q = Σw(y − fixed)² = 3.71280;
    c = Σw − Σw²/Σw = 3.3977e5; τ² = (Q − 2)/c = 5.0402e-6 … (the code's exact arithmetic below)."""
    y, v = [-0.00166, 0.00880, -0.00252], [1.59e-6, 3.03e-5, 5.26e-6]
    w = [1 / x for x in v]
    fixed = sum(a * b for a, b in zip(w, y)) / sum(w)
    q = sum(a * (b - fixed) ** 2 for a, b in zip(w, y))
    c = sum(w) - sum(a * a for a in w) / sum(w)
    tau2 = (q - 2) / c
    ws = [1 / (x + tau2) for x in v]
    effect = sum(a * b for a, b in zip(ws, y)) / sum(ws)
    half = stats.norm.ppf(0.975) / math.sqrt(sum(ws))
    pooled = sig.dersimonian_laird(y + [0, 0], v + [0, 0])
    assert pooled.k == 3 and pooled.excluded == 2
    assert pooled.q == pytest.approx(3.712798, rel=1e-5) and pooled.q == pytest.approx(q)
    assert pooled.tau2 == pytest.approx(tau2) and pooled.effect == pytest.approx(effect)
    assert pooled.effect == pytest.approx(-0.00089641, rel=1e-4)
    assert pooled.ci_low == pytest.approx(effect - half) and pooled.ci_high - pooled.ci_low > 1e-3  # not ±2e-6
    lone = sig.dersimonian_laird([0.01, 0, 0], [1e-4, 0, 0])
    assert lone.k == 1 and lone.excluded == 2 and math.isnan(lone.ci_low)


def test_judged_at_10_and_condensed_lists_by_hand():
    qrels = [Qrel("q", "d1", 1), Qrel("q", "d3", 0), Qrel("q", "d5", -1)]
    run = Run({"q": [(f"d{i}", 20.0 - i) for i in range(1, 13)]}, "r")  # d1..d12, judged: d1, d3, d5 in the top 10
    cmp = compare({"r": run}, qrels, ["P@2"])
    assert cmp.judged["r"] == pytest.approx(0.3)
    # d5's −1 is "in the pool, not judged": trec_eval -J drops it with the unjudged documents
    assert condensed(run, qrels).ranking == {"q": [("d1", 19.0), ("d3", 17.0)]}
    cmp = compare({"r": run}, qrels, ["P@2"], judged_only=True)
    assert cmp.means.loc["r", "P@2"] == pytest.approx(0.5) and cmp.means.loc["r", "P@2'"] == pytest.approx(0.5)


def test_table_warns_when_a_run_is_judged_far_less_than_the_baseline():
    qrels = [Qrel("q", f"d{i}", 1 if i < 3 else 0) for i in range(10)]
    base = Run({"q": [(f"d{i}", 10.0 - i) for i in range(10)]}, "base")
    new = Run({"q": [("d0", 10.0)] + [(f"n{i}", 5.0 - i) for i in range(9)]}, "new")
    cmp = compare({"base": base, "new": new}, qrels, ["nDCG@10"], baseline="base", permutations=100)
    assert "Judged@10 below 75% of the baseline's 1.000 for `new` 0.100" in cmp.caption()
    assert "Judged@10" in cmp.to_markdown()


def test_judged_warning_is_relative_so_sparse_qrels_still_warn():
    """Issue 30: SciFact's baseline has Judged@10 0.088; a run with none judged got no warning (absolute 0.10)."""
    qrels = [Qrel("q", "d0", 1)]
    base = Run({"q": [(f"d{i}", 10.0 - i) for i in range(10)]}, "base")  # Judged@10 = 1/10
    new = Run({"q": [(f"n{i}", 10.0 - i) for i in range(10)]}, "new")  # 0/10
    same = Run({"q": [(f"d{i}", 10.0 - i) for i in range(10)]}, "same")
    cmp = compare({"base": base, "new": new, "same": same}, qrels, ["nDCG@10"], baseline="base")
    assert "for `new` 0.000" in cmp.caption() and "`same`" not in cmp.caption()


def test_condensed_view_on_qrels_without_non_relevant_judgments_says_it_is_meaningless():
    qrels = [Qrel("q", "d1", 1), Qrel("q", "d2", 2)]
    run = Run({"q": [("x", 3.0), ("d1", 2.0)]}, "r")
    cmp = compare({"r": run}, qrels, ["nDCG@10"], judged_only=True)
    assert "condensed view needs judged non-relevant documents" in cmp.caption()
    cmp = compare({"r": run}, qrels + [Qrel("q", "x", 0)], ["nDCG@10"], judged_only=True)
    assert "condensed view needs" not in cmp.caption()


def test_empty_qrels_and_no_measures_are_errors():
    run = Run({"q": [("d1", 1.0)]}, "r")
    with pytest.raises(ValueError, match="the qrels hold no judgments"):
        compare({"r": run}, [], ["nDCG@10"])
    with pytest.raises(ValueError, match="no measures"):
        compare({"r": run}, [Qrel("q", "d1", 1)], "")


def _tiny(n: int, gain: float = 0.5):
    """``n`` queries where ``new`` finds the relevant document at rank 1 and ``base`` at rank 2."""
    qrels = [Qrel(f"q{i}", "rel", 1) for i in range(n)]
    base = Run({f"q{i}": [("x", 2.0), ("rel", 1.0)] for i in range(n)}, "base")
    new = Run({f"q{i}": [("rel", 2.0), ("x", 1.0)] for i in range(n)}, "new")
    return qrels, {"base": base, "new": new}


@pytest.mark.parametrize("test", sig.TESTS)
@pytest.mark.parametrize("n", [1, 3, 5])
def test_too_few_queries_give_no_mark_whatever_the_test(test, n):
    """Issue 30.7: on 1 query the t-test gave p = 0 and ▲ with CI [nan, nan], the bootstrap ▲ with a zero-width CI,
    TRisk ±inf a '*'; with 3 all-positive queries bootstrap p = 0.0001 where the exact p is 0.25."""
    qrels, runs = _tiny(n)
    cmp = compare(runs, qrels, ["RR@10"], baseline="base", test=test, ci=True)
    assert not cmp.significant("new", "RR@10") and cmp.pvalues.isna().all().all()
    md = cmp.to_markdown()
    assert "▲" not in md.split("\n\n")[0] and "nan" not in md
    assert cmp.risk_p is None or cmp.risk_p.isna().all().all()  # URisk is shown; TRisk never starred
    assert f"{n} quer{'y' if n == 1 else 'ies'}. No significance marks: fewer than 6 queries" in md


def test_six_queries_all_better_are_marked_with_the_exact_p():
    """The smallest table that can be marked at α = 0.05: 2 of the 2⁶ sign vectors reach the observed sum."""
    qrels, runs = _tiny(6)
    cmp = compare(runs, qrels, ["RR@10"], baseline="base")
    assert cmp.raw_pvalues.loc["new", "RR@10"] == pytest.approx(2 / 64) and cmp.significant("new", "RR@10")
    assert "exact: all 64 sign vectors" in cmp.caption() and "two-sided" in cmp.caption()
    # a constant difference has no variance: the t-test is undefined there, so no mark (never p = 0)
    cmp = compare(runs, qrels, ["RR@10"], baseline="base", test="t")
    assert not cmp.significant("new", "RR@10")
    u, t, p = sig.risk(np.full(6, 1.0), np.full(6, 0.5))
    assert u == 0.5 and t == math.inf and math.isnan(p)
    assert all(math.isnan(x) for x in sig.risk(np.array([1.0]), np.array([0.0]))[1:])


def test_minimum_queries_by_hand():
    # 2/2^n < α: n = 6 at 0.05 (2/64 = 0.031; 2/32 = 0.0625 is not), n = 8 at 0.01 (2/256 = 0.0078; 2/128 = 0.0156)
    assert sig.min_queries(0.05) == 6 and sig.min_queries(0.01) == 8 and sig.min_queries(0.1) == 5


def test_captions_name_draws_sidedness_and_the_ci_method():
    qrels, runs = _tiny(30)
    cmp = compare(runs, qrels, ["RR@10"], baseline="base", ci=True, permutations=1000)
    cap = cmp.caption()
    assert "(1,000 random sign flips), two-sided, one comparison per measure (nothing to correct)" in cap
    assert "paired bootstrap percentile interval (1,000 resamples), not adjusted for multiple comparisons" in cap
    boot = compare(runs, qrels, ["RR@10"], baseline="base", test="bootstrap", permutations=1000).caption()
    assert "1,000 resamples, shift method" in boot and "permutations" not in boot
    assert "zero differences dropped" in compare(runs, qrels, ["RR@10"], baseline="base", test="wilcoxon").caption()
    tex = cmp.to_latex()
    assert "\\begin{table}" in tex and "\\caption{30 queries. $^{\\blacktriangle}$/$^{\\blacktriangledown}$" in tex
    assert "two-sided" in tex and "\n%" not in tex.split("\\begin{table}")[1]


def test_compare_table_carries_ci_pairs_and_risk():
    rng = np.random.default_rng(0)
    qrels = [Qrel(f"q{i}", f"d{j}", int(rng.random() < 0.3)) for i in range(30) for j in range(10)]
    runs = {name: Run({f"q{i}": [(f"d{j}", float(rng.random() + shift * (j < 3))) for j in range(10)]
                       for i in range(30)}, name) for name, shift in (("a", 0.0), ("b", 0.5), ("c", 0.0))}
    cmp = compare(runs, qrels, ["nDCG@10"], baseline="a", ci=True, pairs="all", permutations=500)
    md = cmp.to_markdown()
    assert "[" in md and "All pairs on nDCG@10" in md and "URisk(α=1)" in md and "group" in md
    assert "paired randomization test (500 random sign flips), two-sided, Holm-corrected over 2 comparisons" \
        in cmp.caption()
    low, high = cmp.ci_low.loc["b", "nDCG@10"], cmp.ci_high.loc["b", "nDCG@10"]
    assert low <= cmp.deltas.loc["b", "nDCG@10"] <= high
    csv = cmp.to_csv().splitlines()[0]
    assert "nDCG@10 ci_low" in csv and "nDCG@10 p(holm)" in csv and "nDCG@10 wins" in csv


def test_judged_warning_caused_by_missing_queries_says_so():
    """Issue 50: a run that answers half the queries, all of them judged in its top 10, was told its documents are
    unjudged; it is told it misses queries."""
    qrels = [Qrel(q, f"d{i}", 1) for q in ("a", "b") for i in range(10)]
    base = Run({q: [(f"d{i}", 10.0 - i) for i in range(10)] for q in ("a", "b")}, "base")
    half = Run({"a": [(f"d{i}", 10.0 - i) for i in range(10)]}, "half")
    cmp = compare({"base": base, "half": half}, qrels, ["nDCG@10"], baseline="base", permutations=100)
    caption = cmp.caption()
    assert "`half` 0.500 (1.000 over the 1 queries it answers; it misses 1): because of the queries it misses" \
        in caption and "likely underestimated" not in caption
