"""Small input files the tests write: a BEIR folder and a TREC run, each in one place; and the results page's
per-query detail decoded as the browser decodes it."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path


def write_beir(folder: Path, docs=None, queries=None, qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\n") -> str:
    """A BEIR folder of raw JSON lines (two documents and one query unless given) and a test qrels file."""
    folder.mkdir(parents=True, exist_ok=True)
    docs = docs or ['{"_id": "d1", "title": "lyme", "text": "lyme disease ticks"}',
                    '{"_id": "d2", "title": "flu", "text": "influenza season"}']
    (folder / "corpus.jsonl").write_text("\n".join(docs) + "\n")
    (folder / "queries.jsonl").write_text("\n".join(queries or ['{"_id": "q1", "text": "lyme ticks"}']) + "\n")
    (folder / "qrels").mkdir(exist_ok=True)
    (folder / "qrels" / "test.tsv").write_text(qrels)
    return str(folder)


def write_trec(path: Path, rows) -> str:
    """A run file of ``(query, document, score)`` rows, ranked in the order given, tag ``t``."""
    path.write_text("".join(f"{q} Q0 {d} {i + 1} {s} t\n" for i, (q, d, s) in enumerate(rows)))
    return str(path)


def decode_details(data: dict) -> tuple[dict, dict]:
    """The per-query detail and the documents' fields the page's chunks hold, decoded (what the browser does)."""
    queries: dict = {}
    docs: dict = {}
    for chunk in data["chunks"]:
        part = json.loads(gzip.decompress(base64.b64decode(chunk)))
        queries.update(part["queries"])
        docs.update(part["docs"])
    return queries, docs
