"""Lexical searchers (irglow.lexical.searchers): BM25's direct Lucene path equals Pyserini's batch_search; odd queries and texts are handled."""

import pytest

from irglow.data.records import Qrel, Query, make_document
from irglow.index.lucene_index import IndexConfig, build_index
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
from irglow.models.twbert.terms import extract_terms


@pytest.fixture(scope="module")
def ties_index(tmp_path_factory):
    return build_index(TiesCollection(), IndexConfig(threads=1), root=tmp_path_factory.mktemp("ties"))


class TiesCollection:
    """Twins (identical texts) give tied scores; one document has a field first seen late."""

    name = "ties-v1"
    fields = ("title", "body")

    def __init__(self):
        body = ["apple banana apple", "banana cherry", "cherry cherry date", "apple date fig", "fig fig fig apple"]
        self.docs = []
        for i, text in enumerate(body * 2):  # every text twice → tied scores
            self.docs.append(make_document(f"d{i:02d}", title="fruit" if i % 3 else None, body=text))
        self.docs.append(make_document("zz", body="grape"))

    def docs_iter(self):
        yield from self.docs

    def docs_count(self):
        return len(self.docs)

    def queries(self, split="test"):
        return [Query("q1", "apple apple banana"), Query("q2", "cherry fig fig fig"), Query("q3", "fruit date"),
                Query("q4", "the of"), Query("q5", "grape")]

    def qrels(self, split="test"):
        return [Qrel("q1", "d00", 1)]


def test_bm25_direct_path_equals_pyserini_batch_search(ties_index):
    """irglow's bag-of-words search in Java gives Pyserini's batch_search hits exactly: the same documents in the
    same order with the same scores (Anserini's: ties by id ascending, rounded to 4 decimals, the i-th tied score
    lowered by i·1e-6)."""
    queries = TiesCollection().queries()
    ours = LexicalSearcher(ties_index, LexicalConfig("bm25", depth=100)).search(queries)
    searcher = ties_index.searcher()
    searcher.set_bm25(0.9, 0.4)
    live = [q for q in queries if ties_index.analyze(q.text)]
    hits = searcher.batch_search([q.text for q in live], [q.query_id for q in live], k=100, threads=1)
    n_ties = 0
    for q in live:
        theirs = [(h.docid, float(h.score)) for h in hits[q.query_id]]
        assert ours.ranking[q.query_id] == theirs
        scores = [s for _, s in theirs]
        n_ties += sum(round(x, 4) == round(y, 4) for x, y in zip(scores, scores[1:]))
    assert n_ties >= 3
    assert ours.ranking["q4"] == []  # stopwords only: empty, not an error


def test_query_over_the_clause_limit_costs_nothing_else(ties_index):
    huge = " ".join(f"w{i}" for i in range(1500)) + " apple"
    queries = [Query("big", huge), Query("q1", "apple banana")]
    for cfg in (LexicalConfig("bm25"), LexicalConfig("bm25", rm3=True)):
        run = LexicalSearcher(ties_index, cfg).search(queries)
        assert len(run.ranking["big"]) == 6 and len(run.ranking["q1"]) > 0


def test_surface_spans_survive_characters_outside_the_bmp(ties_index):
    # 😀 and 𠀋 are two UTF-16 units each; Lucene's offsets count units, Python counts characters
    terms = extract_terms(ties_index, "q", "😀 𠀋 Apple pie")
    assert terms.unigrams == ["😀", "𠀋", "appl", "pie"]
    assert terms.unigram_surface == ["😀", "𠀋", "Apple", "pie"]
    assert terms.bigram_surface == ["😀 𠀋", "𠀋 Apple", "Apple pie"]


@pytest.mark.parametrize("system", ["bm25", "bm25f", "tfidf"])
def test_bulk_hits_equal_hit_by_hit_reading_byte_for_byte(ties_index, tmp_path, monkeypatch, system):
    """Issue 23: irglow.BulkSearch (primitive arrays, two threads) and the per-hit fallback give the same run
    file, ties and repeated query terms included."""
    from irglow.index.jvm import bulk_search_available, find_java

    if (find_java().home / "bin" / "javac").exists():
        assert bulk_search_available()  # a JDK with javac compiles the helper: the fast path is the one in use
    if not bulk_search_available():
        pytest.skip("this Java runtime has no javac: only the per-hit path exists")
    queries = TiesCollection().queries() * 3  # the same texts under other ids exercise every thread
    queries = [Query(f"{q.query_id}-{i}", q.text) for i, q in enumerate(queries)]
    assert _bulk_and_per_hit(ties_index, queries, system, tmp_path, monkeypatch).count(b"\n") > 20


def _bulk_and_per_hit(index, queries, system, tmp_path, monkeypatch, depth: int = 7) -> bytes:
    """The run file of the bulk path (hits packed in trec_eval's order in Java) and of the per-hit path (each hit
    through JNI, sorted by ``Run``): asserted byte-identical, returned."""
    import irglow.lexical.searchers as searchers

    runs = {}
    for bulk in (True, False):
        if not bulk:
            monkeypatch.setattr(searchers, "bulk_search_available", lambda: False)
        run = LexicalSearcher(index, LexicalConfig(system, depth=depth, threads=2)).search(queries, tag=system)
        runs[bulk] = run.write(tmp_path / f"{system}-{bulk}.run").read_bytes()
        monkeypatch.undo()
    assert runs[True] == runs[False]
    return runs[True]


class _TiedIds:
    """Eight documents with one text (every score tied) and ids whose orders differ: numbers as text ("d10" <
    "d9"), case, an accent, a private-use character and one outside the BMP ("𐀀" sorts after "\ue000" by code
    point, as Python and trec_eval order them, but before it in Java's UTF-16 order)."""

    name = "tied-ids-v1"
    fields = ("body",)
    ids = ["d9", "d10", "D1", "é", "z", "\ue000", "𐀀", "a b"[0] + "_b"]

    def docs_iter(self):
        for i in self.ids:
            yield make_document(i, body="apple pie")

    def docs_count(self):
        return len(self.ids)


@pytest.mark.parametrize("system", ["bm25", "bm25f", "tfidf"])
def test_ties_leave_java_in_anserinis_order_by_code_point(tmp_path, monkeypatch, system):
    """Issue 50 item 2: tied documents in Anserini's order, document id ascending in code point order (Lucene's
    byte order of the id field), each tied score lowered by 1e-6 so that trec_eval keeps that order; the bulk
    path and the per-hit path (Anserini's arithmetic redone in Python) write the same file."""
    index = build_index(_TiedIds(), IndexConfig(threads=1), root=tmp_path / "data")
    text = _bulk_and_per_hit(index, [Query("q1", "apple"), Query("q2", "pie apple")], system, tmp_path, monkeypatch,
                             depth=10)
    lines = [line.split() for line in text.decode("utf-8").splitlines() if line.startswith("q1 ")]
    assert [x[2] for x in lines] == ["D1", "a_b", "d10", "d9", "z", "é", "\ue000", "𐀀"] == sorted(_TiedIds.ids)
    scores = [float(x[4]) for x in lines]
    assert all(a - b == pytest.approx(1e-6, abs=3e-7) for a, b in zip(scores, scores[1:]))


def test_the_id_table_written_with_the_index_equals_its_stored_fields(ties_index):
    """Issue 60: doc numbers → ids, ids → doc numbers and the tie order come from flat files written once with the
    index and memory-mapped, equal to what Lucene's stored fields say."""
    import numpy as np

    from irglow.index.id_table import FOLDER, IdTable
    from irglow.index.lucene_index import stored_ids

    stored = ties_index.lucene_reader.storedFields()
    expected = [stored.document(i).get("id") for i in range(ties_index.lucene_reader.maxDoc())]
    assert (ties_index.path / FOLDER / "format.json").is_file()  # written by build_index, not on first use
    table = IdTable(ties_index.path / FOLDER)
    assert list(table) == expected == stored_ids(ties_index) and len(table) == len(expected)
    assert table.take(np.array([3, 0, 3])) == [expected[3], expected[0], expected[3]]
    assert all(table.position(d) == i for i, d in enumerate(expected)) and table.position("no such id") is None
    assert table.missing(["no such id", expected[1]]) == ["no such id"]
    by_code_point = sorted(range(len(expected)), key=lambda i: expected[i].encode("utf-8"))
    assert [int(table.tie_rank[i]) for i in by_code_point] == list(range(len(expected)))
    assert list(ties_index.tie_order.rank) == [int(r) for r in table.tie_rank]  # what Java read from the file


@pytest.mark.parametrize("system,rm3", [("bm25", True), ("bm25-mf", False), ("bm25-mf", True)])
def test_pyserini_systems_in_bulk_equal_batch_search_byte_for_byte(ties_index, tmp_path, monkeypatch, system, rm3):
    """Issue 23: RM3 and bm25-mf through irglow.BulkSearch.pyserini (Anserini's query, expansion and score
    rounding; hits as arrays on two threads) write the run file Pyserini's batch_search gives, rounded ties
    included."""
    import irglow.lexical.searchers as searchers
    from irglow.index.jvm import bulk_search_available

    if not bulk_search_available():
        pytest.skip("this Java runtime has no javac: these systems go through Pyserini only")
    queries = [Query(f"{q.query_id}-{i}", q.text) for i, q in enumerate(TiesCollection().queries() * 3)]
    weights = {"title": 2.0, "body": 1.0} if system == "bm25-mf" else {}
    runs = {}
    for bulk in (True, False):
        if not bulk:
            monkeypatch.setattr(searchers, "bulk_search_available", lambda: False)
        cfg = LexicalConfig(system, rm3=rm3, rm3_fb_docs=3, rm3_fb_terms=4, depth=7, threads=2, field_weights=weights)
        run = LexicalSearcher(ties_index, cfg).search(queries, tag=system)
        runs[bulk] = run.write(tmp_path / f"{system}-{rm3}-{bulk}.run").read_bytes()
        monkeypatch.undo()
    assert runs[True] == runs[False] and runs[True].count(b"\n") > 20
    if rm3:  # the expansion did something: RM3 reaches documents the query alone does not
        plain = LexicalSearcher(ties_index, LexicalConfig(system, depth=7, field_weights=weights)).search(queries,
                                                                                                      tag=system)
        assert plain.write(tmp_path / "plain.run").read_bytes() != runs[True]
