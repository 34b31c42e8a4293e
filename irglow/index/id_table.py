"""The index's table of document ids: Lucene doc number → collection id, id → doc number, and trec_eval's tie
order, written once beside the index as flat little-endian arrays and memory-mapped by every process.

Every search maps Lucene doc numbers to ids, breaks equal scores by id (trec_eval's order), and a qrels check or a
re-ranker finds documents by id.  Read from Lucene's stored fields, that is a pass over every document in every
process and every torchrun rank (9 s and ~1 GB of Python strings at 100 k documents; linear in the corpus); here
it is a few ``mmap`` calls, whatever the corpus size, and no Python object per document is ever made.

Files (folder ``irglow-ids/`` inside the index):

* ``ids.utf8`` — every id's UTF-8 bytes, in doc-number order; ``ids.offsets.npy`` — int64, ``n + 1`` byte offsets;
* ``tie-rank.npy`` — int32, each doc number's rank of its id in code point (UTF-8 byte) order: the Java bulk
  helper breaks ties by it, as trec_eval breaks them by ``strcmp``;
* ``hashes.npy`` — the 64-bit ids' hashes (:func:`irglow.data.docstore.id_hash`), sorted; ``hash-docs.npy`` —
  the doc number of each sorted hash: an id is found by binary search, then confirmed against its bytes;
* ``format.json`` — written last: a folder without it is not a table.  It records each file's SHA-256, checked the
  first time a process opens the table: a file damaged at its own size (two ids swapped) would otherwise map hits
  to wrong ids without a word.
"""

from __future__ import annotations

import json
import logging
import mmap
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
from irglow.data.docstore import id_hash, position_by_hash
from irglow.utils.atomic import atomic_dir
from irglow.utils.digest import check_table_digests, table_digests

FOLDER = "irglow-ids"
FORMAT = 2  # 2: each file's digest recorded (a table of format 1 is written again from the index)
ARRAYS = ("ids.offsets.npy", "tie-rank.npy", "hashes.npy", "hash-docs.npy")
FILES = ("ids.utf8", *ARRAYS)
log = logging.getLogger(__name__)


class DamagedTable(ValueError):
    """A file of an id table that disagrees with the rest of it (cut short, extended, replaced): named, with how."""

    def __init__(self, path: Path, problem: str):
        super().__init__(f"{path} {problem}: the table is damaged")
        self.path = path


class IdTable(Sequence):
    """``table[doc number]`` → id; :meth:`take` many at once; :meth:`position` id → doc number (``None`` when the
    collection has no such document); :attr:`tie_rank` for the bulk helper."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        # plain ndarrays over the mapped files (np.memmap's own indexing is several times slower)
        arrays = []
        for name in ARRAYS:
            try:
                arrays.append(np.asarray(np.load(self.folder / name, mmap_mode="r")))
            except (ValueError, EOFError) as e:  # cut short: "mmap length is greater than file size"
                raise DamagedTable(self.folder / name, f"unreadable ({e})") from None
        self.offsets, self.tie_rank, self.hashes, self.hash_docs = arrays
        size = (self.folder / "ids.utf8").stat().st_size
        self._check(size)  # sizes and end points first: what a cut or extended file did, said in those terms
        self._check_digests()
        if size:
            with open(self.folder / "ids.utf8", "rb") as f:
                self._bytes = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        else:
            self._bytes = b""

    def _check_digests(self) -> None:
        """Every file as it was built (its recorded digest; once per process and file state)."""
        try:
            recorded = json.loads((self.folder / "format.json").read_text()).get("digests") or {}
        except (OSError, ValueError) as e:
            raise DamagedTable(self.folder / "format.json", f"unreadable ({e})") from None
        if set(recorded) != set(FILES):
            raise DamagedTable(self.folder / "format.json", "records no digest of the table's files")
        damaged = check_table_digests(self.folder, recorded)
        if damaged is not None:
            raise DamagedTable(self.folder / damaged, "differs from the digest recorded when the table was built")

    def _check(self, size: int) -> None:
        """The files agree with each other and with ``format.json`` (O(1): sizes and end points, no pass over the
        ids): a truncated, extended or swapped file would otherwise map hits to wrong ids without a word."""
        try:
            documents = json.loads((self.folder / "format.json").read_text()).get("documents")
        except (OSError, ValueError) as e:
            raise DamagedTable(self.folder / "format.json", f"unreadable ({e})") from None
        n = len(self.offsets) - 1
        if documents is not None and n != documents:
            raise DamagedTable(self.folder / "ids.offsets.npy", f"holds {n} documents, format.json says {documents}")
        for name, array in zip(ARRAYS[1:], (self.tie_rank, self.hashes, self.hash_docs)):
            if len(array) != n:
                raise DamagedTable(self.folder / name, f"holds {len(array)} entries for {n} documents")
        if n >= 0 and (int(self.offsets[0]) != 0 or int(self.offsets[-1]) != size):
            raise DamagedTable(self.folder / "ids.utf8", f"is {size} bytes; its offsets say {int(self.offsets[-1])}")

    def __reduce__(self):  # to another process: the folder, mapped again there (an mmap does not pickle)
        return (IdTable, (self.folder,))

    # -- building ---------------------------------------------------------------------------------------------
    @classmethod
    def write(cls, folder: Path, ids: Iterable[str]) -> "IdTable":
        """Write the table of ``ids`` (in doc-number order) into ``folder`` atomically, and open it."""
        folder = Path(folder)
        with atomic_dir(folder) as tmp:
            tmp = Path(tmp)
            offsets, hashes, encoded = [0], [], []
            with open(tmp / "ids.utf8", "wb") as out:
                at = 0
                for doc_id in ids:
                    raw = doc_id.encode("utf-8")
                    out.write(raw)
                    at += len(raw)
                    offsets.append(at)
                    hashes.append(id_hash(doc_id))
                    encoded.append(raw)
            n = len(encoded)
            np.save(tmp / "ids.offsets.npy", np.asarray(offsets, dtype="<i8"))
            order = np.asarray(sorted(range(n), key=encoded.__getitem__), dtype=np.int64)  # code point order
            rank = np.empty(n, dtype="<i4")
            rank[order] = np.arange(n, dtype=np.int32)
            np.save(tmp / "tie-rank.npy", rank)
            del encoded, order
            h = np.asarray(hashes, dtype="<u8")
            by_hash = np.argsort(h, kind="stable")
            np.save(tmp / "hashes.npy", h[by_hash])
            np.save(tmp / "hash-docs.npy", by_hash.astype("<i4"))
            (tmp / "format.json").write_text(json.dumps({"format": FORMAT, "documents": n,
                                                         "digests": table_digests(tmp, FILES)}))
        return cls(folder)

    @classmethod
    def of(cls, index_path: Path, read_ids) -> "IdTable":
        """The index's table, written on first use where the index has none (an index built before tables
        existed): ``read_ids()`` gives the stored ids in doc-number order, once."""
        folder = Path(index_path) / FOLDER
        marker = folder / "format.json"
        try:
            if marker.is_file() and json.loads(marker.read_text()).get("format") == FORMAT:
                return cls(folder)
        except (DamagedTable, ValueError, OSError) as e:  # rebuilt from the index, as a damaged index is rebuilt
            log.warning("%s; the id table is written again from the index's stored ids", e)
        return cls.write(folder, read_ids())  # a table of another format is replaced whole (atomic_dir)

    # -- reading ----------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if isinstance(i, np.ndarray) and i.ndim:  # many doc numbers (a numpy object array's fancy indexing)
            return np.asarray(self.take(i), dtype=object)
        i = int(i)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"doc number {i} out of range (0..{len(self) - 1})")
        return self._bytes[int(self.offsets[i]):int(self.offsets[i + 1])].decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        starts = self.offsets
        data = self._bytes
        for i in range(len(self)):
            yield data[int(starts[i]):int(starts[i + 1])].decode("utf-8")

    def take(self, numbers) -> list[str]:
        """The ids of many doc numbers at once (a packed batch's hits)."""
        numbers = np.asarray(numbers, dtype=np.int64)
        starts, ends = self.offsets[numbers].tolist(), self.offsets[numbers + 1].tolist()
        data = self._bytes
        return [data[a:b].decode("utf-8") for a, b in zip(starts, ends)]

    def position(self, doc_id: str) -> int | None:
        """The doc number of ``doc_id``, or ``None`` (an O(log n) look-up: no table of every id is held)."""
        return position_by_hash(self.hashes, self.hash_docs, doc_id, lambda d: self[d] == doc_id)

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and self.position(doc_id) is not None

    def missing(self, doc_ids: Iterable[str]) -> list[str]:
        """Those of ``doc_ids`` the index does not hold, in the order given (O(len(doc_ids) · log n))."""
        return [d for d in doc_ids if self.position(d) is None]

    @property
    def tie_rank_path(self) -> str:
        return os.fspath(self.folder / "tie-rank.npy")
