"""A local BEIR folder: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``.

Every string field of a corpus record other than ``_id`` becomes a document field (lists of
strings become multi-instance fields), so ``title``, ``text``, ``url``, ``authors`` … all work.
"""

from __future__ import annotations

import json
import logging
from functools import cached_property
from pathlib import Path
from typing import Iterator

from irglow.data.records import LUCENE_TERM_LIMIT, Document, Qrel, Query, make_document
from irglow.data.trec import FormatError, check_unicode, is_gzip, read_qrels, read_topics, record_id, utf8_lines
from irglow.utils.digest import content_digest
from irglow.utils.paths import collection_data_dir
from irglow.data.docstore import ExportedStore, JsonLinesStore, docs_store

log = logging.getLogger(__name__)


def is_beir_folder(path: str | Path) -> bool:
    return (Path(path) / "corpus.jsonl").is_file()


class BeirCollection:
    def __init__(self, path: str | Path):
        self.path = Path(path).resolve()
        if not is_beir_folder(self.path):
            raise FileNotFoundError(f"{self.path} is not a BEIR folder (no corpus.jsonl)")

    @cached_property
    def name(self) -> str:
        """The folder's name and a digest of corpus.jsonl's *content* (a copy that keeps size and mtime
        but changes a word is another collection, and gets another index)."""
        return f"beir-{self.path.name}-{content_digest(self.path / 'corpus.jsonl')[:12]}"

    def docs_iter(self) -> Iterator[Document]:
        """Documents in file order; a malformed record, a non-UTF-8 line, an id that cannot appear in
        a TREC file or a Lucene term, or a repeated id stops with ``corpus.jsonl:line``.  Field values
        that are not text (numbers, objects) are left out and counted in one warning per field."""
        corpus = self.path / "corpus.jsonl"
        first_line: dict[str, int] = {}
        dropped: dict[str, int] = {}
        for n, line in utf8_lines(corpus):
            if not line.strip():
                continue
            doc = self._document(n, line, dropped)
            if doc.doc_id in first_line:
                raise FormatError(corpus, n, f"duplicate document id {doc.doc_id!r} (first on line "
                                             f"{first_line[doc.doc_id]})", line)
            first_line[doc.doc_id] = n
            yield doc
        reported = self.__dict__.setdefault("_reported_fields", set())
        for k, count in dropped.items():
            if k in reported:
                continue
            reported.add(k)
            log.warning("%s: field %r is not text in %d records (numbers, objects or mixed lists); those "
                        "values are left out", corpus, k, count)

    def _document(self, n: int, line: str, dropped: dict[str, int] | None = None) -> Document:
        """Line ``n`` of corpus.jsonl as a document (what ``docs_iter`` and the document store both read)."""
        corpus = self.path / "corpus.jsonl"
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise FormatError(corpus, n, f"not a BEIR corpus record ({e})", line) from None
        if not isinstance(obj, dict):
            raise FormatError(corpus, n, f"expected one JSON object per line (JSON Lines), got a "
                                         f"{type(obj).__name__}", line)
        if "_id" not in obj:
            raise FormatError(corpus, n, "not a BEIR corpus record (no '_id')", line)
        doc_id = record_id(corpus, n, obj.pop("_id"), "document", line)
        if len(doc_id.encode("utf-8")) > LUCENE_TERM_LIMIT:
            raise FormatError(corpus, n, f"document id is {len(doc_id.encode('utf-8'))} bytes; Lucene's limit "
                                         f"for an indexed term is {LUCENE_TERM_LIMIT}", line[:200])
        fields = {}
        for k, v in obj.items():
            if isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v)):
                for text in [v] if isinstance(v, str) else v:
                    check_unicode(corpus, n, text, f"field {k!r} of document {doc_id}", line[:200])
                fields[k] = v
            elif v not in (None, {}, []) and dropped is not None:  # an empty value loses nothing
                dropped[k] = dropped.get(k, 0) + 1
        return make_document(doc_id, **fields)

    def docs_store(self):
        """Documents by id from corpus.jsonl itself: each record's offset, read and parsed on request
        (:mod:`irglow.data.docstore`)."""
        if is_gzip(self.path / "corpus.jsonl"):  # offsets into compressed bytes read nothing: copy it decompressed
            log.warning("%s/corpus.jsonl is gzip-compressed: its documents are copied once, decompressed, to be read "
                        "by offset (gunzip it to skip the copy)", self.path)
            return ExportedStore.of(self)
        # every record is checked as docs_iter checks it (a repeated id is found on the ids' hashes), and the
        # field names are gathered on the way: one pass per corpus content, its arrays kept for every later process
        fields: dict[str, None] = {}

        def id_of(n: int, line: str) -> str:
            doc = self._document(n, line)
            for k in doc.fields:
                fields.setdefault(k, None)
            return doc.doc_id

        return JsonLinesStore.scan(self.path / "corpus.jsonl", self.name, self._document, id_of,
                                   tables=collection_data_dir(self) / "docstores" / self.name,
                                   meta=lambda: {"fields": list(fields)})

    @property
    def fields(self) -> tuple[str, ...]:
        """Field names in first-seen order over the *whole* corpus (a field first seen late still counts): learnt
        by the document store's one pass over this content, kept with its tables."""
        store = docs_store(self)
        if "fields" in getattr(store, "meta", {}):
            return tuple(store.meta["fields"])
        seen: dict[str, None] = {}  # a gzipped corpus (an exported store): read once, for this object
        for doc in self.docs_iter():
            for k in doc.fields:
                seen.setdefault(k, None)
        store.meta = {**getattr(store, "meta", {}), "fields": list(seen)}
        return tuple(seen)

    @cached_property
    def splits(self) -> tuple[str, ...]:
        return tuple(sorted(p.stem for p in (self.path / "qrels").glob("*.tsv")))

    @cached_property
    def _all_queries(self) -> dict[str, Query]:
        return {q.query_id: q for q in read_topics(self.path / "queries.jsonl")}

    def qrels(self, split: str) -> list[Qrel]:
        path = self.path / "qrels" / f"{split}.tsv"
        if not path.is_file():
            raise KeyError(f"{self.path} has no qrels for split {split!r}; splits: {list(self.splits)}")
        qrels = read_qrels(path)
        self._report_dangling(split, qrels)
        return qrels

    def _report_dangling(self, split: str, qrels: list[Qrel]) -> None:
        """Say once per split how many judgments point at queries or documents the collection lacks."""
        reported = self.__dict__.setdefault("_reported", set())
        if split in reported:
            return
        reported.add(split)
        no_query = {q.query_id for q in qrels} - set(self._all_queries)

        docs = docs_store(self)  # a look-up per judgment in the store's kept id hashes, not a corpus scan
        known: dict[str, bool] = {}
        no_doc = [q for q in qrels if not known.setdefault(q.doc_id, q.doc_id in docs)]
        if no_query:
            log.warning("%s qrels/%s.tsv: %d judged queries are not in queries.jsonl (not searched; they score 0 "
                        "in evaluation), e.g. %s", self.path.name, split, len(no_query), sorted(no_query)[:3])
        if no_doc:
            log.warning("%s qrels/%s.tsv: %d judgments (%d queries) name documents missing from corpus.jsonl",
                        self.path.name, split, len(no_doc), len({q.query_id for q in no_doc}))

    def queries(self, split: str) -> list[Query]:
        """The queries judged in ``split``, in qrels order."""
        wanted = dict.fromkeys(q.query_id for q in self.qrels(split))
        return [self._all_queries[qid] for qid in wanted if qid in self._all_queries]
