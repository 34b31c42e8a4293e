"""Content digests: what every cache in irglow is keyed on (never names, sizes or timestamps).

A copy that keeps size and mtime (``cp -p``, ``rsync -a``, ``tar``) but changes one byte must give
another key, so files are hashed whole (streaming; SHA-256 runs at several hundred MB/s, little next
to indexing) and queries and qrels are hashed as the records the code actually reads.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable
from irglow.utils.paths import data_dir

DIGEST_CHARS = 16


def value_digest(value: Any) -> str:
    """A digest of a JSON-able value (keys sorted, so dict order does not matter)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:DIGEST_CHARS]


def model_digest(model, **settings) -> str:
    """A digest of a torch model's weights and the settings its outputs depend on (collection statistics, token
    budgets, an export's settings …): what an encoding or an exported graph on disk belongs to."""
    import torch

    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes() if tensor.numel() else b"")
    return value_digest({"weights": h.hexdigest(), **settings})


def file_digest(path: str | Path, chunk: int = 1 << 20, chars: int | None = DIGEST_CHARS) -> str:
    """SHA-256 of a file's bytes, read in chunks (constant memory whatever the size); its first ``chars`` hex digits
    (``None``: all 64, what a file is checked against)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()[:chars]


def content_digest(path: str | Path) -> str:
    """:func:`file_digest` of a file, remembered under ``<data>/digests`` against its identity and state (device,
    inode, size, modification and change times in ns): a large corpus is hashed once, not by every process.  A
    copy (another inode) or any write (a new change time, which no program can set back) is hashed again, so the
    digest is still of the content."""
    import os

    path = Path(path).resolve()
    st = os.stat(path)
    stamp = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    memo = data_dir() / "digests" / (hashlib.sha256(str(path).encode()).hexdigest()[:24] + ".json")
    try:
        kept = json.loads(memo.read_text())
        if kept.get("stamp") == stamp and kept.get("path") == str(path):
            return kept["digest"]
    except (OSError, ValueError, AttributeError):
        pass
    digest = file_digest(path)
    try:
        from irglow.utils.atomic import atomic_write_text

        memo.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(memo, json.dumps({"path": str(path), "stamp": stamp, "digest": digest}))
    except OSError:  # a read-only data folder: hashed again next time
        pass
    return digest


def records_digest(records: Iterable[tuple]) -> str:
    """A digest of records in order (queries as ``(id, text)``, qrels as ``(qid, docid, label)``)."""
    h = hashlib.sha256()
    for r in records:
        h.update(json.dumps([str(x) if not isinstance(x, (int, float)) else x for x in r]).encode())
        h.update(b"\n")
    return h.hexdigest()[:DIGEST_CHARS]


def queries_digest(queries: Iterable) -> str:
    return records_digest((q.query_id, q.text) for q in queries)


def qrels_digest(qrels: Iterable) -> str:
    return records_digest(sorted((q.query_id, q.doc_id, int(q.relevance)) for q in qrels))


def tree_digest(path: str | Path) -> str:
    """A file's digest, or a folder's: every file below it (relative name and bytes), in sorted order."""
    path = Path(path)
    if path.is_file():
        return file_digest(path)
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(f"{f.relative_to(path).as_posix()}\0{file_digest(f)}\n".encode())
    return h.hexdigest()[:DIGEST_CHARS]


# settings whose value may name a local file or folder that a stage loads: a checkpoint, a model, a settings file
PATH_KEYS = ("base_model", "config", "model_dir")


def local_paths_digest(settings: Any, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """``{setting path: content digest}`` for every setting of :data:`PATH_KEYS` (at any depth) that names an
    existing local file or folder: a model replaced in place, or an edited settings file, changes the key
    of whatever was built from it, though its name stayed the same."""
    found: dict[str, str] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in PATH_KEYS and key not in skip and isinstance(value, str) and value and Path(value).exists():
                    found[f"{prefix}{key}"] = tree_digest(value)
                else:
                    walk(value, f"{prefix}{key}.")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{prefix}{i}.")

    walk(settings, "")
    return found


# -- tables built once and memory-mapped by every process: a digest recorded at build, checked once per process ---
_checked: set[tuple] = set()


def table_digests(folder: str | Path, names: Iterable[str]) -> dict[str, str]:
    """``{file: SHA-256}`` of a table's files as they are built (recorded beside them): a file damaged later at
    the same size (two ids swapped) is found by :func:`check_table_digests`, where sizes and end points agree."""
    folder = Path(folder)
    out = {}
    for name in names:
        out[name] = file_digest(folder / name, 1 << 22, chars=None)
        _checked.add(_stamp(folder / name, out[name]))
    return out


def _stamp(path: Path, digest: str) -> tuple:
    import os

    st = os.stat(path)
    return (str(path.resolve()), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, digest)


def check_table_digests(folder: str | Path, recorded: dict[str, str]) -> str | None:
    """The first of a table's files whose bytes differ from the digest recorded when it was built (``None``: all
    agree).  Each file is hashed the first time this process opens it (a few hundred MB/s: ~30 ms for a million
    documents' ids, little next to the JVM's start) and again only once it changed on disk."""
    folder = Path(folder)
    for name, digest in recorded.items():
        path = folder / name
        try:
            stamp = _stamp(path, digest)
        except OSError:
            return name
        if stamp in _checked:
            continue
        if file_digest(path, 1 << 22, chars=None) != digest:
            return name
        _checked.add(stamp)
    return None
