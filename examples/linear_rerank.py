"""A learned re-ranker in one file: a re-ranker kind, with nothing of irglow edited.

It re-ranks a run's top ``depth`` documents by a linear model over four features of each (query, document) pair —
the run's score (min-max over the query's list), its reciprocal rank, and the share of the query's words in the
document's first field (the title) and in the others — trained on the training queries' judgments by pairwise
logistic regression over the first stage's top ``train_depth`` (full-batch gradient descent: the same weights
every time).

Used as an object, it needs nothing else — this file on ``sys.path``, or the class pasted into a notebook cell::

    from linear_rerank import LinearReranker
    Experiment("beir/scifact", systems=[Lexical("bm25"), Lexical("bm25") >> LinearReranker(steps=50)])

It is then a kind like monoBERT: over any ranker (a fusion, another re-ranking:
``(Lexical("bm25") >> NRMF()) >> LinearReranker()``), inside a fusion (tuned on the training queries every trainer
holds out: the re-ranking stage holds them out of its training), and a PyTerrier pipeline
(``irglow.pyterrier.transformer``).  The stage trains it once per settings, training data and code (this file's:
edited, it trains again), caches its runs and records its model in the manifest.  For configuration files and the
CLI (``[rerank] models = ["linear"]``, its settings in ``[rerank.linear]``), register it in the package that holds
this file::

    [project.entry-points."irglow.rerankers"]
    linear = "linear_rerank:LinearReranker"
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from irglow.defaults import VAL_FRACTION
from irglow.models.rerank.kinds import RerankerKind
from irglow.settings import setting


@dataclass(frozen=True)
class LinearSettings:
    train_depth: int = setting(20, "the first stage's top documents the training pairs come from", low=1)
    steps: int = setting(200, "gradient steps over every training pair", low=1)
    lr: float = setting(0.5, "the step size", above=0)
    # the share of the training queries held out (irglow's trainers' default: the same queries, a fusion tunes on them)
    val_fraction: float = setting(VAL_FRACTION, "share of the training queries held out", low=0, high=1)


def _words(text: str) -> set[str]:
    return {w for w in "".join(c.lower() if c.isalnum() else " " for c in text).split() if len(w) > 1}


def features(query, ranked: list[tuple[str, float]], docs) -> np.ndarray:
    """One row per ranked document: BM25 min-max, 1 / (rank + 1), query words in the first field, in the rest."""
    words = _words(query.text) or {""}
    scores = np.array([s for _, s in ranked], dtype=float)
    span = (scores.max() - scores.min()) or 1.0
    rows = []
    for rank, (doc_id, score) in enumerate(ranked):
        doc = docs.get(doc_id) if hasattr(docs, "get") else docs[doc_id]
        fields = list(doc.fields.values()) if doc is not None else []
        first = _words(" ".join(fields[0])) if fields else set()
        rest = _words(" ".join(t for f in fields[1:] for t in f))
        rows.append([(score - scores.min()) / span, 1.0 / (rank + 1), len(words & first) / len(words),
                     len(words & rest) / len(words)])
    return np.array(rows, dtype=float).reshape(-1, 4)


def fit(pairs: list[tuple[np.ndarray, np.ndarray]], steps: int, lr: float) -> np.ndarray:
    """Pairwise logistic regression: minimise mean log(1 + exp(−w·(x⁺ − x⁻))) from w = (1, 0, 0, 0) (BM25's order)."""
    w = np.array([1.0, 0.0, 0.0, 0.0])
    if not pairs:
        return w
    diff = np.array([p - n for p, n in pairs])
    for _ in range(steps):
        margin = diff @ w
        w -= lr * -(diff * (1.0 / (1.0 + np.exp(margin)))[:, None]).mean(axis=0)
    return w


class LinearReranker(RerankerKind):
    name = "linear"
    settings_class = LinearSettings

    def train(self, settings: LinearSettings, queries, qrels, first_stage, docs, model_dir: Path) -> None:
        """The weights from every pair of the first stage's top ``train_depth`` that the judgments order."""
        labels: dict[str, dict[str, int]] = {}
        for r in qrels:
            labels.setdefault(r.query_id, {})[r.doc_id] = r.relevance
        pairs = []
        for q in queries:
            ranked = first_stage.ranking.get(q.query_id, [])[: settings.train_depth]
            x = features(q, ranked, docs)
            grade = [labels.get(q.query_id, {}).get(d, 0) for d, _ in ranked]
            pairs += [(x[i], x[j]) for i in range(len(ranked)) for j in range(len(ranked)) if grade[i] > grade[j]]
        w = fit(pairs, settings.steps, settings.lr)
        (Path(model_dir) / "weights.json").write_text(json.dumps({"weights": w.tolist(), "pairs": len(pairs)}))

    def rerank(self, model_dir: Path, run, queries, docs, depth: int, tag: str):
        from irglow.models.rerank.rerank import rerank_ranking
        from irglow.runs.trec import Run

        w = np.array(json.loads((Path(model_dir) / "weights.json").read_text())["weights"])
        ranking = {}
        for q in queries:
            ranked = run.ranking.get(q.query_id)
            if ranked is None:
                continue
            top = ranked[:depth]
            scores = features(q, top, docs) @ w if top else np.zeros(0)
            ranking[q.query_id] = rerank_ranking(ranked, {d: float(x) for (d, _), x in zip(top, scores)}, depth)
        return Run(ranking, tag)
