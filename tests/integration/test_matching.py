"""Issue 39 item 3: the words a lexical ranker matched, through the index's own analyzer, and each term's share of
Lucene's score."""

from __future__ import annotations

import math

import pytest

from irglow.data.records import Qrel, Query, make_document


class _Dogs:
    name = "dogs-v1"
    fields = ("title", "text")

    def docs_iter(self):
        yield make_document("d1", title="Domesticated dogs", text="The domestication of dogs is old.")
        yield make_document("d2", title="Cats", text="Cats were domesticated later; dogs' owners disagree.")
        yield make_document("d3", title="Wolves", text="Wolves are wild.")

    def docs_count(self):
        return 3

    def queries(self, split="test"):
        return [Query("q1", "Domestication of dogs")]

    def qrels(self, split="test"):
        return [Qrel("q1", "d1", 1)]


@pytest.fixture(scope="module")
def dogs(tmp_path_factory):
    from irglow.index.lucene_index import IndexConfig, build_index
    from irglow.index.stats import CollectionStats
    from irglow.eval.matching import TermMatcher

    index = build_index(_Dogs(), IndexConfig(threads=1), root=tmp_path_factory.mktemp("dogs"))
    return TermMatcher(index, CollectionStats.load(index), 0.9, 0.4)


def test_stemmed_variants_are_matched_and_stop_words_are_not(dogs):
    terms = dogs.query_terms("Domestication of dogs")
    assert terms == ["domest", "dog"]  # Porter stems both; "of" is a stop word
    words = dogs.surface(["Domesticated dogs", "The domestication of dogs is old.", "dogs' owners"], terms)
    assert words == {"domesticated": "domest", "domestication": "domest", "dogs": "dog"}
    assert dogs.terms_of_words(["of", "The"]) == {"of": None, "the": None}


def test_term_contributions_add_up_to_lucenes_bm25_score(tiny_index):
    """Summed over a bag-of-words query's terms, the per-term BM25 the page shades by is the score Lucene gave."""
    from irglow.eval.matching import TermMatcher
    from irglow.index.stats import CollectionStats
    from irglow.lexical.searchers import run_lexical

    matcher = TermMatcher(tiny_index, CollectionStats.load(tiny_index), 0.9, 0.4)
    queries = [Query("q1", "apple"), Query("q2", "cherry fruit"), Query("q4", "banana cherry date")]
    run = run_lexical(tiny_index, queries, "bm25", k1=0.9, b=0.4)
    checked = 0
    for q in queries:
        terms = matcher.query_terms(q.text)
        for doc, score in run.ranking[q.query_id]:
            # the run's scores are Anserini's: Lucene's rounded to 4 decimals, a tied one lowered by i·1e-6
            assert sum(matcher.contributions(doc, terms).values()) == pytest.approx(score, abs=6e-5), (q, doc)
            checked += 1
    assert checked >= 6
    # by hand: "apple" occurs only in d1 (N 3, df 1): idf = ln(1 + 2.5/1.5) = 0.980829
    assert matcher.mean_idf({"q1": "apple", "q3": "the of and"}) == {"q1": pytest.approx(math.log(1 + 2.5 / 1.5)),
                                                                     "q3": None}
