"""TREC topic and qrels files, read strictly: a malformed line names its file and line."""

from __future__ import annotations

import re
from pathlib import Path

from irglow.data.records import Qrel, Query


class FormatError(ValueError):
    """A line of an input file could not be parsed; the message names the file and line."""

    def __init__(self, path: str | Path, line_no: int, problem: str, line: str):
        super().__init__(f"{path}:{line_no}: {problem}: {line.rstrip()[:200]!r}")
        self.path, self.line_no = str(path), line_no


def read_qrels(path: str | Path) -> list[Qrel]:
    """``qid iter docid rel`` lines (whitespace separated). A BEIR ``query-id corpus-id score`` TSV
    with its header is accepted too."""
    qrels: list[Qrel] = []
    beir = False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            parts = line.split()
            if n == 1 and parts[:2] == ["query-id", "corpus-id"]:
                beir = True
                continue
            if len(parts) == 4 and not beir:
                qid, _, did, rel = parts
            elif len(parts) == 3 and beir:
                qid, did, rel = parts
            else:
                expected = "3 columns (query-id corpus-id score)" if beir else "4 columns (qid iter docid rel)"
                raise FormatError(path, n, f"expected {expected}, got {len(parts)}", line)
            try:
                relevance = int(rel)
            except ValueError:
                try:
                    relevance = int(float(rel))
                except ValueError:
                    raise FormatError(path, n, f"relevance {rel!r} is not a number", line) from None
            qrels.append(Qrel(qid, did, relevance))
    return qrels


def write_qrels(qrels: list[Qrel], path: str | Path) -> Path:
    from irglow.utils.atomic import atomic_write_text

    text = "".join(f"{q.query_id} 0 {q.doc_id} {q.relevance}\n" for q in qrels)
    return atomic_write_text(path, text)


_TAG = re.compile(r"<(num|title|desc|narr|top|/top)>", re.I)


def read_topics(path: str | Path, field: str = "title") -> list[Query]:
    """Read topics: TSV (``qid<TAB>text``), BEIR ``queries.jsonl``, or classic TREC SGML.

    Read in Python on purpose: Pyserini guesses a topic reader from the file path.
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        import json

        out = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                out.append(Query(str(obj["_id"]), str(obj.get("text", ""))))
            except (ValueError, KeyError) as e:
                raise FormatError(path, n, f"not a BEIR query record ({e})", line) from None
        return out
    if "<top>" in text.lower():
        return _read_sgml(path, text, field)
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if "\t" not in line:
            raise FormatError(path, n, "expected 'qid<TAB>query text'", line)
        qid, q = line.split("\t", 1)
        out.append(Query(qid.strip(), q.strip()))
    return out


def _read_sgml(path: Path, text: str, field: str) -> list[Query]:
    out = []
    for block in re.findall(r"<top>(.*?)</top>", text, re.S | re.I):
        parts = {m.group(1).lower(): m.end() for m in _TAG.finditer(block)}
        order = sorted(parts.items(), key=lambda kv: kv[1])
        values = {}
        for i, (tag, start) in enumerate(order):
            end = len(block) if i + 1 == len(order) else block.rfind("<", 0, order[i + 1][1])
            values[tag] = block[start:end].strip()
        num = re.sub(r"^Number:\s*", "", values.get("num", ""), flags=re.I).strip()
        body = re.sub(r"^(Topic|Description|Narrative):\s*", "", values.get(field, ""), flags=re.I)
        if not num:
            raise FormatError(path, 0, "a <top> block has no <num>", block[:80])
        out.append(Query(num, " ".join(body.split())))
    return out
