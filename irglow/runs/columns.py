"""TREC runs read into columns (Arrow's multi-threaded CSV reader, numpy), for evaluation at MS MARCO size.

``Run.read`` builds Python lists of (document, score) per query: right for runs that are searched,
fused and re-ranked, too slow for 7,000 queries × 1,000 documents × 10 runs just to be scored.  A
:class:`RankedRun` holds each query's documents in trec_eval's order (score descending, ties by
document id descending) as the rank-valued dicts that ir_measures scores, built with vectorised
sorting.  The fast path only accepts what the strict reader accepts: any line it cannot take as
six single-space-separated columns, a NaN score, a repeated (query, document) or an empty file sends
the file through ``Run.read``, whose errors name the file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from irglow.data.trec import is_gzip
from irglow.runs.trec import Run


@dataclass
class RankedRun:
    """``ranked[qid]`` = {doc_id: rank value}, higher is better, in trec_eval's order (what
    :func:`irglow.eval.measures.per_query` feeds every ir_measures provider)."""

    ranked: dict[str, dict[str, int]]
    tag: str

    @classmethod
    def from_run(cls, run: Run) -> "RankedRun":
        return cls({qid: {d: float(len(docs) - i) for i, (d, _) in enumerate(docs)}
                    for qid, docs in run.ranking.items()}, run.tag)

    def __len__(self) -> int:
        return len(self.ranked)

    @cached_property
    def ranking(self) -> dict[str, list[tuple[str, float]]]:
        """Documents per query, best first, with their rank values as scores (for what needs lists)."""
        return {q: sorted(((d, float(v)) for d, v in docs.items()), key=lambda x: -x[1])
                for q, docs in self.ranked.items()}


def _fast(path: Path) -> RankedRun | None:
    import pyarrow as pa
    import pyarrow.csv as pc

    names = ["q", "z", "d", "r", "s", "t"]
    try:
        table = pc.read_csv(path, read_options=pc.ReadOptions(column_names=names),
                            parse_options=pc.ParseOptions(delimiter=" "),
                            convert_options=pc.ConvertOptions(
                                column_types={"q": pa.string(), "z": pa.string(), "d": pa.string(), "r": pa.int64(),
                                              "s": pa.float64(), "t": pa.string()}, include_columns=["q", "d", "r", "s", "t"]))
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError):
        return None  # not six single-space columns everywhere, a rank that is not an integer …
    if table.num_rows == 0 or table.column("q").null_count or table.column("d").null_count \
            or table.column("s").null_count or table.column("t").null_count:
        return None
    scores = table.column("s").to_numpy()
    if np.isnan(scores).any():
        return None
    q = table.column("q").combine_chunks().dictionary_encode()
    d = table.column("d").combine_chunks().dictionary_encode()
    if any(not v for v in q.dictionary.to_pylist()) or any(not v for v in d.dictionary.to_pylist()):
        return None  # an empty token: the strict reader says where
    qi, di = q.indices.to_numpy().astype(np.int64), d.indices.to_numpy().astype(np.int64)
    doc_names = np.array(d.dictionary.to_pylist(), dtype=object)
    doc_order = np.empty(len(doc_names), np.int64)
    doc_order[np.argsort(doc_names, kind="stable")] = np.arange(len(doc_names))
    pairs = np.sort(qi * len(doc_names) + di)  # one number per (query, document)
    if (pairs[1:] == pairs[:-1]).any():
        return None  # a repeated (query, document): the strict reader names it (or keeps the highest score)
    dr = doc_order[di]
    # most run files are already in trec_eval's order (queries contiguous, score desc, id desc): check, else sort
    same_q = qi[1:] == qi[:-1]
    in_order = (~same_q | (scores[1:] < scores[:-1]) | ((scores[1:] == scores[:-1]) & (dr[1:] < dr[:-1]))).all()
    contiguous = len(np.unique(qi[np.concatenate([[True], ~same_q])])) == len(q.dictionary)
    if not (in_order and contiguous):
        order = np.lexsort((-dr, -scores, qi))
        qi, di = qi[order], di[order]
    starts = np.concatenate([[0], np.flatnonzero(qi[1:] != qi[:-1]) + 1, [len(qi)]]).tolist()
    query_names = q.dictionary.to_pylist()
    docs = doc_names[di].tolist()
    qlist = qi.tolist()
    ranked = {query_names[qlist[a]]: dict(zip(docs[a:b], range(b - a, 0, -1))) for a, b in zip(starts, starts[1:])}
    return RankedRun(ranked, str(table.column("t")[0]))


def read_ranked(path: str | Path, duplicates: str = "error") -> RankedRun:
    """A run file as a :class:`RankedRun`: the columnar fast path, or ``Run.read``'s strict one (gzip,
    other whitespace, duplicates with ``keep-max``, and every error message naming file and line)."""
    path = Path(path)
    fast = None if is_gzip(path) else _fast(path)  # gzip goes through the strict reader, which decompresses
    if fast is not None:
        if not fast.tag:
            fast.tag = path.stem
        return fast
    return RankedRun.from_run(Run.read(path, duplicates=duplicates))
