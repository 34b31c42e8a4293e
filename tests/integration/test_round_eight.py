"""Issue 80 (trust round eight), the items that need Java, an index or a pipeline: tables damaged at their own size,
the JVM's start-up cache damaged or unrecordable, one writer per output folder."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
import pytest

from irglow.data.records import Qrel, Query, make_document
from irglow.index.lucene_index import IndexConfig, LuceneIndex, build_index
from irglow.index.stats import CollectionStats
from irglow.lexical.searchers import run_lexical


class Docs:
    def __init__(self, docs, name):
        self.docs, self.fields, self.name = docs, ("title", "body"), name

    def docs_iter(self):
        yield from self.docs

    def queries(self, split="test"):
        return [Query("q1", "apple"), Query("q2", "banana")]

    def qrels(self, split="test"):
        return [Qrel("q1", "d58", 1)]


def _flip_same_size(path: Path, a: bytes, b: bytes) -> None:
    """Swap two equally long byte strings in a file: its size stays, its content does not."""
    raw = path.read_bytes()
    assert len(a) == len(b) and raw.count(a) == 1 and raw.count(b) == 1
    path.write_bytes(raw.replace(a, b"\0" * len(a)).replace(b, a).replace(b"\0" * len(a), b))


# -- 4: an id table damaged at its own size ----------------------------------------------------------------------------
def test_an_id_table_damaged_at_equal_size_is_found_and_written_again(tmp_path, caplog):
    """Two ids swapped in ``ids.utf8`` kept every size and end point: the run said d58 for d59, exit 0.  The digest
    recorded at build is checked when a process first opens the table: it is written again from the index."""
    coll = Docs([make_document("d58", body="apple apple"), make_document("d59", body="banana")], "swap")
    index = build_index(coll, IndexConfig(threads=1), root=tmp_path)
    table = index.path / "irglow-ids" / "ids.utf8"
    assert table.read_bytes() == b"d58d59"
    _flip_same_size(table, b"d58", b"d59")
    with caplog.at_level(logging.WARNING):
        again = LuceneIndex.open(index.path)
        run = run_lexical(again, coll.queries(), "bm25", k1=0.9, b=0.4)
    assert "ids.utf8 differs from the digest recorded when the table was built" in caplog.text
    assert [d for d, _ in run.ranking["q1"]] == ["d58"] and [d for d, _ in run.ranking["q2"]] == ["d59"]
    assert table.read_bytes() == b"d58d59"


def test_a_statistics_column_damaged_at_equal_size_is_exported_again(tmp_path, caplog):
    """The per-document lengths every model reads (``len_body``), damaged at their own size, were read as they were;
    the export's digests find them and the statistics are exported again."""
    coll = Docs([make_document("d1", body="apple apple apple"), make_document("d2", body="banana")], "lengths")
    index = build_index(coll, IndexConfig(threads=1), root=tmp_path)
    stats = CollectionStats.load(index)
    column = stats.path / "docs" / "len_body.npy"
    expected = np.load(column).tolist()
    assert expected == [3, 1]
    values = np.load(column)
    values[:] = values[::-1]
    np.save(column, values)  # same size, two lengths swapped
    with caplog.at_level(logging.WARNING):
        again = CollectionStats.load(index)
    assert "len_body.npy differs from the digest recorded when it was exported" in caplog.text
    assert np.asarray(again.docs["len_body"]).tolist() == expected


def test_a_document_store_table_damaged_at_equal_size_is_scanned_again(tmp_path, monkeypatch, caplog):
    """The store's offsets, two swapped at the same size, read one document's line for another's (the id check then
    called a present document missing): the recorded digests find it and the corpus is scanned again."""
    from irglow.data.beir import BeirCollection
    from irglow.data.docstore import docs_store
    from tests.files import write_beir

    monkeypatch.setenv("IRGLOW_DATA", str(tmp_path / "data"))
    folder = Path(write_beir(tmp_path / "c"))
    assert [d.doc_id for d in docs_store(BeirCollection(folder)).get_many(["d1", "d2"])] == ["d1", "d2"]
    (offsets,) = (tmp_path / "data").rglob("offsets.npy")
    values = np.load(offsets)
    values[:] = values[::-1]
    np.save(offsets, values)
    with caplog.at_level(logging.WARNING):
        docs = docs_store(BeirCollection(folder)).get_many(["d1", "d2"])
    assert "differs from the digest recorded when it was built; the corpus is scanned again" in caplog.text
    assert [d.doc_id for d in docs] == ["d1", "d2"]
