"""Lucene query objects built through pyjnius: bag of words, BM25F, weighted terms and phrases.

Queries are analyzed in Python with the index's own analyzer and handed to Lucene as objects,
never as strings Lucene would re-parse, so what is scored is exactly what irglow weighted.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

from irglow.index.jvm import autoclass, bulk_search_available


@lru_cache(maxsize=None)
def J(name: str):  # noqa: N802 (Java class handle)
    return autoclass(name)


def bytes_ref(term: str):
    # A Python str would pick BytesRef(CharSequence) in some pyjnius versions; bytes is unambiguous.
    return J("org.apache.lucene.util.BytesRef")(term.encode("utf-8"))


def term_query(field: str, term: str):
    return J("org.apache.lucene.search.TermQuery")(J("org.apache.lucene.index.Term")(field, bytes_ref(term)))


def boost(query, weight: float):
    return J("org.apache.lucene.search.BoostQuery")(query, float(weight))


def phrase_query(field: str, terms: Sequence[str], positions: Sequence[int] | None = None, slop: int = 0):
    """Exact phrase: term i at position ``positions[i]`` (default 0, 1, 2 …)."""
    builder = J("org.apache.lucene.search.PhraseQuery$Builder")()
    builder.setSlop(int(slop))
    Term = J("org.apache.lucene.index.Term")
    for i, t in enumerate(terms):
        builder.add(Term(field, bytes_ref(t)), int(positions[i] if positions is not None else i))
    return builder.build()


def disjunction(clauses: Iterable) -> object | None:
    """OR of the clauses (Lucene BooleanQuery, SHOULD); ``None`` if there are none."""
    clauses = list(clauses)
    if not clauses:
        return None
    BooleanQuery = J("org.apache.lucene.search.BooleanQuery")
    # a process-wide Lucene setting: only ever raised, since queries built now may be searched later (in bulk)
    if len(clauses) + 1 > BooleanQuery.getMaxClauseCount():
        BooleanQuery.setMaxClauseCount(len(clauses) + 1)
    builder = J("org.apache.lucene.search.BooleanQuery$Builder")()
    should = J("org.apache.lucene.search.BooleanClause$Occur").SHOULD
    for c in clauses:
        builder.add(c, should)
    return builder.build()


def bag_of_words(terms: Sequence[str], field: str = "contents"):
    """Anserini's BagOfWordsQueryGenerator: each distinct term, boosted by its count (built in one JNI
    call by irglow's bulk helper where it is compiled, clause by clause otherwise: the same query)."""
    counts = Counter(terms)
    if not counts:
        return None
    if bulk_search_available():
        return J("irglow.BulkSearch").bagOfWords(field, list(counts), [float(c) for c in counts.values()])
    return disjunction(boost(term_query(field, t), c) if c != 1 else term_query(field, t) for t, c in counts.items())


def bm25f(terms: Sequence[str], field_weights: Mapping[str, float]):
    """BM25F over ``field_weights`` with Lucene's CombinedFieldQuery, one per distinct term.

    CombinedFieldQuery sums weighted term frequencies and lengths across fields before
    saturation (Robertson & Zaragoza's BM25F); Lucene requires every weight to be ≥ 1.
    """
    bad = {f: w for f, w in field_weights.items() if w < 1.0}
    if bad:
        raise ValueError(f"Lucene's CombinedFieldQuery needs field weights >= 1, got {bad}; scale all weights up instead")
    counts = Counter(terms)
    clauses = []
    for t, c in counts.items():
        builder = J("org.apache.lucene.sandbox.search.CombinedFieldQuery$Builder")()
        for f, w in field_weights.items():
            builder.addField(f, float(w))
        builder.addTerm(bytes_ref(t))
        q = builder.build()
        clauses.append(boost(q, c) if c != 1 else q)
    return disjunction(clauses)


def within(query, field: str, values: Sequence[str]):
    """``query`` scored as Lucene scores it, over only the documents whose ``field`` holds one of ``values``
    (a FILTER clause adds nothing to the score): re-scoring a given candidate list with a weighted query, each
    candidate the query does not match scoring 0."""
    builder = J("org.apache.lucene.search.BooleanQuery$Builder")()
    occur = J("org.apache.lucene.search.BooleanClause$Occur")
    refs = J("java.util.ArrayList")()
    for v in values:
        refs.add(bytes_ref(v))
    builder.add(J("org.apache.lucene.search.TermInSetQuery")(field, refs), occur.FILTER)
    if query is not None:
        builder.add(query, occur.SHOULD)
    return builder.build()
