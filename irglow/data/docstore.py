"""Documents by id, never the corpus in memory: the one document store every stage reads text through.

MS MARCO documents are 22 GB of text (v2: 130 GB); a ``{doc_id: Document}`` of the corpus does not fit beside a
model. A store keeps, per document, its id and where its text is — a byte offset into a file, a key of
ir_datasets' ``docs_store()`` — and reads a document when asked, as ir_datasets' docstores and Pyserini's
``searcher.doc(id)`` do. What stays in memory grows with the number of documents (an id and an offset each), not
with their text; the documents a stage holds at once are a batch (an encoding batch, a query's re-ranking depth).

- a BEIR folder: offsets into ``corpus.jsonl`` itself, each line parsed by the collection's own reader (the same
  :class:`~irglow.data.records.Document` ``docs_iter`` gives, errors named with file and line);
- an ir_datasets collection: its ``docs_store()``, each record converted as ``docs_iter`` converts it;
- a union of collections: each part's store, behind the part's id prefix;
- a sample of a collection: the base collection's store, restricted to the kept documents;
- any other collection (the demo, a collection written in Python): its documents written once, as JSON lines, to
  a temporary file, and read back by offset.

:func:`docs_store` gives a collection's store (one per collection object). ``store[doc_id]`` is a document (a
missing id is a ``KeyError`` naming it and the collection), ``store.get_many(ids)`` a batch in the order asked,
``store.sequence()`` the corpus in its order as a lazy sequence (``len``, ``[i]``, slices, iteration) for corpus
encoding, ``store.ids()`` the ids in corpus order.
"""

from __future__ import annotations

import json
import logging
import os
from array import array
import tempfile
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

from irglow.data.records import Document, make_document
from irglow.utils.digest import check_table_digests, table_digests

log = logging.getLogger(__name__)


class MissingDocument(KeyError):
    """A document id the store does not hold (a run naming a document of another corpus)."""

    def __str__(self) -> str:  # KeyError quotes its argument; this message is a sentence
        return str(self.args[0])


class DocStore(Mapping):
    """Documents by id; iteration is over ids in corpus order (a Mapping that never materialises its values)."""

    name: str = "collection"

    # -- what a store implements ---------------------------------------------------------------
    def ids(self) -> Sequence[str]:
        """Every document id, in corpus order."""
        raise NotImplementedError

    def _read(self, positions: np.ndarray) -> list[Document]:
        """The documents at these corpus positions, in that order."""
        raise NotImplementedError

    # -- derived -------------------------------------------------------------------------------
    def position_of(self, doc_id: str) -> int | None:
        return self._positions.get(doc_id)

    @property
    def _positions(self) -> dict[str, int]:
        positions = self.__dict__.get("_pos")
        if positions is None:
            positions = self.__dict__["_pos"] = {d: i for i, d in enumerate(self.ids())}
        return positions

    def get_many(self, doc_ids: Iterable[str]) -> list[Document]:
        """The documents of ``doc_ids``, in that order; an id the store lacks stops with its name."""
        doc_ids = list(doc_ids)
        at = []
        for d in doc_ids:
            p = self.position_of(d)
            if p is None:
                raise self._missing(d)
            at.append(p)
        return self._read(np.asarray(at, dtype=np.int64))

    def _missing(self, doc_id: str) -> MissingDocument:
        return MissingDocument(f"document {doc_id!r} is not in {self.name} (a run or judgment naming a document of "
                               f"another corpus, or an index built from another version of it)")

    def __getitem__(self, doc_id: str) -> Document:
        return self.get_many([doc_id])[0]

    def __contains__(self, doc_id) -> bool:
        return isinstance(doc_id, str) and self.position_of(doc_id) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids())

    def __len__(self) -> int:
        return len(self.ids())

    def sequence(self) -> "DocSequence":
        """The corpus in its order as a lazy sequence: what corpus encoding reads, a batch at a time."""
        return DocSequence(self, 0, len(self))


class DocSequence(Sequence):
    """Positions ``lo`` … ``hi`` of a store's corpus, read on access (slicing gives another view, no copy)."""

    def __init__(self, store: DocStore, lo: int, hi: int):
        self.store, self.lo, self.hi = store, lo, hi

    def __len__(self) -> int:
        return self.hi - self.lo

    def __getitem__(self, i):
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                raise ValueError("a document sequence is sliced contiguously")
            return DocSequence(self.store, self.lo + start, self.lo + max(start, stop))
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self.store._read(np.asarray([self.lo + i]))[0]

    def take(self, positions: Sequence[int]) -> list[Document]:
        """Several documents at once (one read per batch, not one per document)."""
        return self.store._read(np.asarray(positions, dtype=np.int64) + self.lo)

    def __iter__(self) -> Iterator[Document]:
        for lo in range(self.lo, self.hi, 1024):
            yield from self.store._read(np.arange(lo, min(self.hi, lo + 1024), dtype=np.int64))

    def ids(self) -> Iterator[str]:
        """Its documents' ids in order, streamed (nothing of their text kept)."""
        return (doc.doc_id for doc in self)


class JsonLinesStore(DocStore):
    """Documents at byte offsets of a JSON Lines file, each line parsed by ``parse(line_number, text)``.

    Per document it keeps numbers only — the line's offset and number, and a 64-bit hash of the id, sorted for
    look-ups (36 bytes a document: 115 MB for MS MARCO documents' 3.2 M): an id is found by binary search on its
    hash and confirmed against the record read (two ids with one hash are told apart by reading both)."""

    def __init__(self, path: Path, name: str, parse: Callable[[int, str], Document], hashes: np.ndarray | None,
                 offsets: np.ndarray, lines: np.ndarray, order: np.ndarray | None = None,
                 sorted_hashes: np.ndarray | None = None, meta: dict | None = None):
        self.path, self.name, self.parse = Path(path), name, parse
        self.offsets, self.lines, self.meta = offsets, lines, meta or {}
        if order is None:
            order = np.argsort(hashes, kind="stable")
            sorted_hashes = hashes[order]
        self.order, self.sorted_hashes = order, sorted_hashes

    TABLES = ("offsets", "lines", "order", "sorted_hashes")
    TABLE_FORMAT = 2  # 2: each array's digest recorded, checked once per process

    @classmethod
    def scan(cls, path: Path, name: str, parse: Callable[[int, str], Document],
             id_of: Callable[[int, str], str | None], tables: Path | None = None,
             meta: Callable[[], dict] | None = None) -> "JsonLinesStore":
        """One pass over the file: each record's id (``id_of``; ``None`` skips the line), offset and line number;
        a repeated id stops naming both lines.  ``tables``: a folder keyed by the file's content where the pass's
        arrays (and ``meta()``, what else the pass learnt) are kept, memory-mapped by every later process instead
        of scanning again."""
        if tables is not None:
            kept = cls._kept(path, name, parse, Path(tables))
            if kept is not None:
                return kept
        hashes, offsets, lines = array("Q"), array("q"), array("q")  # 8 bytes a document each, even while scanning
        at = 0
        with open(path, "rb") as f:
            for n, raw in enumerate(f, 1):
                doc_id = id_of(n, _text(n, raw)) if raw.strip() else None
                if doc_id is not None:
                    hashes.append(id_hash(doc_id))
                    offsets.append(at)
                    lines.append(n)
                at += len(raw)
        store = cls(path, name, parse, np.frombuffer(hashes, np.uint64), np.frombuffer(offsets, np.int64),
                    np.frombuffer(lines, np.int64), meta=meta() if meta else None)
        store._check_repeats()
        if tables is not None:
            store._keep(Path(tables))
        return store

    def _keep(self, folder: Path) -> None:
        """Write the store's arrays into ``folder`` (atomically: a killed process leaves none half-written)."""
        from irglow.utils.atomic import atomic_dir

        try:
            with atomic_dir(folder) as tmp:
                for key in self.TABLES:
                    np.save(Path(tmp) / f"{key}.npy", getattr(self, key))
                (Path(tmp) / "format.json").write_text(json.dumps({
                    "format": self.TABLE_FORMAT, "meta": self.meta, "documents": len(self.offsets),
                    "digests": table_digests(tmp, [f"{key}.npy" for key in self.TABLES])}))
        except OSError as e:  # a read-only data folder: the pass is made again next time, nothing is lost
            log.warning("document store of %s not kept in %s (%s)", self.name, folder, e)

    @classmethod
    def _kept(cls, path: Path, name: str, parse, folder: Path) -> "JsonLinesStore | None":
        try:
            info = json.loads((folder / "format.json").read_text())
            if info.get("format") != cls.TABLE_FORMAT:
                return None
            arrays = {key: np.load(folder / f"{key}.npy", mmap_mode="r") for key in cls.TABLES}
        except (OSError, ValueError) as e:  # absent, or cut short ("mmap length is greater than file size")
            if (folder / "format.json").is_file():
                log.warning("document store tables in %s are damaged (%s); the corpus is scanned again", folder, e)
            return None
        n, size = info.get("documents"), path.stat().st_size
        lengths = {key: len(a) for key, a in arrays.items()}
        if set(lengths.values()) != {n} or (n and not 0 <= int(arrays["offsets"][-1]) < size):
            log.warning("document store tables in %s are damaged (%s for %s documents of a %d-byte file); the corpus "
                        "is scanned again", folder, lengths, n, size)
            return None
        damaged = check_table_digests(folder, info.get("digests") or {f"{k}.npy": "" for k in cls.TABLES})
        if damaged is not None:  # the same size, other bytes: a record's offset would read another document
            log.warning("document store table %s differs from the digest recorded when it was built; the corpus is "
                        "scanned again", folder / damaged)
            return None
        return cls(path, name, parse, None, arrays["offsets"], arrays["lines"], arrays["order"],
                   arrays["sorted_hashes"], info.get("meta"))

    def _check_repeats(self) -> None:
        from irglow.data.trec import FormatError

        same = np.flatnonzero(self.sorted_hashes[1:] == self.sorted_hashes[:-1])
        for k in same.tolist():
            a, b = sorted((int(self.order[k]), int(self.order[k + 1])))
            first, second = self._read(np.asarray([a, b]))
            if first.doc_id == second.doc_id:
                raise FormatError(self.path, int(self.lines[b]), f"duplicate document id {first.doc_id!r} (first on "
                                                                 f"line {int(self.lines[a])})", "")

    def __len__(self) -> int:
        return len(self.offsets)

    def ids(self) -> Sequence[str]:
        """The ids in corpus order, read from the file when asked (nothing kept)."""
        return _StoredIds(self)

    def position_of(self, doc_id: str) -> int | None:
        """A lone hash is trusted (reading its record costs a read; :meth:`get_many` checks what it reads); of
        several, the one whose record holds this id."""
        return position_by_hash(self.sorted_hashes, self.order, doc_id,
                                lambda p: self._read(np.asarray([p]))[0].doc_id == doc_id, check_lone=False)

    def get_many(self, doc_ids: Iterable[str]) -> list[Document]:
        doc_ids = list(doc_ids)
        docs = super().get_many(doc_ids)
        for d, doc in zip(doc_ids, docs):
            if doc.doc_id != d:  # an id absent from the corpus whose hash is another document's
                raise self._missing(d)
        return docs

    def _fd(self) -> int:
        """A descriptor of the file for this process (``os.pread`` never moves a shared offset, so forked
        workers and threads read side by side)."""
        held = self.__dict__.get("_held")
        if held is None or held[0] != os.getpid():
            held = self.__dict__["_held"] = (os.getpid(), os.open(self.path, os.O_RDONLY))
            weakref.finalize(self, _close, held[1])
        return held[1]

    def _read(self, positions: np.ndarray) -> list[Document]:
        fd, out = self._fd(), []
        for p in positions.tolist():
            start = int(self.offsets[p])
            raw = bytearray()
            while True:  # a record is one line: read until its newline (or the end of the file)
                chunk = os.pread(fd, 1 << 16, start + len(raw))
                end = chunk.find(b"\n")
                raw += chunk if end < 0 else chunk[:end + 1]
                if end >= 0 or not chunk:
                    break
            n = int(self.lines[p])
            out.append(self.parse(n, _text(n, bytes(raw))))
        return out


class _StoredIds(Sequence):
    """A store's ids in corpus order, read from its file: iterating streams it, ``[i]`` reads one record."""

    def __init__(self, store: "JsonLinesStore"):
        self.store = store

    def __len__(self) -> int:
        return len(self.store)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        return self.store._read(np.asarray([i]))[0].doc_id

    def __iter__(self) -> Iterator[str]:
        return self.store.sequence().ids()


def id_hash(doc_id: str) -> int:
    """A document id as a 64-bit number (blake2b): what a store sorts and searches instead of the id."""
    import hashlib

    return int.from_bytes(hashlib.blake2b(doc_id.encode("utf-8"), digest_size=8).digest(), "little")


def position_by_hash(sorted_hashes: np.ndarray, positions: np.ndarray, doc_id: str, holds: Callable[[int], bool],
                     check_lone: bool = True) -> int | None:
    """Where ``doc_id`` lies in a table of id hashes sorted with their ``positions`` (an O(log n) look-up: no table
    of every id is held): the candidate whose ``holds(position)`` says it is this id, or ``None``.  ``check_lone``
    False trusts a hash only one position has (a 64-bit hash: another id sharing it is ~N / 2^64 likely) where
    asking costs a read; the caller then checks what it reads."""
    h = np.uint64(id_hash(doc_id))
    lo = int(np.searchsorted(sorted_hashes, h, side="left"))
    hi = int(np.searchsorted(sorted_hashes, h, side="right"))
    if hi - lo == 1 and not check_lone:
        return int(positions[lo])
    return next((int(positions[k]) for k in range(lo, hi) if holds(int(positions[k]))), None)


def _text(n: int, raw: bytes) -> str:
    """A line's text as :func:`~irglow.data.trec.utf8_lines` reads it: the first line's byte-order mark dropped."""
    text = raw.decode("utf-8", errors="replace")
    return text[1:] if n == 1 and text.startswith("\ufeff") else text


class IrdsStore(DocStore):
    """ir_datasets' ``docs_store()``: documents by id from its own lookup structures."""

    def __init__(self, collection):
        self.collection, self.name = collection, collection.name

    def ids(self) -> Sequence[str]:
        if "_ids" not in self.__dict__:
            self._ids = [d.doc_id for d in self.collection._dataset().docs_iter()]
        return self._ids

    def _store(self):
        """ir_datasets' docstore, opened once per process (each ``docs_store()`` opens its files again, and logs
        it); a forked worker opens its own, as a shared file offset would mix two readers' reads."""
        if self.__dict__.get("_opened", (None,))[0] != os.getpid():
            self._opened = (os.getpid(), self.collection._dataset().docs_store())
        return self._opened[1]

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_opened"}  # another process opens its own

    def _read(self, positions: np.ndarray) -> list[Document]:
        ids = self.ids()
        wanted = [ids[p] for p in positions.tolist()]
        found = self._store().get_many(wanted)
        mapping = self.collection._mapping
        return [make_document(d, **{dst: getattr(found[d], src, None) for src, dst in mapping.items()})
                for d in wanted]


class UnionStore(DocStore):
    """A union's documents: part ``k``'s store behind the id prefix ``k/``."""

    def __init__(self, union, parts: list[DocStore]):
        self.name, self.parts = union.name, parts
        self.starts = np.cumsum([0] + [len(p) for p in parts])

    def ids(self) -> Sequence[str]:
        if "_ids" not in self.__dict__:
            self._ids = [f"{k}/{d}" for k, p in enumerate(self.parts) for d in p.ids()]
        return self._ids

    def __len__(self) -> int:
        return int(self.starts[-1])

    def position_of(self, doc_id: str) -> int | None:
        k, _, rest = doc_id.partition("/")
        if not k.isdigit() or int(k) >= len(self.parts):
            return None
        p = self.parts[int(k)].position_of(rest)
        return None if p is None else int(self.starts[int(k)]) + p

    def _read(self, positions: np.ndarray) -> list[Document]:
        part = np.searchsorted(self.starts, positions, side="right") - 1
        out: list[Document | None] = [None] * len(positions)
        for k in np.unique(part).tolist():
            at = np.flatnonzero(part == k)
            docs = self.parts[k]._read(positions[at] - self.starts[k])
            for i, d in zip(at.tolist(), docs):
                out[i] = d._replace(doc_id=f"{k}/{d.doc_id}")
        return out  # type: ignore[return-value]


class SampledStore(DocStore):
    """A sample's documents: the base store at the kept documents' positions, in the base corpus order."""

    def __init__(self, sample, base: DocStore):
        self.name, self.base = sample.name, base
        # the sample's documents one at a time (nothing kept), each as its position in the base corpus
        self.at = np.sort(np.asarray([base.position_of(d.doc_id) for d in sample.docs_iter()], dtype=np.int64))

    def __len__(self) -> int:
        return len(self.at)

    def position_of(self, doc_id: str) -> int | None:
        p = self.base.position_of(doc_id)
        if p is None:
            return None
        i = int(np.searchsorted(self.at, p))
        return i if i < len(self.at) and self.at[i] == p else None

    def ids(self) -> Sequence[str]:
        if "_ids" not in self.__dict__:
            base = self.base.ids()
            self._ids = [base[i] for i in self.at.tolist()]
        return self._ids

    def _read(self, positions: np.ndarray) -> list[Document]:
        return self.base._read(self.at[positions])


class ExportedStore(JsonLinesStore):
    """Any other collection: its documents written once, in order, to a temporary JSON Lines file (removed with the
    store), then read by offset — one pass over ``docs_iter()``, one document alive at a time."""

    @classmethod
    def of(cls, collection) -> "ExportedStore":
        from irglow.utils.atomic import sweep_stale

        folder = exports_folder()
        sweep_stale(folder, "")  # copies left by processes that were killed (kill -9 runs no finalizer)
        fd, name = tempfile.mkstemp(prefix=f"{os.getpid()}-", suffix=".jsonl", dir=folder)
        hashes, offsets = array("Q"), array("q")
        at = 0
        try:
            with os.fdopen(fd, "wb") as out:
                for doc in collection.docs_iter():
                    line = (json.dumps({"i": doc.doc_id, "f": {k: list(v) for k, v in doc.fields.items()}},
                                       ensure_ascii=False) + "\n").encode("utf-8")
                    hashes.append(id_hash(doc.doc_id))
                    offsets.append(at)
                    out.write(line)
                    at += len(line)
        except BaseException:  # a collection that fails half-way (or a full disk) leaves no partial copy behind
            _remove(name)
            raise
        store = cls(Path(name), getattr(collection, "name", "collection"), _exported_document,
                    np.frombuffer(hashes, np.uint64), np.frombuffer(offsets, np.int64), np.full(len(offsets), 2, np.int64))
        weakref.finalize(store, _remove, name)
        return store


def exports_folder() -> Path:
    """Where exported stores live while their process does: ``<temp>/irglow-docstores``, one file per store
    named by its process id, so the next process can tell a dead one's copy from a live one's."""
    folder = Path(tempfile.gettempdir()) / "irglow-docstores"
    folder.mkdir(exist_ok=True)
    return folder


def _exported_document(n: int, line: str) -> Document:
    record = json.loads(line)
    return Document(record["i"], {k: tuple(v) for k, v in record["f"].items()})


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def docs_store(collection) -> DocStore:
    """``collection``'s document store, made once per collection object (see the module docstring)."""
    store = getattr(collection, "_irglow_docstore", None)
    if store is not None:
        return store
    made = getattr(collection, "docs_store", None)  # a collection that knows where its documents are
    store = made() if callable(made) else ExportedStore.of(collection)
    try:
        collection._irglow_docstore = store
    except AttributeError:  # a collection with __slots__: made again when asked again
        pass
    return store
