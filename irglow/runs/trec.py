"""The Run type: ranked lists per query, read and written as TREC run files (atomically)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from irglow.data.records import ScoredDoc
from irglow.data.trec import FormatError
from irglow.utils.atomic import atomic_file


@dataclass
class Run:
    """``ranking[qid]`` is a list of ``(doc_id, score)``, best first."""

    ranking: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    tag: str = "irglow"

    @classmethod
    def from_scored_docs(cls, docs: Iterable[ScoredDoc], tag: str = "irglow") -> "Run":
        ranking: dict[str, list[tuple[str, float]]] = {}
        for d in docs:
            ranking.setdefault(d.query_id, []).append((d.doc_id, float(d.score)))
        for qid in ranking:
            ranking[qid].sort(key=lambda x: (-x[1], x[0]))
        return cls(ranking, tag)

    def scored_docs(self) -> Iterator[ScoredDoc]:
        for qid, docs in self.ranking.items():
            for doc_id, score in docs:
                yield ScoredDoc(qid, doc_id, score)

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {qid: dict(docs) for qid, docs in self.ranking.items()}

    def __len__(self) -> int:
        return len(self.ranking)

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        with atomic_file(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
            for qid, docs in self.ranking.items():
                for rank, (doc_id, score) in enumerate(docs, 1):
                    f.write(f"{qid} Q0 {doc_id} {rank} {score:.6f} {self.tag}\n")
        return path

    @classmethod
    def read(cls, path: str | Path) -> "Run":
        ranking: dict[str, list[tuple[str, float]]] = {}
        tag = None
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                parts = line.split()
                if len(parts) != 6:
                    raise FormatError(path, n, f"expected 6 columns (qid Q0 docid rank score tag), got {len(parts)}", line)
                qid, _, doc_id, rank, score, tag = parts
                try:
                    int(rank)
                    value = float(score)
                except ValueError:
                    raise FormatError(path, n, "rank must be an integer and score a number", line) from None
                ranking.setdefault(qid, []).append((doc_id, value))
        for qid in ranking:  # trec_eval order: score descending, ties by doc id descending
            ranking[qid].sort(key=lambda x: x[1], reverse=True)
        return cls(ranking, tag or Path(path).stem)
