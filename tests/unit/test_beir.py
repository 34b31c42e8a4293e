"""BEIR folders (irglow.data.beir): names keyed on content, refused records, discovered fields."""

from __future__ import annotations

import json
import logging
import os

import pytest

from irglow.data.beir import BeirCollection
from irglow.data.trec import FormatError, read_topics


def _beir(folder, corpus_lines, queries=None, qrels="q1\td1\t1\n"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(line + "\n" for line in corpus_lines))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in (queries or [{"_id": "q1", "text": "x"}])))
    (folder / "qrels").mkdir(exist_ok=True)
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    return folder


def _hardening_beir(tmp_path, docs, queries=(), qrels="query-id\tcorpus-id\tscore\n"):
    (tmp_path / "qrels").mkdir(parents=True, exist_ok=True)
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (tmp_path / "qrels" / "test.tsv").write_text(qrels)
    return BeirCollection(tmp_path)


# 2 — the index cache keys on content, not on path, size and mtime
def test_beir_name_changes_with_content_even_when_size_and_mtime_are_kept(tmp_path):
    from irglow.data.beir import BeirCollection

    folder = _beir(tmp_path / "c", ['{"_id": "d1", "text": "lemon tart"}'])
    corpus = folder / "corpus.jsonl"
    before, stat = BeirCollection(folder).name, corpus.stat()
    corpus.write_text(corpus.read_text().replace("lemon", "zebra"))  # same size
    os.utime(corpus, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # as cp -p, rsync -a, tar do
    assert corpus.stat().st_size == stat.st_size and corpus.stat().st_mtime_ns == stat.st_mtime_ns
    assert BeirCollection(folder).name != before
    corpus.write_text(corpus.read_text().replace("zebra", "lemon"))
    assert BeirCollection(folder).name == before  # the same content is the same collection


# 12 — corpus oddities
@pytest.mark.parametrize("line,message", [
    ('{"_id": null, "text": "a"}', "document id must be a string or an integer, not None"),
    ('{"_id": true, "text": "a"}', "not True"),
    ('{"_id": 2.0, "text": "a"}', "not 2.0"),
    ('[{"_id": "d1", "text": "a"}]', "expected one JSON object per line"),
    ('{"text": "a"}', "no '_id'"),
    ('{"_id": "' + "x" * 40000 + '", "text": "a"}', "Lucene's limit for an indexed term is 32766"),
])
def test_corpus_records_that_would_be_mangled_are_refused_by_line(tmp_path, line, message):
    from irglow.data.beir import BeirCollection

    folder = _beir(tmp_path / "c", ['{"_id": "d0", "text": "fine"}', line])
    with pytest.raises(FormatError, match="corpus.jsonl:2: ") as e:
        list(BeirCollection(folder).docs_iter())
    assert message in str(e.value)


def test_integer_ids_are_kept_and_non_text_fields_counted(tmp_path, caplog):
    from irglow.data.beir import BeirCollection

    folder = _beir(tmp_path / "c", ['{"_id": 7, "text": "a", "year": 2001}', '{"_id": "d8", "text": "b", "year": 1999}',
                                    '{"_id": "d9", "text": "c", "meta": {"k": 1}}'])
    with caplog.at_level(logging.WARNING):
        docs = list(BeirCollection(folder).docs_iter())
    assert [d.doc_id for d in docs] == ["7", "d8", "d9"] and all(set(d.fields) == {"text"} for d in docs)
    assert "field 'year' is not text in 2 records" in caplog.text and "field 'meta' is not text in 1 records" in caplog.text


def test_beir_fields_are_discovered_over_the_whole_corpus(tmp_path):
    docs = [{"_id": f"d{i}", "title": "t", "text": "x"} for i in range(1005)]
    docs.append({"_id": "late", "abstract": "zanzibar quokka"})
    assert _hardening_beir(tmp_path, docs).fields == ("title", "text", "abstract")


def test_beir_duplicate_and_bad_document_ids_stop_with_lines(tmp_path):
    coll = _hardening_beir(tmp_path, [{"_id": "d1", "text": "a"}, {"_id": "d2", "text": "b"}, {"_id": "d1", "text": "c"}])
    with pytest.raises(FormatError, match=r"corpus.jsonl:3: duplicate document id 'd1' \(first on line 1\)"):
        list(coll.docs_iter())
    coll = _hardening_beir(tmp_path, [{"_id": "d 2", "text": "a"}])
    with pytest.raises(FormatError, match=r"corpus.jsonl:1: document id must be non-empty without whitespace"):
        list(coll.docs_iter())


def test_beir_null_query_text_and_dangling_judgments(tmp_path, caplog):
    coll = _hardening_beir(tmp_path, [{"_id": "d1", "text": "a"}],
                 [{"_id": "q1", "text": None}, {"_id": "q2", "text": "fine"}],
                 "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\tgone\t1\nq9\td1\t1\n")
    with caplog.at_level(logging.WARNING):
        queries = coll.queries("test")
    assert [(q.query_id, q.text) for q in queries] == [("q1", ""), ("q2", "fine")]
    assert "query q1 has no text" in caplog.text
    assert "1 judged queries are not in queries.jsonl" in caplog.text
    assert "1 judgments (1 queries) name documents missing from corpus.jsonl" in caplog.text
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"_id": "q b", "text": "x"}\n')
    with pytest.raises(FormatError, match="query id must be non-empty"):
        read_topics(bad)
