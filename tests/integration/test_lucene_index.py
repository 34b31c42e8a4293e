"""Lucene indexes (irglow.index.lucene_index): indexes verified before they are cached, refused corpora, corrupt
cached indexes rebuilt; and exact scores on a three-document index, worked out by hand from the formulas Lucene 9
uses.

Bodies after analysis: d1 "appl banana appl" (3), d2 "banana cherri" (2), d3 "cherri cherri cherri date" (4);
contents = title + body: d1 4 tokens, d2 2, d3 6 → avgdl(contents) = 4.
"""

from __future__ import annotations

import logging
import math

import pytest

from irglow.data.records import Qrel, Query, make_document
from irglow.index.lucene_index import IndexConfig, build_index
from irglow.index.stats import CollectionStats
from irglow.lexical.searchers import run_lexical

K1, B = 0.9, 0.4


class Docs:
    def __init__(self, docs, fields=("title", "body"), name="docs-v1"):
        self.docs, self.fields, self.name = docs, fields, name

    def docs_iter(self):
        yield from self.docs

    def queries(self, split="test"):
        return [Query("q1", "apple")]

    def qrels(self, split="test"):
        return [Qrel("q1", "d1", 1)]


PYSERINI = dict(abs=6e-5)  # Anserini's batch_search rounds scores to 4 decimals


def bm25(tf, df, n, dl, avgdl):
    return math.log(1 + (n - df + 0.5) / (df + 0.5)) * tf / (tf + K1 * (1 - B + B * dl / avgdl))


def test_an_index_lucene_did_not_fill_is_never_cached(tmp_path, monkeypatch):
    import irglow.index.lucene_index as li

    coll = Docs([make_document("d1", body="apple"), make_document("d2", body="banana")], name="dropped")
    monkeypatch.setattr(li, "_lucene_doc_count", lambda path: 0)  # as when Anserini drops a batch
    with pytest.raises(RuntimeError, match="Lucene holds 0 documents, 2 non-empty ones were exported"):
        build_index(coll, IndexConfig(threads=1), root=tmp_path)
    assert not list((tmp_path / "indexes").glob("dropped*"))
    monkeypatch.undo()
    index = build_index(coll, IndexConfig(threads=1), root=tmp_path)
    assert index.meta["indexed"] == 2


def test_an_over_long_document_id_is_refused_before_indexing(tmp_path):
    coll = Docs([make_document("d1", body="apple"), make_document("x" * 40000, body="banana")], name="long")
    with pytest.raises(ValueError, match="id of 40000 bytes; Lucene's limit for a term is 32766"):
        build_index(coll, IndexConfig(threads=1), root=tmp_path)


@pytest.mark.parametrize("coll,config,message", [
    (Docs([make_document("d1", body="a")]), IndexConfig(fields=("nosuch",)), r"fields \['nosuch'\] are not in"),
    (Docs([]), IndexConfig(), "has no documents"),
    (Docs([make_document("d1", title="")]), IndexConfig(), "none of its 1 documents has text"),
    (Docs([make_document("d1", id="a", id_field="b")], fields=("id", "id_field")), IndexConfig(), "would collide"),
    (Docs([make_document("d1", body="a")]), IndexConfig(stemmer="porterx"), "index.stemmer = 'porterx'"),
])
def test_corpora_and_settings_that_give_an_empty_or_wrong_index_are_refused(tmp_path, coll, config, message):
    with pytest.raises(ValueError, match=message):
        build_index(coll, config, root=tmp_path)


def test_a_corrupt_cached_index_is_named_and_rebuilt(tmp_path, caplog):
    coll = Docs([make_document("d1", body="apple pie"), make_document("d2", body="banana")], name="corrupt")
    index = build_index(coll, IndexConfig(threads=1), root=tmp_path)
    for f in index.path.glob("*.si"):  # a segment file lost
        f.unlink()
    with caplog.at_level(logging.WARNING):
        again = build_index(coll, IndexConfig(threads=1), root=tmp_path)
    assert f"the cached index at {index.path} cannot be read" in caplog.text
    assert again.meta["indexed"] == 2 and list(again.path.glob("*.si"))


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
    docs = stats.docs  # rows by Lucene doc number, found through the index's id table
    d3, d2 = stats.row_of_doc["d3"], stats.row_of_doc["d2"]
    assert docs["len_contents"][d3] == 6 and docs["norm_contents"][d3] == 6
    assert docs["len_title"][d2] == 0 and docs["norm_title"][d2] == 0
    assert "doc_id" not in docs.columns and "d9" not in stats.row_of_doc and len(stats.row_of_doc) == 3


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
    # a lexical run's scores are Anserini's: Lucene's, rounded to 4 decimals
    assert scores["d1"] == pytest.approx(round(bm25(2 * 1, 2, 3, 2 * 1 + 3, avgdl), 4), abs=1e-6)
    assert scores["d3"] == pytest.approx(round(bm25(2 * 1, 2, 3, 2 * 2 + 4, avgdl), 4), abs=1e-6)
    with pytest.raises(ValueError, match=">= 1"):
        run_lexical(tiny_index, [Query("q", "fruit")], "bm25f", field_weights={"title": 0.5})


def test_tfidf_is_lucene_classic_similarity(tiny_index):
    run = run_lexical(tiny_index, [Query("q", "apple")], "tfidf")
    (doc, score), = run.ranking["q"]
    idf = 1 + math.log((3 + 1) / (1 + 1))  # 1 + ln((docCount+1)/(df+1))
    # Lucene 9: sqrt(tf) · idf · boost / sqrt(dl) — idf enters once (no queryNorm, no idf² since Lucene 8)
    # rounded to 4 decimals, as Anserini returns every lexical score
    assert doc == "d1" and score == pytest.approx(round(math.sqrt(2) * idf / math.sqrt(4), 4), abs=1e-6)


@pytest.mark.parametrize("system", ["bm25", "bm25-mf", "bm25f", "tfidf"])
def test_stopword_and_empty_queries_give_empty_rankings_with_warning(tiny_index, system, caplog):
    with caplog.at_level(logging.WARNING):
        run = run_lexical(tiny_index, [Query("s", "the of and"), Query("e", "   "), Query("ok", "banana")], system)
    assert run.ranking["s"] == [] and run.ranking["e"] == [] and len(run.ranking["ok"]) == 2
    assert "no searchable term" in caplog.text


def test_unicode_query_and_analyzer(tiny_index):
    assert tiny_index.analyze("Café APPLES, the") == ["café", "appl"]
    assert run_lexical(tiny_index, [Query("u", "ünïcødé ☃")], "bm25").ranking["u"] == []
