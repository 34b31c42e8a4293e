"""Collection statistics exported once from a Lucene index, for models that must not call Java per term.

Written to ``<index>/irglow-stats/`` (atomically):

* ``meta.json``     N (maxDoc), per-field docCount, sumTotalTermFreq, average length (Lucene's avgdl)
* ``terms.parquet`` one row per analyzed term: ``df_<field>`` / ``cf_<field>`` for every field and ``contents``
* ``docs.parquet``  one row per Lucene docid: ``doc_id``, ``len_<field>`` (exact: the sum of its terms' frequencies) and
                    ``norm_<field>`` (the length Lucene scores with: its one-byte norm, decoded)

``idf`` and ``avgdl`` here are Lucene's (per-field ``docCount``, ``sumTotalTermFreq / docCount``),
so a torch BM25 built on them reproduces Lucene's scores.
"""

from __future__ import annotations

import json
import logging
import os
import math
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from collections.abc import Mapping
from typing import Any, Iterator

import numpy as np
import pandas as pd
from irglow.utils.progress import tqdm

from irglow.index.jvm import autoclass, bulk_search_available
from irglow.index.lucene_index import LuceneIndex, doc_ids
from irglow.utils.atomic import atomic_dir
from irglow.index.id_table import IdTable
from irglow.utils.digest import check_table_digests, table_digests
from irglow.utils.paths import cache_dir

log = logging.getLogger(__name__)
STATS_DIR = "irglow-stats"
DOC_COLUMNS = "docs"  # per-document columns as .npy files, rows by Lucene doc number


class DocColumns(Mapping):
    """The per-document table as memory-mapped columns (``len_<field>``, ``norm_<field>``), rows by Lucene doc
    number: nothing of it is read into a process but the rows it touches.

    Args:
        path: The statistics folder (its ``doc-columns`` table).
    """

    def __init__(self, path: Path):
        folder = path / DOC_COLUMNS
        if folder.is_dir():
            # plain ndarrays over the mapped files (np.memmap's own indexing is several times slower)
            self._columns = {f.stem: np.asarray(np.load(f, mmap_mode="r")) for f in sorted(folder.glob("*.npy"))}
        else:  # statistics exported before the columns were written: read once from the parquet table
            frame = pd.read_parquet(path / "docs.parquet")
            self._columns = {c: frame[c].to_numpy() for c in frame.columns if c != "doc_id"}

    @property
    def columns(self) -> list[str]:
        return list(self._columns)

    def __getitem__(self, column: str) -> np.ndarray:
        return self._columns[column]

    def __iter__(self):
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)


@lru_cache(maxsize=1)
def byte4_table() -> np.ndarray:
    """Lucene's SmallFloat.byte4ToInt for all 256 norm bytes (the decoded document lengths)."""
    small = autoclass("org.apache.lucene.util.SmallFloat")
    return np.array([small.byte4ToInt(b if b < 128 else b - 256) for b in range(256)], dtype=np.int64)


def _field_term_stream(reader, field: str) -> Iterator[tuple[str, int, int]]:
    """``(term, df, cf)`` of one field in Lucene's term order (UTF-8 byte order: Python's string order), one at
    a time."""
    terms = autoclass("org.apache.lucene.index.MultiTerms").getTerms(reader, field)
    if terms is None:
        return
    it = terms.iterator()
    while it.next() is not None:
        yield it.term().utf8ToString(), int(it.docFreq()), int(it.totalTermFreq())


TERM_ROWS = 200_000  # vocabulary rows written at once: the term table is never whole in memory


def _write_terms(reader, fields: list[str], path: Path) -> None:
    """The vocabulary of every field as one table — a row per term, each field's df and cf (0 where the field
    lacks the term) — merged from the fields' sorted term streams and written a part at a time (MS MARCO's
    vocabulary has millions of terms, most of them from URLs: as dicts it grew with the corpus)."""
    import heapq

    import pyarrow as pa
    import pyarrow.parquet as pq

    def tagged(k: int, field: str):  # each stream's own field and column (a generator expression would share them)
        for t, d, c in _field_term_stream(reader, field):
            yield t, k, d, c

    streams = [tagged(k, f) for k, f in enumerate(fields)]
    writer = None
    rows: list[tuple] = []

    def flush():
        nonlocal writer, rows
        frame = pd.DataFrame({"term": [r[0] for r in rows]})
        for k, f in enumerate(fields):
            frame[f"df_{f}"] = np.array([r[1 + 2 * k] for r in rows], dtype=np.int64)
            frame[f"cf_{f}"] = np.array([r[2 + 2 * k] for r in rows], dtype=np.int64)
        table = pa.Table.from_pandas(frame, preserve_index=False)
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
        rows = []

    current, counts = None, None
    with tqdm(desc="terms", unit="term", mininterval=1.0) as bar:
        for term, k, df, cf in heapq.merge(*streams):
            if term != current:
                if current is not None:
                    rows.append((current, *counts))
                    if len(rows) >= TERM_ROWS:
                        flush()
                current, counts = term, [0] * (2 * len(fields))
                bar.update(1)
            counts[2 * k], counts[2 * k + 1] = df, cf
        if current is not None:
            rows.append((current, *counts))
    if rows or writer is None:
        flush()
    writer.close()


def _field_norms(reader, field: str, max_doc: int) -> np.ndarray:
    """Decoded norm (Lucene's stored length) per docid; 0 where the field is missing."""
    table = byte4_table()
    out = np.zeros(max_doc, dtype=np.int64)
    for leaf in reader.leaves():
        norms = leaf.reader().getNormValues(field)
        if norms is None:
            continue
        base = leaf.docBase
        doc = norms.nextDoc()
        while doc != 2147483647:  # DocIdSetIterator.NO_MORE_DOCS
            out[base + doc] = table[norms.longValue() & 0xFF]
            doc = norms.nextDoc()
    return out


def stats_dir(index: LuceneIndex) -> Path:
    """Where ``index``'s statistics are: beside it, or — for an index in a read-only place (a shared or prebuilt
    index) that has none — under ``$IRGLOW_CACHE/stats/<index folder>`` (its name carries the corpus digest and the
    analysis settings, so the copy means that index alone)."""
    beside = index.path / STATS_DIR
    if (beside / "meta.json").is_file() or os.access(index.path, os.W_OK):
        return beside

    return cache_dir("stats") / index.path.name


def export_stats(index: LuceneIndex, force: bool = False) -> Path:
    """Export statistics beside the index (once; elsewhere where the index is read-only, :func:`stats_dir`);
    returns the statistics directory.

    Args:
        index: An index irglow built.
        force: Export again where an export exists.
    """
    target = stats_dir(index)
    if (target / "meta.json").is_file() and not force:
        return target
    reader = index.lucene_reader
    max_doc = int(reader.maxDoc())
    fields = ["contents", *index.fields]
    meta: dict = {"N": max_doc, "fields": fields, "docCount": {}, "sumTotalTermFreq": {}, "avgdl": {}}
    for f in fields:
        doc_count = int(reader.getDocCount(f))
        sttf = int(reader.getSumTotalTermFreq(f))
        meta["docCount"][f] = doc_count
        meta["sumTotalTermFreq"][f] = sttf
        meta["avgdl"][f] = sttf / doc_count if doc_count else 0.0

    docs = pd.DataFrame({"doc_id": list(doc_ids(index))})
    exact = _exact_lengths(reader, fields, max_doc)
    for f in fields:
        docs[f"len_{f}"] = exact[f]
        docs[f"norm_{f}"] = _field_norms(reader, f, max_doc)
    with atomic_dir(target) as tmp:
        _write_terms(reader, fields, tmp / "terms.parquet")
        docs.to_parquet(tmp / "docs.parquet", index=False)
        _write_term_table(tmp)
        (tmp / DOC_COLUMNS).mkdir()
        for column in docs.columns:  # each per-document column also as a flat array every process memory-maps
            if column != "doc_id":
                np.save(tmp / DOC_COLUMNS / f"{column}.npy", docs[column].to_numpy())
        # each memory-mapped column's digest, checked once per process (CollectionStats.load): a column damaged at
        # its own size would otherwise give wrong lengths or frequencies to every model without a word
        columns = sorted(p.relative_to(tmp).as_posix() for p in (*(tmp / DOC_COLUMNS).glob("*.npy"),
                                                                 *(tmp / TERM_TABLE).glob("*.npy")))
        (tmp / DIGESTS).write_text(json.dumps(table_digests(tmp, columns), indent=1))
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
    return target


DIGESTS = "digests.json"  # {column file: SHA-256}, written with the export


def _damaged(path: Path) -> str | None:
    """What is wrong with an export's memory-mapped columns (``None``: each is as exported)."""
    try:
        recorded = json.loads((path / DIGESTS).read_text())
    except (OSError, ValueError):
        return f"the statistics in {path} record no digest of their columns"
    damaged = check_table_digests(path, recorded)
    return None if damaged is None else f"{path / damaged} differs from the digest recorded when it was exported"


TERM_TABLE = "terms"  # the vocabulary as an id table (term → row) and its df_/cf_ columns as .npy files


def _write_term_table(folder: Path) -> None:
    """``terms.parquet`` again as flat files every process memory-maps: the terms in an id table (looked up by
    hash, no dict of the vocabulary built per process) and each df_/cf_ column as an array — read back a column at
    a time, so the export never holds the whole table (``_write_terms`` wrote it in parts for that reason)."""
    import pyarrow.parquet as pq

    source = folder / "terms.parquet"
    IdTable.write(folder / TERM_TABLE / "table", pq.read_table(source, columns=["term"]).column("term").to_pylist())
    for column in pq.read_schema(source).names:
        if column != "term":
            np.save(folder / TERM_TABLE / f"{column}.npy",
                    pq.read_table(source, columns=[column]).column(column).to_numpy())


def _exact_lengths(reader, fields: list[str], max_doc: int) -> dict[str, np.ndarray]:
    """Each document's analyzed length per field: from the postings in one pass per field in Java (the bulk
    helper: fields indexed without document vectors too), else from each document's term vectors."""
    if bulk_search_available():
        helper = autoclass("irglow.BulkSearch")
        return {f: np.frombuffer(bytes(helper.fieldLengths(reader, f).tostring()), dtype="<i4").astype(np.int64)
                for f in tqdm(fields, desc="field lengths", unit="field", disable=max_doc < 100_000)}
    vectors = reader.termVectors()
    exact = {f: np.zeros(max_doc, dtype=np.int64) for f in fields}
    for d in tqdm(range(max_doc), desc="field lengths", unit="doc", mininterval=1.0):
        tv = vectors.get(d)
        if tv is None:
            continue
        for f in fields:
            terms_f = tv.terms(f)
            if terms_f is not None:
                exact[f][d] = int(terms_f.getSumTotalTermFreq())
    return exact


class _Rows(Mapping):
    """``{doc id: row}`` over an id table, without holding the ids."""

    def __init__(self, ids):
        self.ids = ids

    def __getitem__(self, doc_id: str) -> int:
        row = self.ids.position(doc_id) if isinstance(doc_id, str) else None
        if row is None:
            raise KeyError(doc_id)
        return row

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and self.ids.position(doc_id) is not None

    def get(self, key, default=None):
        row = self.ids.position(key) if isinstance(key, str) else None
        return default if row is None else row

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)


@dataclass
class CollectionStats:
    """Read-only view of exported statistics; everything numpy, no JVM after loading.

    Args:
        path: The statistics folder.
        meta: Its collection-wide figures (N, avgdl per field …).
        docs: The per-document columns.
        ids: The index's id table (rows are Lucene document numbers).
    """

    path: Path
    meta: dict
    docs: DocColumns
    ids: Any = None  # the index's id table (irglow.index.id_table): rows are Lucene doc numbers

    @classmethod
    def load(cls, index: LuceneIndex, export: bool = True) -> "CollectionStats":
        """The exported statistics; the per-document columns memory-mapped (:class:`DocColumns`), with no id
        column (a Python string per document): a document's row is its Lucene doc number, found in the index's
        memory-mapped id table.

        Args:
            index: An index irglow built.
            export: Export the statistics where they are missing (else a missing export is an error).
        """
        path = export_stats(index) if export else stats_dir(index)
        damaged = _damaged(path)
        if damaged and export:  # a column changed since the export (or an export of before digests): made again
            log.warning("%s; the statistics are exported again from the index", damaged)
            path = export_stats(index, force=True)
        elif damaged:
            raise ValueError(f"{damaged}; export them again (irglow stats)")
        meta = json.loads((path / "meta.json").read_text())
        return cls(path, meta, DocColumns(path), index.ids)

    @cached_property
    def terms(self) -> pd.DataFrame:
        """The whole term table (``irglow stats`` prints its size); look-ups go through :attr:`term_row`."""
        return pd.read_parquet(self.path / "terms.parquet")

    @property
    def N(self) -> int:  # noqa: N802
        return int(self.meta["N"])

    def doc_count(self, field: str = "contents") -> int:
        """The number of documents with ``field`` (BM25's N)."""
        return int(self.meta["docCount"][field])

    def avgdl(self, field: str = "contents") -> float:
        """The mean length of ``field`` in index terms (BM25's avgdl), as exported from the index."""
        return float(self.meta["avgdl"][field])

    @cached_property
    def term_row(self) -> "Mapping[str, int]":
        """A term's row: a look-up in the memory-mapped term table (no dict of the vocabulary: a million unique
        URL tokens at MS MARCO size), or, for statistics exported before it existed, a dict."""
        folder = self.path / TERM_TABLE
        if (folder / "table" / "format.json").is_file():
            from irglow.index.id_table import IdTable

            return _Rows(IdTable(folder / "table"))
        return {t: i for i, t in enumerate(self.terms["term"])}

    @cached_property
    def _columns(self) -> dict[str, np.ndarray]:
        """df_/cf_ columns as arrays (memory-mapped): per-term look-ups stay cheap in inner loops."""
        folder = self.path / TERM_TABLE
        if (folder / "table" / "format.json").is_file():
            return {f.stem: np.asarray(np.load(f, mmap_mode="r")) for f in folder.glob("*.npy")}  # mapped, plain
        return {c: self.terms[c].to_numpy() for c in self.terms.columns if c != "term"}

    def _row(self, term: str) -> int | None:
        """A term's row, remembered once looked up (encoders ask for the same terms millions of times; what is
        kept grows with the terms a process uses, not with the vocabulary)."""
        seen = self.__dict__.setdefault("_seen_rows", {})
        if term not in seen:
            seen[term] = self.term_row.get(term)
        return seen[term]

    def df(self, term: str, field: str = "contents") -> int:
        """The number of documents whose ``field`` holds the index term ``term`` (0 for an unknown term)."""
        row = self._row(term)
        return 0 if row is None else int(self._columns[f"df_{field}"][row])

    def cf(self, term: str, field: str = "contents") -> int:
        """The occurrences of ``term`` in ``field`` over the collection (query likelihood's collection model)."""
        row = self._row(term)
        return 0 if row is None else int(self._columns[f"cf_{field}"][row])

    def idf(self, term: str, field: str = "contents", n: float | None = None) -> float:
        """Lucene 9's BM25 idf, ln(1 + (docCount − df + 0.5)/(df + 0.5)); ``n`` overrides docCount.

        Args:
            term: An analyzed term.
            field: The field whose document frequency is read (``contents``: every field's).
            n: The number of documents (unset: the collection's).
        """
        df = self.df(term, field)
        big_n = self.doc_count(field) if n is None else n
        return math.log(1.0 + (big_n - df + 0.5) / (df + 0.5))

    @cached_property
    def row_of_doc(self) -> "Mapping[str, int]":
        """A document's row (its Lucene doc number): a look-up in the id table, no dict of every id."""
        return _Rows(self.ids)
