"""TREC runs read into columns (Arrow's multi-threaded CSV reader, numpy), for evaluation at MS MARCO size.

``Run.read`` builds Python lists of (document, score) per query: right for runs that are searched,
fused and re-ranked, too slow for 7,000 queries × 1,000 documents × 10 runs just to be scored.  A
:class:`RankedRun` holds each query's documents in trec_eval's order (score descending, ties by
document id descending) as the rank-valued dicts that ir_measures scores, built with vectorised
sorting.  The fast path only takes files whose columns are separated by single spaces and whose lines end in LF
or CRLF; anything else trec_eval reads as whitespace (a tab, VT, FF, a bare CR, runs of spaces), a comment line,
a NaN score, a repeated (query, document) or an empty file sends the file through ``Run.read``, which reads it
as trec_eval does or names the file and line.  One file, one answer, whichever path reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from irglow.data.sources import readable
from irglow.data.trec import is_gzip
from irglow.runs.trec import Run


class RankedRun:
    """``ranked[qid]`` = {doc_id: rank value}, higher is better, in trec_eval's order (what
    :func:`irglow.eval.measures.per_query` feeds every ir_measures provider).

    Read from a file by the columnar reader, the run keeps compact columns (one document number per line,
    query boundaries) and builds those dicts only for the queries asked for, a part at a time
    (:meth:`parts`): 7,000 queries × 1,000 documents as Python dicts take a gigabyte, a part a few MB."""

    def __init__(self, ranked: dict[str, dict[str, int]] | None = None, tag: str = "",
                 columns: "Columns | None" = None):
        self._ranked, self.tag, self.columns = ranked, tag, columns

    @classmethod
    def from_run(cls, run: Run) -> "RankedRun":
        return cls({qid: {d: float(len(docs) - i) for i, (d, _) in enumerate(docs)}
                    for qid, docs in run.ranking.items()}, run.tag)

    @property
    def columnar(self) -> bool:
        """Still held as columns (its dicts are built a part at a time, never all at once)."""
        return self._ranked is None

    @property
    def ranked(self) -> dict[str, dict[str, int]]:
        """Every query's dict (built from the columns on first use, then kept)."""
        if self._ranked is None:
            self._ranked = self.columns.dicts(range(len(self.columns.query_names)))
        return self._ranked

    def __len__(self) -> int:
        return len(self.columns.query_names) if self._ranked is None else len(self._ranked)

    def query_ids(self) -> set[str]:
        """The queries with at least one document, without building any dict."""
        if self._ranked is None:
            c = self.columns
            return {c.query_names[i] for i in np.flatnonzero(np.diff(c.starts)).tolist()}
        return {q for q, d in self._ranked.items() if d}

    def parts(self, wanted: set[str], lines: int = 500_000):
        """``{qid: {doc: rank value}}`` for the ``wanted`` queries this run has, about ``lines`` lines at a time
        (all at once for a run held as dicts)."""
        if self._ranked is not None:
            yield {q: d for q, d in self._ranked.items() if q in wanted}
            return
        for chunk in self.columns.chunks(wanted, lines):
            yield self.columns.dicts(chunk)

    def top(self, depth: int) -> Run:
        """The first ``depth`` documents of every query with their scores from the file (rank values for a run
        that was built from dicts), as a :class:`Run`."""
        if self._ranked is not None:
            return Run({q: [(d, float(v)) for d, v in list(docs.items())[:depth]] for q, docs in self._ranked.items()},
                       self.tag)
        c = self.columns
        out = {}
        for i, q in enumerate(c.query_names):
            a, b = int(c.starts[i]), int(min(c.starts[i + 1], c.starts[i] + depth))
            out[q] = list(zip(c.doc_names[c.docs[a:b]].tolist(), c.scores[a:b].tolist()))
        return Run(out, self.tag)

    def as_columns(self) -> "Columns":
        """The run as :class:`Columns` (those it was read into, or built from its dicts)."""
        return self.columns if self.columns is not None else Columns.from_ranked(self._ranked)

    @cached_property
    def ranking(self) -> dict[str, list[tuple[str, float]]]:
        """Documents per query, best first, with their rank values as scores (for what needs lists)."""
        return {q: sorted(((d, float(v)) for d, v in docs.items()), key=lambda x: -x[1])
                for q, docs in self.ranked.items()}


@dataclass
class Columns:
    """A run in trec_eval's order as arrays: query ``i``'s documents are ``doc_names[docs[starts[i]:starts[i+1]]]``,
    best first."""

    query_names: list[str]
    starts: np.ndarray  # int64, one more than the queries
    docs: np.ndarray  # int32 document numbers, line by line
    doc_names: np.ndarray  # object: the document ids
    scores: np.ndarray  # float64 scores as the file gives them, line by line

    @classmethod
    def from_run(cls, run: Run) -> "Columns":
        """The columns of a run read strictly (already in trec_eval's order), so a file gives the same
        :class:`RankedRun` (scores included) whichever reader took it."""
        names: dict[str, int] = {}
        docs, scores, starts = [], [], [0]
        for ranked in run.ranking.values():
            for d, s in ranked:
                docs.append(names.setdefault(d, len(names)))
                scores.append(s)
            starts.append(len(docs))
        return cls(list(run.ranking), np.array(starts, np.int64), np.array(docs, np.int32),
                   np.array(list(names), dtype=object), np.array(scores, np.float64))

    @classmethod
    def from_ranked(cls, ranked: dict[str, dict[str, float]]) -> "Columns":
        """The columns of rank-valued dicts (higher is better; equal values by document id descending, as
        trec_eval orders equal scores)."""
        return cls.from_run(Run({q: list(docs.items()) for q, docs in ranked.items()}))

    def kept(self, mask: np.ndarray) -> "Columns":
        """The lines where ``mask`` holds, every query kept (one left with no line has an empty list)."""
        line_q = np.repeat(np.arange(len(self.query_names)), np.diff(self.starts))
        counts = np.bincount(line_q[mask], minlength=len(self.query_names))
        return Columns(self.query_names, np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), self.docs[mask],
                       self.doc_names, self.scores[mask])

    def chunks(self, wanted: set[str], lines: int) -> list[list[int]]:
        """Query numbers of the ``wanted`` queries, grouped so each group holds about ``lines`` lines."""
        out, current, size = [], [], 0
        for i, q in enumerate(self.query_names):
            if q not in wanted:
                continue
            current.append(i)
            size += int(self.starts[i + 1] - self.starts[i])
            if size >= lines:
                out.append(current)
                current, size = [], 0
        return out + ([current] if current else [])

    def dicts(self, queries) -> dict[str, dict[str, int]]:
        out = {}
        for i in queries:
            a, b = int(self.starts[i]), int(self.starts[i + 1])
            out[self.query_names[i]] = dict(zip(self.doc_names[self.docs[a:b]].tolist(), range(b - a, 0, -1)))
        return out


_OTHER_WHITESPACE = (b"\t", b"\v", b"\f")
_EMPTY_FIELD = (b"  ", b"\n ", b" \n", b" \r")  # an empty column to Arrow's one-delimiter split


def _single_spaced(path: Path, block: int = 1 << 24) -> bool:
    """Whether every separator in the file is a space or a line's end (LF, CRLF): Arrow's CSV parser splits on
    the one delimiter and takes a bare CR as a line's end, while trec_eval splits on every C ``isspace`` byte
    and ends lines at LF only.  Two spaces in a row, or a space that starts or ends a line, give Arrow an empty
    column that whitespace splitting does not see (``1 Q0 d1  3 r``: five fields, refused by the strict reader
    and trec_eval), so such a file is read strictly too.  A few memchr-speed passes over the bytes."""
    with open(path, "rb") as f:
        carry_cr, last = False, b"\n"
        while chunk := f.read(block):
            if any(c in chunk for c in _OTHER_WHITESPACE):
                return False
            if any(p in chunk or p == last + chunk[:1] for p in _EMPTY_FIELD):  # a pair may straddle two blocks
                return False
            last = chunk[-1:]
            if carry_cr and not chunk.startswith(b"\n"):
                return False
            crs = chunk.count(b"\r")
            carry_cr = chunk.endswith(b"\r")
            if crs - carry_cr != chunk.count(b"\r\n"):
                return False
    return not carry_cr and last != b" "


def _fast(path: Path) -> RankedRun | None:
    if not _single_spaced(path):
        return None
    import pyarrow as pa
    import pyarrow.compute  # noqa: F401 (pa.compute)
    import pyarrow.csv as pc

    names = ["q", "z", "d", "r", "s", "t"]
    ids = pa.dictionary(pa.int32(), pa.string())
    try:
        table = pc.read_csv(path, read_options=pc.ReadOptions(column_names=names, block_size=1 << 20),
                            parse_options=pc.ParseOptions(delimiter=" ", quote_char=False),  # ids may hold quotes
                            convert_options=pc.ConvertOptions(
                                column_types={"q": pa.string(), "z": pa.string(), "d": pa.string(), "r": pa.int64(),
                                              "s": pa.float64(), "t": ids}, include_columns=["q", "d", "r", "s", "t"]))
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError):
        return None  # not six single-space columns everywhere, a rank that is not an integer …
    if table.num_rows == 0 or table.column("q").null_count or table.column("d").null_count \
            or table.column("s").null_count or table.column("t").null_count:
        return None
    scores = table.column("s").to_numpy()
    if np.isnan(scores).any():
        return None

    def encoded(column):
        """(each line's number in a dictionary of the column's distinct values, that dictionary): ids are
        hashed once over the whole column (no 7M Python strings; faster than unifying each parsed block's
        own dictionary)."""
        encoded = pa.compute.dictionary_encode(table.column(column).combine_chunks())
        return encoded.indices.to_numpy(zero_copy_only=False), encoded.dictionary

    qi, q_names = encoded("q")
    di, d_dict = encoded("d")
    tag = str(table.column("t")[0].as_py())  # the first line's, as the strict reader
    del table  # what is left: two int32 and one float64 per line
    if any(not v or v.startswith("#") for v in q_names.to_pylist()) or any(not v for v in d_dict.to_pylist()):
        return None  # an empty token (the strict reader says where) or a comment line (trec_eval skips it)
    doc_names = np.array(d_dict.to_pylist(), dtype=object)
    doc_order = np.empty(len(doc_names), np.int32)
    # rank of each id in byte order (UTF-8's order is code point order: trec_eval's strcmp and Python's <)
    doc_order[pa.compute.sort_indices(d_dict).to_numpy()] = np.arange(len(doc_names), dtype=np.int32)
    pairs = qi.astype(np.int64) * len(doc_names) + di  # one number per (query, document)
    pairs.sort()
    if (pairs[1:] == pairs[:-1]).any():
        return None  # a repeated (query, document): the strict reader names it (or keeps the highest score)
    del pairs
    dr = doc_order[di]
    # most run files are already in trec_eval's order (queries contiguous, score desc, id desc): check, else sort
    same_q = qi[1:] == qi[:-1]
    in_order = (~same_q | (scores[1:] < scores[:-1]) | ((scores[1:] == scores[:-1]) & (dr[1:] < dr[:-1]))).all()
    # contiguous: one block of lines per query (a query split over two blocks, as `cat a.run b.run` makes, is not)
    contiguous = int((~same_q).sum()) + 1 == len(np.unique(qi))
    del same_q
    if not (in_order and contiguous):
        order = np.lexsort((-dr, -scores, qi))
        qi, di, scores = qi[order], di[order], scores[order]
    del dr
    starts = np.concatenate([[0], np.flatnonzero(qi[1:] != qi[:-1]) + 1, [len(qi)]]).astype(np.int64)
    names = q_names.to_pylist()
    query_names = [names[i] for i in qi[starts[:-1]].tolist()]
    del qi
    pa.default_memory_pool().release_unused()  # the parser's blocks, kept by the allocator otherwise
    return RankedRun(None, tag, Columns(query_names, starts, di.astype(np.int32), doc_names, scores))


def read_ranked(path: str | Path, duplicates: str = "error") -> RankedRun:
    """A run file as a :class:`RankedRun`: the columnar fast path, or ``Run.read``'s strict one (gzip,
    other whitespace, duplicates with ``keep-max``, and every error message naming file and line)."""
    source = readable(path)  # "-", a pipe or a FIFO: read once, into a file every pass below reads
    fast = None if is_gzip(source) else _fast(source)  # gzip goes through the strict reader, which decompresses
    if fast is not None:
        if not fast.tag:
            fast.tag = Path(path).stem
        return fast
    run = Run.read(path, duplicates=duplicates)
    return RankedRun(None, run.tag, Columns.from_run(run))
