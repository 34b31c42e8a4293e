"""PyTerrier's frames and irglow's runs, each way (no PyTerrier needed here: pandas frames with its columns — a query
frame has ``qid`` and ``query``, a result frame adds ``docno``, ``score`` and ``rank``, 0 first)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import pandas as pd

from irglow.data.records import Document, Query
from irglow.index.lucene_index import LuceneIndex
from irglow.runs.trec import Run


def frame_to_run(frame: pd.DataFrame, tag: str = "pyterrier") -> Run:
    """A result frame as an irglow run (ties in trec_eval's order, as every irglow run).

    Args:
        frame: A result frame with ``qid``, ``docno`` and ``score`` columns.
        tag: The run's name (its TREC tag).
    """
    ranking: dict[str, list[tuple[str, float]]] = {}
    for qid, docno, score in zip(frame["qid"].astype(str), frame["docno"].astype(str), frame["score"].astype(float)):
        ranking.setdefault(qid, []).append((docno, score))
    return Run(ranking, tag)


def run_to_frame(run: Run, topics: pd.DataFrame) -> pd.DataFrame:
    """An irglow run as a result frame over ``topics`` (its other columns carried along, rank 0 first).

    Args:
        run: The run (:class:`~irglow.runs.trec.Run`).
        topics: The query frame (``qid``, ``query`` …) whose queries, in their order, the frame holds.
    """
    rows = []
    for qid in dict.fromkeys(topics["qid"].astype(str)):
        for rank, (docno, score) in enumerate(run.ranking.get(qid, [])):
            rows.append((qid, docno, float(score), rank))
    results = pd.DataFrame(rows, columns=["qid", "docno", "score", "rank"])
    keep = topics.drop(columns=[c for c in ("docno", "score", "rank", "docid") if c in topics.columns])
    keep = keep.assign(qid=keep["qid"].astype(str)).drop_duplicates("qid")
    return keep.merge(results, on="qid", how="inner")[[*keep.columns, "docno", "score", "rank"]]


def queries_of(frame: pd.DataFrame) -> list[Query]:
    if "qid" not in frame.columns or "query" not in frame.columns:
        raise ValueError(f"a PyTerrier query frame needs the columns qid and query; this one has {list(frame.columns)}")
    # a result frame repeats a query on each of its documents; one qid with two texts is two queries under one id,
    # refused as irglow's query readers refuse it (keeping the first would score the other query silently)
    texts = frame[["qid", "query"]].astype(str).drop_duplicates()
    repeated = texts[texts["qid"].duplicated(keep=False)]
    if len(repeated):
        qid = repeated["qid"].iloc[0]
        shown = " | ".join(repr(t[:60]) for t in repeated[repeated["qid"] == qid]["query"])
        raise ValueError(f"qid {qid} has {int((repeated['qid'] == qid).sum())} different query texts ({shown}); "
                         f"give each query its own qid")
    return [Query(q, t) for q, t in zip(texts["qid"], texts["query"])]


def candidates_of(frame: pd.DataFrame) -> dict[str, list[str]]:
    """Each query's documents in the frame, in its rank order."""
    order = frame.sort_values(["qid", "rank"]) if "rank" in frame.columns else frame
    out: dict[str, list[str]] = {}
    for qid, docno in zip(order["qid"].astype(str), order["docno"].astype(str)):
        out.setdefault(qid, []).append(docno)
    return out


def open_index(index: LuceneIndex | str | Path) -> LuceneIndex:
    return index if isinstance(index, LuceneIndex) else LuceneIndex.open(index)


class LazyDocuments:
    """Documents by id from a collection (its document store, :mod:`irglow.data.docstore`: read a result frame's
    documents at a time, never the corpus) or a mapping."""

    def __init__(self, docs):
        self._source, self._docs = docs, docs if isinstance(docs, Mapping) else None

    def get(self) -> Mapping[str, Document]:
        if self._docs is None:
            from irglow.data.docstore import docs_store

            self._docs = docs_store(self._source)
        return self._docs
