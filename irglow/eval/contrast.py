"""How differently two runs rank one query's documents, over whole rankings — not over the documents two top-10s
happen to share (Kendall's τ on the shared documents called a pair that shares 1 of 10 documents "–", and one
whose top 10 took in new documents "1.00").

* :func:`rbo` — rank-biased overlap (Webber, Moffat & Zobel, TOIS 2010), extrapolated to the depth both rankings
  reach: 1 for identical rankings, 0 for disjoint ones, the top weighted by ``p`` (0.9: the first ten ranks carry
  ~86% of the weight).
* :func:`tau_ap` — AP correlation (Yilmaz, Aslam & Robertson, SIGIR 2008), DiffIR's choice: Kendall's τ with
  disagreements near the top counting more; over the union of both rankings, a document one ranking lacks placed
  below everything it holds (so a new document entering the top costs agreement).
"""

from __future__ import annotations

from typing import Sequence

CONTRAST_DEPTH = 100  # the ranks compared; at p 0.9 the ranks beyond carry 0.003% of RBO's weight


def rbo(a: Sequence[str], b: Sequence[str], p: float = 0.9) -> float | None:
    """Extrapolated RBO of two rankings over the first ``k = min(len(a), len(b))`` ranks:
    ``(X_k / k)·p^k + ((1 − p)/p)·Σ_{d=1..k} (X_d / d)·p^d`` with ``X_d`` the overlap of the two top-``d`` lists;
    ``None`` when either ranking is empty."""
    k = min(len(a), len(b))
    if k == 0:
        return None
    seen_a, seen_b, overlap, total = set(), set(), 0, 0.0
    for d in range(1, k + 1):
        x, y = a[d - 1], b[d - 1]
        if x == y:
            overlap += 1
        else:
            overlap += (x in seen_b) + (y in seen_a)
        seen_a.add(x)
        seen_b.add(y)
        total += overlap / d * p ** d
    return overlap / k * p ** k + (1 - p) / p * total


def tau_ap(reference: Sequence[str], other: Sequence[str]) -> float | None:
    """AP correlation of ``other`` against ``reference`` over the union of both: ``2/(N−1)·Σ_{i=2..N} C(i)/(i−1)
    − 1``, where ``C(i)`` counts the documents ``other`` ranks above its ``i``-th that ``reference`` ranks above it
    too (a document ``reference`` lacks is below all it holds; two it lacks are not ordered, so not counted);
    ``other``'s missing documents follow its own, in ``reference``'s order.  ``None`` when either ranking is empty
    (there is no order to agree with: not "identical", not "reversed") or under two documents."""
    if not reference or not other:
        return None
    union = list(other) + [d for d in reference if d not in set(other)]
    n = len(union)
    if n < 2:
        return None
    import bisect

    where = {d: i for i, d in enumerate(reference)}
    missing = len(reference)
    ranks = [where.get(d, missing) for d in union]
    above = [ranks[0]]  # the reference ranks of the documents seen so far, sorted: C(i) is a bisection
    total = 0.0
    for i in range(1, n):
        total += bisect.bisect_left(above, ranks[i]) / i
        bisect.insort(above, ranks[i])
    return 2 / (n - 1) * total - 1
