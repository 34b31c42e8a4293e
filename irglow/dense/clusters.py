"""Topic clusters of a collection's queries, for the results browser's "why does a run win" breakdown.

As the Neural-IR-Explorer does, queries are grouped by what they are about: each query encoded with a sentence
encoder (all-MiniLM-L6-v2, shipped offline), k-means in faiss on the normalised vectors (seeded: the same
queries give the same clusters), and each cluster named by its most distinctive words — frequent in the cluster,
rare in the others (class-based TF-IDF, as BERTopic names topics).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Mapping

import numpy as np

# Lucene's English stop set, plus question words queries are full of: a topic is not named "what" or "does"
STOPWORDS = frozenset("a an and are as at be but by for if in into is it no not of on or such that the their then "
                      "there these they this to was will with what which who whom how why when where does do did "
                      "can could should would may might have has had been being from about than more most".split())
_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)


def default_clusters(n_queries: int) -> int:
    """About one cluster per 25 queries, between 2 and 12: groups large enough for a mean Δ to say something."""
    return max(2, min(12, round(n_queries / 25)))


def cluster_labels(texts: Mapping[str, str], assignment: Mapping[str, int], words: int = 3) -> dict[int, str]:
    """Each cluster's ``words`` most distinctive words: count in the cluster × log(1 + clusters / clusters with it)."""
    counts: dict[int, Counter] = {}
    for q, c in assignment.items():
        counts.setdefault(c, Counter()).update(w for w in (x.lower() for x in _WORD.findall(texts[q]))
                                               if w not in STOPWORDS)
    k = len(counts)
    spread = Counter(w for c in counts.values() for w in c)
    out = {}
    for c, counter in counts.items():
        scored = sorted(counter, key=lambda w: (-counter[w] * math.log(1 + k / spread[w]), w))
        out[c] = " · ".join(scored[:words]) or f"cluster {c + 1}"
    return out


def query_clusters(texts: Mapping[str, str], k: int | None = None, model: str = "default",
                   seed: int = 0) -> dict[str, str]:
    """query id → its cluster's label ("vitamin · deficiency · bone"); {} for fewer than 4 queries."""
    import faiss

    from irglow.dense.encode import MeanPoolEncoder, encode

    qids = [q for q in texts if texts[q].strip()]
    if len(qids) < 4:
        return {}
    k = min(k or default_clusters(len(qids)), len(qids) // 2)
    vectors = encode([texts[q] for q in qids], MeanPoolEncoder(model, max_tokens=64), batch_size=64,
                     desc="query clusters").astype(np.float32)
    kmeans = faiss.Kmeans(vectors.shape[1], k, niter=25, seed=seed, spherical=True, verbose=False,
                          min_points_per_centroid=1)
    kmeans.train(vectors)
    _, assigned = kmeans.index.search(vectors, 1)
    assignment = {q: int(c) for q, c in zip(qids, assigned[:, 0])}
    labels = cluster_labels(texts, assignment)
    seen: Counter = Counter()
    names = dict(labels)
    for c, name in sorted(labels.items()):  # two clusters with one name stay apart
        seen[name] += 1
        if seen[name] > 1:
            names[c] = f"{name} ({seen[name]})"
    return {q: names[c] for q, c in assignment.items()}
