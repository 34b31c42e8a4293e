"""Multi-field Lucene indexes built by Anserini's own indexer, cached and written atomically.

Each document field becomes its own Lucene field, plus the combined ``contents`` that
Pyserini searches by default; positions, document vectors and raw text are stored so
phrases, statistics and re-ranking all work off one index.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from irglow.defaults import STEMMER, STEMMERS
from irglow.utils.progress import tqdm

from irglow.data.records import LUCENE_TERM_LIMIT
from irglow.index import jvm_aot
from irglow.index.jvm import (autoclass, bulk_search_available, java_output, layout, lucene_searcher_class,
                              short_command, start_jvm, started)
from irglow.utils.paths import data_dir  # noqa: F401 (re-exported: where caches live)
from irglow.settings import setting
from irglow.config import check_values
from irglow.index.id_table import IdTable
from irglow.utils.atomic import atomic_dir, sweep_stale
from irglow.utils.paths import keep_data_dir

log = logging.getLogger(__name__)

RESERVED_FIELDS = {"id", "contents", "raw", "vector"}
# 3: no raw JSON stored (no stage reads it: documents come from the document store; it was 39% of the index, more
# than the JSON itself), document vectors of `contents` alone (GENERATOR), the id table written with the index.  The format is part of an index's folder name.
INDEX_FORMAT = 3

# What Anserini stores, and who reads it: positions (phrase queries: TW-BERT's bi-grams, bm25-ngram), document
# vectors with positions (RM3's feedback terms, TW-BERT's phrase frequencies through irglow.index.forward, the
# statistics' exact lengths).  Stored fields hold the ids alone.
STORE = ("-storePositions", "-storeDocvectors")
INDEX_RECORD = "irglow-index.json"  # an index's metadata, written last: a folder without it is no index
GENERATOR = "IrglowFieldsGenerator"  # irglow/index/java/IrglowFieldsGenerator.java: document vectors of contents only


@dataclass(frozen=True)
class IndexConfig:
    """How to analyze and what to store; part of the cache key."""

    fields: tuple[str, ...] | None = setting(None, "the fields indexed (unset: every field of the collection)")
    stemmer: str = setting(STEMMER, "the analyzer's stemmer", choices=STEMMERS)
    keep_stopwords: bool = setting(False, "index stopwords too")
    threads: int = setting(0, "indexing threads (0: every core this process may use)", low=0)

    def key(self) -> str:
        """What the index is built with, as a short string (stemmer, fields, positions …): part of the index folder's
        name, so another setting builds another index instead of reusing this one."""
        d = asdict(self)
        d.pop("threads")
        if INDEX_FORMAT != 2:  # what an index of the same settings holds changed: another folder
            d["format"] = INDEX_FORMAT
        return hashlib.sha1(json.dumps(d, sort_keys=True).encode()).hexdigest()[:8]


def lucene_field_name(name: str) -> str:
    """Collection field → Lucene field; names Anserini reserves get a ``_field`` suffix.

    Args:
        name: A collection's field name.
    """
    return f"{name}_field" if name in RESERVED_FIELDS else name


class Token(NamedTuple):
    """One analyzed token: the index term, its Lucene position (removed stopwords leave gaps) and the character span
    of the word it came from."""
    term: str  # analyzed form, as indexed
    position: int  # Lucene position (removed stopwords leave gaps)
    start: int  # surface span in the original text
    end: int


def utf16_to_str_offsets(text: str) -> list[int] | None:
    """Map UTF-16 offsets (what Lucene reports) to Python string indices; ``None`` if they agree.

    A character outside the BMP (emoji, CJK extension B …) is two UTF-16 units but one Python
    character, so without this every later surface span would be shifted.

    Args:
        text: The text Java measured in UTF-16 code units.
    """
    if all(ord(c) < 0x10000 for c in text):
        return None
    out = []
    for i, c in enumerate(text):
        out.append(i)
        if ord(c) >= 0x10000:
            out.append(i)  # the low surrogate maps to the same character
    out.append(len(text))
    return out


@dataclass
class LuceneIndex:
    """An index directory plus irglow's metadata about it.

    Args:
        path: The index folder.
        fields: The Lucene field names of the document's fields (not ``contents``, every field's text together).
        meta: irglow's record of the build (``irglow-index.json``: source, documents, settings, digests).
    """

    path: Path
    fields: tuple[str, ...]  # Lucene field names of the document fields (not ``contents``)
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def open(cls, path: str | Path) -> "LuceneIndex":
        """An index irglow built, opened read-only (its settings read from the folder, the JVM started if needed).

        Args:
            path: An index folder irglow built.
        """
        path = Path(path)
        meta_file = path / INDEX_RECORD
        if not meta_file.is_file():
            raise FileNotFoundError(f"{path} is not an irglow index (no {INDEX_RECORD}); build it with `irglow index`")
        meta = json.loads(meta_file.read_text())
        return cls(path=path, fields=tuple(meta["lucene_fields"]), meta=meta)

    @cached_property
    def analyzer(self):
        """The analyzer the index was built with (same stemmer and stopwords)."""
        start_jvm()
        cfg = self.meta.get("config", {})
        analyzer_cls = autoclass("io.anserini.analysis.DefaultEnglishAnalyzer")
        return analyzer_cls.fromArguments(cfg.get("stemmer", STEMMER), bool(cfg.get("keep_stopwords", False)), None)

    def analyze(self, text: str) -> list[str]:
        """Text → analyzed terms exactly as Lucene indexed them.

        Args:
            text: Any text (a query).
        """
        utils = autoclass("io.anserini.analysis.AnalyzerUtils")
        return list(utils.analyze(self.analyzer, text))

    def tokens(self, text: str, field: str = "contents") -> list["Token"]:
        """Analyzed terms with their query positions (stopword gaps kept) and surface character spans.

        Args:
            text: Any text.
            field: The field whose analyzer is used.
        """
        start_jvm()
        attr = "org.apache.lucene.analysis.tokenattributes."
        jclass = autoclass("java.lang.Class")
        from jnius import cast

        stream = self.analyzer.tokenStream(field, text)
        term_attr = cast(attr + "CharTermAttribute", stream.addAttribute(jclass.forName(attr + "CharTermAttribute")))
        offset_attr = cast(attr + "OffsetAttribute", stream.addAttribute(jclass.forName(attr + "OffsetAttribute")))
        pos_attr = cast(attr + "PositionIncrementAttribute",
                        stream.addAttribute(jclass.forName(attr + "PositionIncrementAttribute")))
        out: list[Token] = []
        position = -1
        to_str = utf16_to_str_offsets(text)
        try:
            stream.reset()
            while stream.incrementToken():
                position += pos_attr.getPositionIncrement()
                start, end = offset_attr.startOffset(), offset_attr.endOffset()
                if to_str is not None:
                    start, end = to_str[start], to_str[end]
                out.append(Token(term_attr.toString(), position, start, end))
            stream.end()
        finally:
            stream.close()
        return out

    @cached_property
    def ids(self) -> "IdTable":
        """The index's id table (:mod:`irglow.index.id_table`): written once beside the index, memory-mapped."""
        return IdTable.of(self.path, lambda: stored_ids(self))

    @cached_property
    def tie_order(self):
        """The bulk helper's trec_eval tie order (each document's id rank in code point order), read by Java from
        the id table's file: no pass over the stored ids."""
        start_jvm()
        return autoclass("irglow.BulkSearch").loadTieOrder(self.ids.tie_rank_path)

    @cached_property
    def lucene_reader(self):
        """Lucene's ``DirectoryReader`` on the index, as Anserini's ``IndexReaderUtils.getReader`` (Pyserini's
        ``LuceneIndexReader``) opens it, without either: ``pyserini.index.lucene`` loads Pyserini's catalogue of
        prebuilt indexes and pandas, and Anserini's class its own dependencies — most of a lexical command's start."""
        start_jvm()
        from jnius import cast  # (after start_jvm: importing jnius starts a JVM)

        path = autoclass("java.io.File")(str(self.path)).toPath()
        reader = autoclass("org.apache.lucene.index.DirectoryReader").open(
            autoclass("org.apache.lucene.store.FSDirectory").open(path))
        return cast("org.apache.lucene.index.IndexReader", reader)  # as getReader types it (IndexSearcher's overload)

    def searcher(self):
        """Pyserini's ``LuceneSearcher`` over this index, with the index's own analyzer."""
        s = lucene_searcher_class()(str(self.path))
        s.set_analyzer(self.analyzer)
        return s


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity: a container's or a job's share, not the machine's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def _lucene_doc_count(path: Path) -> int:
    """Documents Lucene actually holds in the index at ``path`` (opens and closes a reader)."""
    start_jvm()
    directory = autoclass("org.apache.lucene.store.FSDirectory").open(autoclass("java.io.File")(str(path)).toPath())
    try:
        reader = autoclass("org.apache.lucene.index.DirectoryReader").open(directory)
        try:
            return int(reader.numDocs())
        finally:
            reader.close()
    finally:
        directory.close()


def _verified(target: Path) -> LuceneIndex | None:
    """The cached index at ``target`` if it opens and holds the documents its metadata promises; ``None``
    (and a warning naming the folder) for an incomplete or corrupt one, which is then rebuilt."""
    try:
        index = LuceneIndex.open(target)
        expected = index.meta.get("indexed")
        held = int(index.lucene_reader.numDocs())  # the reader every search then uses: the index opened once
    except FileNotFoundError:
        log.warning("ignoring incomplete index at %s; rebuilding it", target)
        return None
    except Exception as e:  # noqa: BLE001 - a Java CorruptIndexException, a missing segment file …
        log.warning("the cached index at %s cannot be read (%s); rebuilding it", target,
                    str(e).splitlines()[0][:200] if str(e) else type(e).__name__)
        return None
    if expected is not None and held != expected:
        log.warning("the cached index at %s holds %d documents, its record says %d; rebuilding it", target,
                    held, expected)
        return None
    try:
        (target / INDEX_RECORD).touch()  # last use, for `irglow cache list/prune`
    except OSError:  # a read-only cache (shared, or on a read-only mount) is still searched
        log.debug("cannot record the last use of %s (read-only)", target)
    return index


def build_index(collection, config: IndexConfig | None = None, root: str | Path | None = None,
                force: bool = False, short: bool = False) -> LuceneIndex:
    """Build (or reuse) the index of ``collection`` under ``<data>/indexes/<name>-<settings>``.

    The collection's name carries a digest of its content, so a changed corpus gets a new index; a
    cached index is reused only after Lucene opens it and counts the documents its metadata records.
    A build is published only when Lucene holds every non-empty document that was exported.  ``short``: the
    caller's work on the index is short (a search of a few queries), so a JVM this call starts for an index already
    built compiles with C1 alone (:func:`irglow.index.jvm.short_command`); building one is long work.

    Args:
        collection: The collection (:func:`~irglow.data.collection.load_collection`'s: its name, fields and
            documents).
        config: How to analyze and what to index (:class:`IndexConfig`; unset: every field, Porter stemming).
        root: The data folder the index is kept under (unset: ``$IRGLOW_DATA``, else ``./data``).
        force: Build again even where an index with the same content and settings is cached.
        short: The caller's work on the index is a short search (its JVM starts with C1 alone).

    Returns:
        The opened index (:class:`LuceneIndex`).
    """
    import time

    config = config or IndexConfig()
    check_index_config(config)
    keep_data_dir(collection, data_dir(root))  # its document store's tables beside its indexes
    target = data_dir(root) / "indexes" / f"{collection.name}-{config.key()}"
    if short and not force and (target / INDEX_RECORD).is_file():
        short_command()
    start_jvm(data_dir(root))  # its crash logs beside the indexes of this data folder, not $IRGLOW_DATA's
    if target.exists() and not force:
        cached = _verified(target)
        if cached is not None:
            _record_start_cache(target)  # indexes built before the cache existed, or by another Java
            return cached
    fields, lucene_fields = _index_fields(collection, config)
    t0 = time.perf_counter()
    sweep_stale(tempfile.gettempdir(), "irglow-json-")  # corpus copies of builds that were killed
    with tempfile.TemporaryDirectory(prefix=f"irglow-json-{os.getpid()}-") as json_dir, \
            atomic_dir(target) as tmp_index:
        n_docs, n_empty = _export_json(collection, fields, lucene_fields, Path(json_dir) / "docs.jsonl")
        start_jvm()
        threads = config.threads or available_cores()
        t_index = time.perf_counter()
        from irglow.index.jvm import bulk_search_available

        # irglow's generator (compiled with the bulk helper) keeps document vectors for `contents` alone; without a
        # compiler Anserini's default stores them for every field too (a larger index, the same runs).  -optimize
        # merges the segments into one, as Pyserini's prebuilt indexes are: every search then looks each term up
        # once (a 10-query search on a million documents 0.09 s faster, for 136 s more indexing)
        generator = GENERATOR if bulk_search_available() else "DefaultLuceneDocumentGenerator"
        args = ["-collection", "JsonCollection", "-input", json_dir, "-index", str(tmp_index),
                "-generator", generator, "-threads", str(threads),
                *STORE, "-stemmer", config.stemmer, "-optimize", "-quiet"]
        if config.keep_stopwords:
            args.append("-keepStopwords")
        if lucene_fields:
            args += ["-fields", *lucene_fields]
        log.info("indexing %d documents with Anserini (%d threads) into %s", n_docs, threads, target)
        _run_anserini(args, collection.name, target)
        held = _lucene_doc_count(Path(tmp_index))
        if held != n_docs - n_empty:
            raise RuntimeError(f"indexing {collection.name} failed: Lucene holds {held} documents, {n_docs - n_empty} "
                               f"non-empty ones were exported (Anserini drops a batch it cannot index: an over-long "
                               f"term or id, a disk error); nothing was cached")
        built = LuceneIndex(Path(tmp_index), tuple(lucene_fields), {
            "format": INDEX_FORMAT, "collection": collection.name, "source": _source(collection),
            "fields": list(fields), "lucene_fields": list(lucene_fields), "config": asdict(config),
            "documents": n_docs, "indexed": held, "skipped_empty": n_empty,
            "build_seconds": round(time.perf_counter() - t0, 3), "threads": threads, "generator": generator,
            "lucene_seconds": round(time.perf_counter() - t_index, 3),
            "seconds_per_million": round((time.perf_counter() - t0) * 1e6 / n_docs, 1)})
        t_ids = time.perf_counter()
        built.ids  # noqa: B018 - the id table, written once with the index (every process maps it)
        built.meta["id_table_seconds"] = round(time.perf_counter() - t_ids, 3)
        # its metadata last: a folder without it is no index (the id table is written first)
        (Path(tmp_index) / INDEX_RECORD).write_text(json.dumps(built.meta, indent=2))
        built.lucene_reader.close()  # the folder is renamed into place next
    if n_empty:
        log.warning("%d of %d documents had no text in any field; Lucene does not index empty documents", n_empty, n_docs)
    _record_start_cache(target)  # the JVM's start-up cache, recorded on this index once per Java and Anserini
    return LuceneIndex.open(target)


def _record_start_cache(index: Path) -> None:
    """The JVM's start-up cache (:mod:`irglow.index.jvm_aot`), recorded on ``index`` where this JVM has none."""
    jvm_aot.ensure(index, started(), layout())


def _index_fields(collection, config: IndexConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The fields indexed (``index.fields``, else the collection's) and their Lucene names, checked."""
    available = tuple(collection.fields)
    if config.fields:
        unknown = [f for f in config.fields if f not in available]
        if unknown:
            raise ValueError(f"fields {unknown} are not in {collection.name}; its fields: {list(available)}")
    fields = tuple(config.fields or available)
    lucene_fields = tuple(lucene_field_name(f) for f in fields)
    clash = sorted({lf for lf in lucene_fields if lucene_fields.count(lf) > 1})
    if clash:
        raise ValueError(f"fields {list(fields)} map to the Lucene field names {list(lucene_fields)}: {clash} "
                         f"would collide (names in {sorted(RESERVED_FIELDS)} get '_field' appended); "
                         f"index with --fields to leave one out")
    return fields, lucene_fields


def _export_json(collection, fields, lucene_fields, path: Path) -> tuple[int, int]:
    """The corpus as Anserini's JsonCollection (``contents`` and one key per field), streamed; returns (documents,
    empty documents).  An id over Lucene's term limit, an empty corpus or one with no text are refused."""
    n_docs = n_empty = 0
    with open(path, "w", encoding="utf-8") as out:
        total = collection.docs_count() if hasattr(collection, "docs_count") else None
        for doc in tqdm(collection.docs_iter(), total=total, desc=f"export {collection.name}", unit="doc"):
            if len(doc.doc_id.encode("utf-8")) > LUCENE_TERM_LIMIT:
                raise ValueError(f"{collection.name}: document {doc.doc_id[:60]!r}… has an id of "
                                 f"{len(doc.doc_id.encode('utf-8'))} bytes; Lucene's limit for a term is "
                                 f"{LUCENE_TERM_LIMIT}")
            record = {"id": doc.doc_id, "contents": doc.contents(fields)}
            for name, lucene_name in zip(fields, lucene_fields):
                if name in doc.fields:
                    record[lucene_name] = doc.text(name)
            n_docs += 1
            n_empty += not record["contents"].strip()
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    if n_docs == 0:
        raise ValueError(f"{collection.name} has no documents: nothing to index")
    if n_docs == n_empty:
        raise ValueError(f"{collection.name}: none of its {n_docs} documents has text in the fields "
                         f"{list(fields)}; nothing to index")
    return n_docs, n_empty


def _run_anserini(args: list[str], name: str, target: Path) -> None:
    """Anserini's IndexCollection with ``args``; its output printed, a full disk said in one line."""
    failure = None
    with java_output() as printed:
        try:
            autoclass("io.anserini.index.IndexCollection").main(args)
        except Exception as e:  # noqa: BLE001 — a JavaException; named below, or raised as it is
            failure = e
    full = any("No space left on device" in line for line in printed) or \
        "No space left on device" in str(failure or "")
    if full:  # Anserini's stack traces say it a hundred times; the folder is what the user needs
        raise OSError(errno.ENOSPC, f"no space left on the device holding {target.parent} while indexing "
                                    f"{name}; nothing was cached (free space, or point --data-dir / "
                                    f"IRGLOW_DATA elsewhere)", str(target.parent))
    for line in printed:
        print(line, file=sys.stderr)
    if failure is not None:
        raise failure


def stored_ids(index: LuceneIndex) -> list[str]:
    """Every Lucene document's stored id in doc-number order, read from the index (once, when its id table is
    written): in one transfer through the bulk helper, else one stored-fields call per document.

    Args:
        index: An index irglow built.
    """
    reader = index.lucene_reader
    n = reader.maxDoc()
    if bulk_search_available():
        return autoclass("irglow.BulkSearch").storedField(reader, "id").split("\n") if n else []
    stored = reader.storedFields()
    return [stored.document(i).get("id") for i in tqdm(range(n), desc="doc ids", unit="doc", disable=n < 50000)]


def doc_ids(index: LuceneIndex) -> "IdTable":
    """Lucene doc number → collection doc id: the index's memory-mapped id table (:attr:`LuceneIndex.ids`).

    Args:
        index: An index irglow built.
    """
    return index.ids


def _source(collection) -> str:
    """Where a collection comes from (a folder, an ir_datasets id, the demo): groups a source's indexes
    in ``irglow cache list`` so older versions of the same corpus can be pruned.  A collection without a folder
    or dataset id is its whole name: two demo specs are two corpora, not versions of one."""
    base = getattr(collection, "base", collection)
    return str(getattr(base, "path", None) or getattr(base, "dataset_id", None) or base.name)




def check_index_config(config: IndexConfig) -> None:
    """Types and allowed values before any work (a config file is not restricted like the CLI).

    Args:
        config: The ``[index]`` settings.
    """
    if config.stemmer not in STEMMERS:
        raise ValueError(f"index.stemmer = {config.stemmer!r}; allowed: {', '.join(STEMMERS)}")
    check_values(config, "index")  # keep_stopwords a boolean, threads a whole number > 0
    if config.fields is not None and not (isinstance(config.fields, tuple) and
                                          all(isinstance(f, str) and f for f in config.fields)):
        raise ValueError(f"index.fields = {config.fields!r} must be a list of field names")
