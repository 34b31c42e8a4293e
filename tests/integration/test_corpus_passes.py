"""Issue 60: nothing a process does before its first query grows with the corpus.  Once the index is built, a
search and an evaluation parse no document of the corpus — the field names, the ids by Lucene number, the tie
order, the document store's offsets and the qrels check all come from tables written once and memory-mapped —
and a judgment naming a document the corpus lacks is still reported (a look-up per judgment, not a scan)."""

from __future__ import annotations

import json
import logging

import pytest

from irglow.cli import main
from irglow.data.beir import BeirCollection
from tests.files import write_beir


@pytest.fixture
def counted(monkeypatch):
    """Every corpus record parsed (``docs_iter`` and the document store's pass both parse through it)."""
    parsed: list[int] = []
    original = BeirCollection._document

    def document(self, n, line, dropped=None):
        parsed.append(n)
        return original(self, n, line) if dropped is None else original(self, n, line, dropped)

    monkeypatch.setattr(BeirCollection, "_document", document)
    return parsed


def test_after_indexing_search_and_eval_parse_no_document(tmp_path, counted, caplog, monkeypatch):
    docs = [json.dumps({"_id": f"d{i}", "title": f"page {i}", "text": f"lyme disease ticks {i}"}) for i in range(40)]
    folder = write_beir(tmp_path / "c", docs, qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\tgone\t1\n")
    data = str(tmp_path / "data")
    monkeypatch.setenv("IRGLOW_DATA", data)  # where `irglow eval`, given no --data-dir, finds the kept tables
    assert main(["index", folder, "--data-dir", data]) == 0
    assert counted  # indexing reads the corpus (the export, and the store's one pass that learns the fields)
    counted.clear()
    with caplog.at_level(logging.WARNING):
        assert main(["search", folder, "--split", "test", "-o", str(tmp_path / "r.run"), "--data-dir", data]) == 0
        assert main(["eval", str(tmp_path / "r.run"), "--data", folder, "--split", "test", "-m", "P@1"]) == 0
        assert main(["search", folder, "--split", "test", "--system", "bm25f", "-o", str(tmp_path / "f.run"),
                     "--data-dir", data]) == 0
    assert counted == []  # the corpus was never read after indexing
    assert "1 judgments (1 queries) name documents missing from corpus.jsonl" in caplog.text
    assert BeirCollection(folder).fields == ("title", "text")  # from the store's kept tables, still no parse
    assert counted == []
