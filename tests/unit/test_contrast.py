"""Rank-biased overlap and AP correlation (irglow.eval.contrast) by hand, and RBO against its definition."""

import pytest
from hypothesis import given, strategies as st

from irglow.eval.contrast import rbo, tau_ap


def test_rbo_by_hand():
    # p 0.5, k 3: X = 1, 1, 3; Σ X_d/d·p^d = 0.5 + 0.125 + 0.125 = 0.75, times (1−p)/p = 1; plus X_3/3·p³ = 0.125
    assert rbo(list("ABC"), list("ACB"), 0.5) == pytest.approx(0.875)
    assert rbo(list("ABC"), list("ABC")) == pytest.approx(1.0)
    assert rbo(list("ABC"), list("DEF")) == 0.0
    assert rbo([], list("A")) is None


def test_tau_ap_by_hand():
    # reference 1 2 3, other 1 3 2: C(2) = 1 of 1 (1 above 3), C(3) = 1 of 2 (1 above 2, 3 not): 2/2·1.5 − 1
    assert tau_ap([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
    assert tau_ap([1, 2, 3], [1, 2, 3]) == 1.0 and tau_ap([1, 2, 3], [3, 2, 1]) == -1.0
    # a new document entering the top (x) and the reference's first leaving it: union x b c a → (0 + 1/2 + 0)·2/3 − 1
    assert tau_ap(list("abc"), list("xbc")) == pytest.approx(-2 / 3)
    assert tau_ap(["a"], ["a"]) is None
    # issue 59.9: a run with nothing for the query agrees with nothing (it was 1.0 one way, -1.0 the other)
    assert tau_ap(["a", "b"], []) is None and tau_ap([], ["c", "d"]) is None


def _rbo_by_definition(a, b, p):
    k = min(len(a), len(b))
    x = [len(set(a[:d]) & set(b[:d])) for d in range(1, k + 1)]
    return x[-1] / k * p ** k + (1 - p) / p * sum(x[d - 1] / d * p ** d for d in range(1, k + 1))


rankings = st.lists(st.integers(0, 30), min_size=1, max_size=25, unique=True)


@given(rankings, rankings, st.sampled_from([0.5, 0.8, 0.9, 0.98]))
def test_rbo_equals_its_definition_and_is_a_similarity(a, b, p):
    value = rbo(a, b, p)
    assert value == pytest.approx(_rbo_by_definition(a, b, p), abs=1e-12)
    assert 0.0 <= value <= 1.0 + 1e-12 and value == pytest.approx(rbo(b, a, p))
    assert rbo(a, a, p) == pytest.approx(1.0)


@given(rankings, rankings)
def test_tau_ap_is_bounded_and_one_on_itself(a, b):
    value = tau_ap(a, b)
    assert value is None or -1.0 - 1e-12 <= value <= 1.0 + 1e-12
    if len(a) > 1:
        assert tau_ap(a, a) == pytest.approx(1.0)


def _tau_ap_by_definition(reference, other):
    union = list(other) + [d for d in reference if d not in set(other)]
    where = {d: i for i, d in enumerate(reference)}
    rank = [where.get(d, len(reference)) for d in union]
    n = len(union)
    return 2 / (n - 1) * sum(sum(rank[j] < rank[i] for j in range(i)) / i for i in range(1, n)) - 1


@given(rankings, rankings)
def test_tau_ap_equals_its_definition(a, b):
    if len(set(a) | set(b)) > 1:
        assert tau_ap(a, b) == pytest.approx(_tau_ap_by_definition(a, b), abs=1e-12)
