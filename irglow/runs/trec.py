"""The Run type: ranked lists per query, read and written as TREC run files (atomically).

One ordering everywhere, trec_eval's: score descending, ties broken by document id
*descending*.  A ``Run`` keeps its lists in that order (``__post_init__``), writes rank numbers
that agree with it, and every measure (ir_measures and irglow's NCG@k) sees the same order.
"""

from __future__ import annotations

import gzip
import io
import logging
import math
import operator
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

from irglow.data.records import ScoredDoc
from irglow.data.trec import FormatError, open_binary, split_fields, truncated_gzip, utf8_advice
from irglow.runs.packed import PackedRanking
from irglow.config import run_manifest_path
from irglow.utils.atomic import atomic_file, is_stdout
from irglow.utils import distributed
from irglow.utils.digest import records_digest
from irglow.utils.distributed import is_main

log = logging.getLogger(__name__)

_BAD_TOKEN = re.compile(r"\s")
# ASCII digits only (re.ASCII): Python's float() also takes "１" and "1_0", which trec_eval's atof reads as 0 and 1
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*([eE][+-]?[0-9]+)?|\.[0-9]+([eE][+-]?[0-9]+)?|inf(inity)?|nan)",
                     re.I | re.ASCII)
_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
_SEPARATORS = re.compile(r"[\x1c-\x1f]")  # whitespace to str.split, not to trec_eval


_SCORE_THEN_ID = operator.itemgetter(1, 0)


def trec_order(docs: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """trec_eval's order: score descending, then document id descending (a list already strictly
    descending in score, as most Lucene results are, is returned as it is).

    Args:
        docs: ``(document id, score)`` pairs.
    """
    if all(a[1] > b[1] for a, b in zip(docs, docs[1:])):
        return list(docs)
    return sorted(docs, key=_SCORE_THEN_ID, reverse=True)


def check_token(value: str, what: str) -> str:
    """A query id, document id or run tag must be one non-empty whitespace-free token in a TREC file.

    Args:
        value: The text.
        what: What it is, for the error (``--tag``).
    """
    if not isinstance(value, str) or not value or _BAD_TOKEN.search(value):
        raise ValueError(f"{what} {value!r} cannot be written to a TREC file: it must be non-empty and contain no "
                         f"whitespace")
    return value


_LONGEST_NAME = 200  # bytes: a file system's 255 less ".run", a partial file's prefix and suffix


def check_run_name(name: object, where: str = "run") -> str:
    """A run's name as its file's name (``<out>/<name>.run``, ``<name>-train/``): one plain file name — not empty,
    no whitespace or control character, no ``/`` or ``\\``, not starting with ``.`` (``..``, a hidden file), at most
    200 bytes — else ``ValueError`` naming it.  Every name a user gives a run (a re-ranking, a variant, a registered
    system or kind, a plugin's run) goes through here when the configuration is bound, before any work.

    Args:
        name: A run's name.
        where: Where it is given, for the error.
    """
    problem = None
    if not isinstance(name, str) or not name:
        problem = "it must be a non-empty string"
    elif any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in name):
        problem = "it holds whitespace or a control character"
    elif "/" in name or "\\" in name:
        problem = "it holds a path separator: the run would be written outside the output folder"
    elif name.startswith("."):
        problem = "it starts with '.' (a hidden file, or a step out of the output folder)"
    elif len(name.encode("utf-8", "surrogatepass")) > _LONGEST_NAME:
        problem = f"it is longer than {_LONGEST_NAME} bytes (a file name)"
    if problem:
        raise ValueError(f"{where} name {name!r} cannot name a run file: {problem}; give a plain name such as "
                         f"'monobert-tfidf'")
    return name


def _all_tokens(ranking: dict[str, list[tuple[str, float]]]) -> bool:
    """Whether every query and document id is a valid token (:func:`check_token`), in one regex pass over the
    joined ids (each distinct id once: a corpus, not a run) instead of one per id."""
    try:
        ids = set(ranking)
        for docs in ranking.values():
            ids.update(doc_id for doc_id, _ in docs)
        return all(ids) and not _BAD_TOKEN.search("".join(ids))
    except TypeError:  # an id that is not a string
        return False


def run_fields(line: str) -> list[str]:
    """:func:`~irglow.data.trec.split_fields`, fast on the usual line: ``str.split`` splits where C's ``isspace``
    does on ASCII text without the separators ``\x1c``–``\x1f`` (whitespace to Python, not to trec_eval).

    Args:
        line: One line of a run file.
    """
    return line.split() if line.isascii() and not _SEPARATORS.search(line) else split_fields(line)


def format_score(score: float) -> str:
    """The shortest text that reads back as exactly the same float (Python's ``repr``): fixed decimals
    would tie scores that differ, and reading the file back would reorder and re-score the run.

    Args:
        score: A score.
    """
    return repr(float(score))


@dataclass
class Run:
    """``ranking[qid]`` is a list of ``(doc_id, score)``, best first (trec_eval's order).

    Args:
        ranking: ``{query id: [(document id, score), …]}``, best first.
        tag: Its name (the TREC tag column).
    """

    ranking: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    tag: str = "irglow"

    def __post_init__(self):
        if isinstance(self.ranking, PackedRanking):  # Lucene's hits arrive in trec_eval's order already
            for qid in self.ranking.assigned():
                self.ranking[qid] = trec_order(self.ranking[qid])
            return
        for qid, docs in self.ranking.items():
            self.ranking[qid] = trec_order(docs)

    def scored_docs(self) -> Iterator[ScoredDoc]:
        """Every (query, document, score) as ir_measures' ``ScoredDoc``, query by query in rank order."""
        for qid, docs in self.ranking.items():
            for doc_id, score in docs:
                yield ScoredDoc(qid, doc_id, score)

    def digest(self) -> str:
        """What a cache key holds of a run's content: every (query, document, score), queries in id order."""
        return records_digest((q, d, x) for q, ranked in sorted(self.ranking.items()) for d, x in ranked)

    def as_dict(self) -> dict[str, dict[str, float]]:
        """``{query id: {document id: score}}`` (pytrec_eval's and ir_measures' run form)."""
        return {qid: dict(docs) for qid, docs in self.ranking.items()}

    def __len__(self) -> int:
        return len(self.ranking)

    def write(self, path: str | Path) -> Path:
        """The run as a TREC file, atomically.  Under ``torchrun`` only rank 0 writes (every rank holds the same
        run; the others find the file once rank 0 is past the next barrier).

        Args:
            path: The file to write (``-``: standard output).
        """
        path = Path(path)
        if not is_main():
            return path
        tag = check_token(self.tag, "run tag")
        if not _all_tokens(self.ranking):  # checked before anything is written; the slow pass names the culprit
            for qid, docs in self.ranking.items():
                check_token(qid, "query id")
                for doc_id, _ in docs:
                    check_token(doc_id, f"document id (query {qid})")
        for qid, docs in self.ranking.items():
            for doc_id, score in docs:
                if score != score:
                    raise ValueError(f"query {qid}, document {doc_id}: score is NaN")
        with atomic_file(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
            for qid, docs in self.ranking.items():
                f.write("".join([f"{qid} Q0 {doc_id} {rank} {format_score(score)} {tag}\n"
                                 for rank, (doc_id, score) in enumerate(docs, 1)]))
        # a single command's record of an earlier file of this name no longer describes it (its writer, if a
        # command, writes its own next)
        if not is_stdout(path):
            run_manifest_path(path).unlink(missing_ok=True)
        return path

    @classmethod
    def read(cls, path: str | Path, duplicates: str = "error") -> "Run":
        """Read a TREC run strictly: a malformed line, a NaN score or a repeated (query, document)
        stops with ``file:line``.  ``duplicates="keep-max"`` keeps the highest score instead and
        says how many lines were dropped.

        Args:
            path: A TREC run file (``-`` or a pipe: read once), gzip-compressed or not.
            duplicates: ``"error"`` (the default) or ``"keep-max"``.
        """
        if duplicates not in ("error", "keep-max"):
            raise ValueError("duplicates must be 'error' or 'keep-max'")
        ranking: dict[str, dict[str, tuple[float, int]]] = {}
        tag = None
        dropped = 0
        # -sig: a BOM is dropped; newline="\n": lines end at LF only, a bare CR is whitespace (as trec_eval reads)
        with open_binary(path) as raw, io.TextIOWrapper(raw, encoding="utf-8-sig", newline="\n") as f:
            n = 0
            try:
                for n, line in enumerate(f, 1):
                    parts = run_fields(line)
                    if not parts or parts[0].startswith("#"):  # blank, or a comment (trec_eval skips both)
                        continue
                    if len(parts) < 6:  # what follows the tag trec_eval ignores (get_trec_results.c), and so do we
                        raise FormatError(path, n, f"expected 6 columns (qid Q0 docid rank score tag), got {len(parts)}",
                                          line)
                    qid, _, doc_id, rank, score, line_tag = parts[:6]
                    tag = tag or line_tag  # the first line's tag names the run (as the columnar reader reads it)
                    if not (_INTEGER.fullmatch(rank) and _NUMBER.fullmatch(score)):
                        raise FormatError(path, n, "rank must be an integer and score a number (ASCII digits, '.', "
                                                   "an exponent, or inf)", line)
                    value = float(score)
                    if math.isnan(value):
                        raise FormatError(path, n, "score is NaN", line)
                    docs = ranking.setdefault(qid, {})
                    if doc_id in docs:
                        if duplicates == "error":
                            raise FormatError(path, n, f"duplicate document {doc_id} for query {qid} (first on line "
                                                       f"{docs[doc_id][1]}); pass --duplicates keep-max (Python: "
                                                       f"duplicates='keep-max') to keep the highest score", line)
                        dropped += 1
                        if value <= docs[doc_id][0]:
                            continue
                    docs[doc_id] = (value, n)
            except UnicodeDecodeError as e:
                raise FormatError(path, n + 1, f"not UTF-8 ({e.reason} at byte {e.start}); {utf8_advice(path)}",
                                  "") from None
            except (EOFError, zlib.error, gzip.BadGzipFile) as e:
                raise FormatError(path, n + 1, truncated_gzip(e), "") from None
        if dropped:
            log.warning("%s: %d duplicate (query, document) lines dropped, highest score kept", path, dropped)
        if not ranking:
            log.warning("%s is an empty run: it ranks no document for any query", path)
        return cls({q: [(d, v) for d, (v, _) in docs.items()] for q, docs in ranking.items()}, tag or Path(path).stem)


def gather_runs(runs: dict[str, Run], queries: Sequence) -> dict[str, Run]:
    """Under ``torchrun``: each rank's runs of its :func:`~irglow.utils.distributed.split` of ``queries`` →
    every rank's whole runs, in query order (what one process produces); one process: ``runs`` as they are."""
    if distributed.current().size == 1:
        return runs
    parts = distributed.all_gather({tag: (run.tag, dict(run.ranking.items())) for tag, run in runs.items()})
    merged = {}
    for tag in runs:
        rankings: dict[str, list[tuple[str, float]]] = {}
        for part in parts:
            rankings.update(part[tag][1])
        merged[tag] = Run({q.query_id: rankings[q.query_id] for q in queries if q.query_id in rankings},
                          parts[0][tag][0])
    return merged
