"""Exact scores on a three-document index, worked out by hand from the formulas Lucene 9 uses.

Bodies after analysis: d1 "appl banana appl" (3), d2 "banana cherri" (2), d3 "cherri cherri cherri date" (4);
contents = title + body: d1 4 tokens, d2 2, d3 6 → avgdl(contents) = 4.
"""

import logging
import math

import pytest

from irglow.data.records import Query
from irglow.index.stats import CollectionStats
from irglow.lexical.searchers import run_lexical

K1, B = 0.9, 0.4
PYSERINI = dict(abs=6e-5)  # Anserini's batch_search rounds scores to 4 decimals


def bm25(tf, df, n, dl, avgdl):
    return math.log(1 + (n - df + 0.5) / (df + 0.5)) * tf / (tf + K1 * (1 - B + B * dl / avgdl))


def test_index_fields_and_missing_title(tiny_index):
    assert tiny_index.fields == ("title", "body")
    stats = CollectionStats.load(tiny_index)
    assert stats.N == 3
    assert stats.doc_count("title") == 2  # d2 has no title
    assert stats.doc_count("body") == 3
    assert stats.avgdl("contents") == pytest.approx(12 / 3)
    assert stats.avgdl("body") == pytest.approx(9 / 3)
    assert (stats.df("cherri", "body"), stats.cf("cherri", "body")) == (2, 4)
    assert (stats.df("fruit", "title"), stats.df("fruit", "body")) == (2, 0)
    docs = stats.docs.set_index("doc_id")
    assert docs.loc["d3", "len_contents"] == 6 and docs.loc["d3", "norm_contents"] == 6
    assert docs.loc["d2", "len_title"] == 0 and docs.loc["d2", "norm_title"] == 0


def test_bm25_matches_hand_computation(tiny_index):
    run = run_lexical(tiny_index, [Query("q1", "apple"), Query("q2", "cherry fruit")], "bm25")
    (doc, score), = run.ranking["q1"]
    assert doc == "d1" and score == pytest.approx(bm25(2, 1, 3, 4, 4.0), **PYSERINI)
    q2 = dict(run.ranking["q2"])
    assert q2["d3"] == pytest.approx(bm25(3, 2, 3, 6, 4.0) + bm25(1, 2, 3, 6, 4.0), **PYSERINI)
    assert q2["d1"] == pytest.approx(bm25(1, 2, 3, 4, 4.0), **PYSERINI)
    assert q2["d2"] == pytest.approx(bm25(1, 2, 3, 2, 4.0), **PYSERINI)


def test_multifield_is_sum_of_per_field_bm25(tiny_index):
    run = run_lexical(tiny_index, [Query("q", "cherry fruit")], "bm25-mf", field_weights={"title": 2.0, "body": 1.0})
    scores = dict(run.ranking["q"])
    # title: docCount 2, avgdl 1.5 (d1 "fruit", d3 "stone fruit"); body: avgdl 3
    title_d3 = math.log(1 + (2 - 2 + 0.5) / 2.5) * 1 / (1 + K1 * (1 - B + B * 2 / 1.5))
    assert scores["d3"] == pytest.approx(2 * title_d3 + bm25(3, 2, 3, 4, 3.0), **PYSERINI)


def test_bm25f_combines_fields_before_saturation(tiny_index):
    run = run_lexical(tiny_index, [Query("q", "fruit")], "bm25f", field_weights={"title": 2.0, "body": 1.0})
    scores = dict(run.ranking["q"])
    # CombinedFieldQuery: tf' = Σ w_f tf_f, dl' = Σ w_f dl_f, avgdl' = Σ w_f sumTTF_f / max_f docCount_f
    # = (2·3 + 9) / 3, df = max_f df_f (2), N = max_f docCount_f (3)
    avgdl = (2 * 3 + 9) / 3
    assert scores["d1"] == pytest.approx(bm25(2 * 1, 2, 3, 2 * 1 + 3, avgdl), rel=1e-5)
    assert scores["d3"] == pytest.approx(bm25(2 * 1, 2, 3, 2 * 2 + 4, avgdl), rel=1e-5)
    with pytest.raises(ValueError, match=">= 1"):
        run_lexical(tiny_index, [Query("q", "fruit")], "bm25f", field_weights={"title": 0.5})


def test_tfidf_is_lucene_classic_similarity(tiny_index):
    run = run_lexical(tiny_index, [Query("q", "apple")], "tfidf")
    (doc, score), = run.ranking["q"]
    idf = 1 + math.log((3 + 1) / (1 + 1))  # 1 + ln((docCount+1)/(df+1))
    # Lucene 9: sqrt(tf) · idf · boost / sqrt(dl) — idf enters once (no queryNorm, no idf² since Lucene 8)
    assert doc == "d1" and score == pytest.approx(math.sqrt(2) * idf / math.sqrt(4), rel=1e-5)


@pytest.mark.parametrize("system", ["bm25", "bm25-mf", "bm25f", "tfidf"])
def test_stopword_and_empty_queries_give_empty_rankings_with_warning(tiny_index, system, caplog):
    with caplog.at_level(logging.WARNING):
        run = run_lexical(tiny_index, [Query("s", "the of and"), Query("e", "   "), Query("ok", "banana")], system)
    assert run.ranking["s"] == [] and run.ranking["e"] == [] and len(run.ranking["ok"]) == 2
    assert "no searchable term" in caplog.text


def test_unicode_query_and_analyzer(tiny_index):
    assert tiny_index.analyze("Café APPLES, the") == ["café", "appl"]
    assert run_lexical(tiny_index, [Query("u", "ünïcødé ☃")], "bm25").ranking["u"] == []
