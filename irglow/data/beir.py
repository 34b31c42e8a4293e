"""A local BEIR folder: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``.

Every string field of a corpus record other than ``_id`` becomes a document field (lists of
strings become multi-instance fields), so ``title``, ``text``, ``url``, ``authors`` … all work.
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from pathlib import Path
from typing import Iterator

from irglow.data.records import Document, Qrel, Query, make_document
from irglow.data.trec import FormatError, read_qrels, read_topics


def is_beir_folder(path: str | Path) -> bool:
    return (Path(path) / "corpus.jsonl").is_file()


class BeirCollection:
    def __init__(self, path: str | Path):
        self.path = Path(path).resolve()
        if not is_beir_folder(self.path):
            raise FileNotFoundError(f"{self.path} is not a BEIR folder (no corpus.jsonl)")
        corpus = self.path / "corpus.jsonl"
        st = corpus.stat()
        digest = hashlib.sha1(f"{corpus}:{st.st_size}:{int(st.st_mtime)}".encode()).hexdigest()[:8]
        self.name = f"beir-{self.path.name}-{digest}"

    def docs_iter(self) -> Iterator[Document]:
        corpus = self.path / "corpus.jsonl"
        with open(corpus, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                    doc_id = obj.pop("_id")
                except (ValueError, KeyError) as e:
                    raise FormatError(corpus, n, f"not a BEIR corpus record ({e})", line) from None
                fields = {k: v for k, v in obj.items()
                          if isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v))}
                yield make_document(str(doc_id), **fields)

    @cached_property
    def fields(self) -> tuple[str, ...]:
        """Field names in first-seen order over the first 1,000 records."""
        seen: dict[str, None] = {}
        for i, doc in enumerate(self.docs_iter()):
            for k in doc.fields:
                seen.setdefault(k, None)
            if i >= 1000:
                break
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
        return read_qrels(path)

    def queries(self, split: str) -> list[Query]:
        """The queries judged in ``split``, in qrels order."""
        wanted = dict.fromkeys(q.query_id for q in self.qrels(split))
        return [self._all_queries[qid] for qid in wanted if qid in self._all_queries]
