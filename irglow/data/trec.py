"""TREC topic and qrels files, read strictly: a malformed line names its file and line."""

from __future__ import annotations

import gzip
import logging
import re
import zlib
from pathlib import Path
from typing import Iterator

from irglow.data.records import Qrel, Query
from irglow.data.sources import readable
from irglow.utils.atomic import atomic_write_text


class FormatError(ValueError):
    """A line of an input file could not be parsed; the message names the file and line."""

    def __init__(self, path: str | Path, line_no: int, problem: str, line: str):
        super().__init__(f"{path}:{line_no}: {problem}" + (f": {line.rstrip()[:200]!r}" if line else ""))
        self.path, self.line_no, self._parts = str(path), line_no, (str(path), line_no, problem, line)

    def __reduce__(self):  # crosses process boundaries (runs are evaluated in worker processes)
        return (FormatError, self._parts)


log = logging.getLogger(__name__)

# trec_eval splits lines on C's isspace (space, tab, CR, LF, VT, FF) only: a no-break space or another Unicode
# space is part of an id, as it is for every other TREC tool (and for the columnar run reader)
_FIELDS = re.compile(r"[ \t\r\n\v\f]+")


def split_fields(line: str) -> list[str]:
    """The whitespace-separated fields of a TREC run or qrels line, as trec_eval splits them."""
    return [p for p in _FIELDS.split(line) if p]


def is_gzip(path: str | Path) -> bool:
    """Whether the file starts with gzip's magic bytes (whatever its name)."""
    with open(readable(path), "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def open_binary(path: str | Path):
    """A file opened for reading bytes; gzip decompressed transparently, since TREC runs and qrels are
    often shipped compressed.  ``-``, a pipe or a FIFO is read once (:func:`~irglow.data.sources.readable`)."""
    source = readable(path)
    return gzip.open(source, "rb") if is_gzip(source) else open(source, "rb")


def truncated_gzip(error: Exception) -> str:
    """What a gzip file that ends before its data (an interrupted download or copy) is told."""
    return f"the gzip data is truncated or corrupt ({error}); copy or download the file again"


def utf8_advice(path) -> str:
    """How to convert a file that is not UTF-8, by what its bytes look like: UTF-16 (a byte-order mark, or
    NUL bytes between ASCII letters) or a single-byte code page."""
    with open_binary(path) as f:
        head = f.read(4096)
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or head.count(b"\x00") > len(head) // 4:
        return "it looks like UTF-16; convert it, e.g. iconv -f utf-16 -t utf-8"
    return "convert it, e.g. iconv -f latin1 -t utf-8 (or the code page it was written in)"


def utf8_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of a UTF-8 file (a BOM is dropped, gzip read transparently); a byte that
    is not UTF-8 stops with ``file:line`` and what to do, instead of a bare codec error."""
    with open_binary(path) as f:
        n = 0
        try:
            for n, raw in enumerate(f, 1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise FormatError(path, n, f"not UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1}); "
                                               f"{utf8_advice(path)}", "") from None
                if n == 1 and text.startswith("\ufeff"):
                    text = text[1:]
                yield n, text
        except (EOFError, zlib.error, gzip.BadGzipFile) as e:  # reading the next line: a gzip file cut short
            raise FormatError(path, n + 1, truncated_gzip(e), "") from None


# trec_eval reads a qrels label with C's atol (get_qrels.c) and a run score with atof (get_trec_results.c): a
# leading number in ASCII digits, the rest ignored.  irglow reads what those give one answer for and refuses the
# rest naming file and line: "1_0" (atol: 1, Python's int: 10), "２" (atol: 0, Python: 2), "1e2" (atol: 1).
LABEL = re.compile(r"[+-]?[0-9]+", re.ASCII)
_DECIMAL_LABEL = re.compile(r"([+-]?[0-9]*)\.[0-9]*", re.ASCII)


# trec_eval (and pytrec_eval inside ir_measures) size their per-query label counts by the largest label: 1e9 asks
# for 8 GB and silently scores NumRel 0, 3e9 for 24 GB, 2^63 overflows numpy.  No graded scale comes near this.
MAX_LABEL = 1_000_000


def check_label(label: int, where: str = "") -> int:
    """A label trec_eval's arrays can hold (``label <= MAX_LABEL``), else ``ValueError`` saying why (``where``:
    the judgment it belongs to, put first).  A negative label of any size is evaluated: trec_eval reads every
    negative label as "in the pool, not judged" and sizes nothing by it (:func:`pooled_label`)."""
    if label > MAX_LABEL:
        raise ValueError(f"{where}relevance {label} is beyond {MAX_LABEL:,}: trec_eval and pytrec_eval size an array by the "
                         f"largest label (this one would ask for {8 * (abs(label) + 1) / 2**30:,.1f} GiB and score "
                         f"wrongly where it cannot get it); write the labels on a graded scale (0, 1, 2 …)")
    return pooled_label(label)


def pooled_label(label: int) -> int:
    """A negative label as the evaluators are given it: one below ``-MAX_LABEL`` (which a C int or an int64 may not
    hold) becomes ``-MAX_LABEL``, which trec_eval treats the same (only -1, "not in the pool", is told apart)."""
    return label if label >= -MAX_LABEL else -MAX_LABEL


def parse_label(text: str) -> tuple[int, bool]:
    """``(label, was_decimal)``: an integer label, or a decimal one rounded toward zero as atol reads it ("2.7" →
    2, "-0.5" → 0).  Anything else (exponents, inf, NaN, underscores, non-ASCII digits) or a label beyond
    :data:`MAX_LABEL` raises ``ValueError`` saying what trec_eval would read."""
    if LABEL.fullmatch(text):
        return check_label(int(text)), False
    m = _DECIMAL_LABEL.fullmatch(text)
    if m and any(c.isdigit() for c in text):
        head = m.group(1)
        return check_label(int(head) if head.strip("+-") else 0), True
    prefix = LABEL.match(text)
    atol = int(prefix.group()) if prefix else 0
    raise ValueError(f"relevance {text!r} is not a plain integer or decimal in ASCII digits (trec_eval's atol "
                     f"would read it as {atol}); write the label as an integer")


def is_comment(line: str) -> bool:
    """trec_eval's qrels comment: a ``#`` in the first column (get_qrels.c skips such a line whole)."""
    return line.startswith("#")


def read_qrels(path: str | Path) -> list[Qrel]:
    """``qid iter docid rel`` lines (whitespace separated, ``#`` comment lines skipped, as trec_eval reads them),
    or a BEIR ``query-id corpus-id score`` TSV with or without its header.  Decimal labels are rounded toward
    zero (trec_eval's atol) and repeated (query, document) pairs keep the last label — both said once, with a
    count and a first line."""
    qrels: dict[tuple[str, str], Qrel] = {}
    columns = None
    truncated, repeated = [], []
    for n, line in utf8_lines(path):
        if is_comment(line):
            continue
        parts = split_fields(line)
        if not parts:
            continue
        if columns is None and parts[:2] == ["query-id", "corpus-id"]:
            columns = 3
            continue
        if columns is None and len(parts) in (3, 4):
            columns = len(parts)  # the first record decides: 4 = TREC, 3 = BEIR without its header
        if len(parts) != columns:
            expected = "3 columns (query-id corpus-id score)" if columns == 3 else "4 columns (qid iter docid rel)"
            raise FormatError(path, n, f"expected {expected}, got {len(parts)}", line)
        qid, did, rel = (parts[0], parts[2], parts[3]) if columns == 4 else parts
        try:
            relevance, decimal = parse_label(rel)
        except ValueError as e:
            raise FormatError(path, n, str(e), line) from None
        if decimal:
            truncated.append(n)
        if (qid, did) in qrels:
            repeated.append(n)
            del qrels[(qid, did)]
        qrels[(qid, did)] = Qrel(qid, did, relevance)
    if truncated:
        log.warning("%s: %d decimal relevance labels rounded toward zero, as trec_eval reads them (first on line %d)",
                    path, len(truncated), truncated[0])
    if repeated:
        log.warning("%s: %d repeated (query, document) judgments; the last label is kept (first on line %d)", path,
                    len(repeated), repeated[0])
    return list(qrels.values())


def write_qrels(qrels: list[Qrel], path: str | Path) -> Path:
    text = "".join(f"{q.query_id} 0 {q.doc_id} {q.relevance}\n" for q in qrels)
    return atomic_write_text(path, text)


_TAG = re.compile(r"<(num|title|desc|narr|top|/top)>", re.I)


def read_topics(path: str | Path, field: str = "title") -> list[Query]:
    """Read topics: TSV (``qid<TAB>text``), BEIR ``queries.jsonl``, or classic TREC SGML.

    Read in Python on purpose: Pyserini guesses a topic reader from the file path.  A file that holds no query
    (empty, blank lines only, SGML without a ``<top>``) is an error: its run would be an empty file and exit 0.
    """
    queries = _read_topics(Path(path), field)
    if not queries:
        raise ValueError(f"{path} holds no queries; give a file of 'qid<TAB>query text' lines, BEIR queries.jsonl "
                         "records or TREC <top> topics")
    return queries


def _read_topics(path: Path, field: str) -> list[Query]:
    # lines end at "\n" (and "\r\n") only: str.splitlines would also split at U+2028, U+0085 … inside a JSON
    # string or a query's text, and number every later line wrongly
    lines = [(n, line.rstrip("\n").removesuffix("\r")) for n, line in utf8_lines(path)]
    if path.suffix == ".jsonl":
        import json

        out, first = [], {}
        for n, line in lines:
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                raw_id, qtext = obj["_id"], obj.get("text")
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                raise FormatError(path, n, f"not a BEIR query record ({e})", line) from None
            qid = record_id(path, n, raw_id, "query", line)
            if not isinstance(qtext, str):
                log.warning("%s:%d: query %s has no text (%r); it gets an empty ranking", path, n, qid, qtext)
                qtext = ""
            check_unicode(path, n, qtext, f"query {qid}'s text", line)
            _check_unique(path, n, qid, first, line)
            out.append(Query(qid, qtext))
        return out
    text = "\n".join(line for _, line in lines)
    if "<top>" in text.lower():
        return _read_sgml(path, text, field)
    out, first = [], {}
    for n, line in lines:
        if not line.strip():
            continue
        if "\t" not in line:
            raise FormatError(path, n, "expected 'qid<TAB>query text'", line)
        qid, q = line.split("\t", 1)
        qid = record_id(path, n, qid.strip(), "query", line)
        _check_unique(path, n, qid, first, line)
        out.append(Query(qid, q.strip()))
    return out


_SURROGATE = re.compile("[\ud800-\udfff]")


def check_unicode(path, n: int, value: str, what: str, line: str) -> str:
    """Text that UTF-8 can hold: a lone surrogate (JSON's ``"\\ud83d"``, half of a UTF-16 pair) cannot be
    written to Lucene or a TREC file, and would stop there with a codec traceback."""
    m = _SURROGATE.search(value)
    if m:
        raise FormatError(path, n, f"{what} holds a lone surrogate \\u{ord(m.group()):04x} at character "
                                   f"{m.start() + 1} (half of a UTF-16 pair, which UTF-8 cannot encode); fix that "
                                   f"escape in the file", line)
    return value


def record_id(path, n: int, value, what: str, line: str) -> str:
    """A document or query id as it must appear in a TREC file: a string or an integer (``null``, ``true``,
    ``2.0`` would silently become "None", "True", "2.0"), non-empty, without whitespace."""
    if value is None or isinstance(value, (bool, float, dict, list)):
        raise FormatError(path, n, f"{what} id must be a string or an integer, not {value!r}", line)
    value = str(value)
    if not value or any(c.isspace() for c in value):
        raise FormatError(path, n, f"{what} id must be non-empty without whitespace (TREC files)", line)
    return check_unicode(path, n, value, f"{what} id", line)


def _check_unique(path, n: int, qid: str, first: dict[str, int], line: str) -> None:
    """A repeated query id stops with both lines: silently keeping the last text would score another query."""
    if qid in first:
        raise FormatError(path, n, f"duplicate query id {qid!r} (first on line {first[qid]})", line)
    first[qid] = n


def _read_sgml(path: Path, text: str, field: str) -> list[Query]:
    out: list[Query] = []
    seen: dict[str, int] = {}
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
        if num in seen:
            raise FormatError(path, 0, f"duplicate topic number {num!r} (topic {seen[num]} and {len(out) + 1})",
                              block[:80])
        seen[num] = len(out) + 1
        out.append(Query(num, " ".join(body.split())))
    return out
