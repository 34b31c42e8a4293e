"""A learned re-ranker in one file: a plugin stage irglow finds by its entry point, with nothing of irglow edited.

It re-ranks BM25's top ``depth`` documents by a linear model over four features of each (query, document) pair —
BM25's score (min-max over the query's list), its reciprocal rank, and the share of the query's words in the
document's first field (the title) and in the others — trained on the training queries' judgments by pairwise
logistic regression (full-batch gradient descent, seeded: the same weights every time).  Register it in the
package that holds this file::

    [project.entry-points."irglow.stages"]
    linear = "linear_rerank:LinearRerankStage"

then ``[linear] enabled = true`` in a configuration, or ``Experiment(…, systems=["bm25", "linear",
"bm25+linear"])``: binding, checking, the cache key, the manifest, training once per settings and training data,
and ``Experiment`` come from the stage interface (:class:`irglow.stage.Stage`).  It trains on every judged
training query, so it holds none out: a fusion with it is reciprocal-rank (the fusion says why).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from irglow.settings import check_fields, check_settings, setting
from irglow.stage import Stage


@dataclass(frozen=True)
class LinearSettings:
    enabled: bool = setting(False, "re-rank BM25's top documents with the linear model")
    depth: int = setting(20, "BM25's top documents re-ranked per query", low=1)
    steps: int = setting(200, "gradient steps over every training pair", low=1)
    lr: float = setting(0.5, "the step size", above=0)

    @classmethod
    def from_config(cls, config) -> "LinearSettings":
        table = dict(config.get("linear", {}))
        check_settings(table, cls.__dataclass_fields__, "[linear]")  # a misspelt key is named before any work
        return check_fields(cls(**table), "linear")


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


class LinearRerankStage(Stage):
    name = "linear"
    settings_class = LinearSettings
    trains = True

    def tags(self, settings, produced=()) -> list[str]:
        return ["linear"]

    def check_inputs(self, settings, produced) -> None:
        if "bm25" not in produced:
            raise ValueError("[linear] re-ranks bm25: add it to lexical.systems")

    def train(self, settings, source, train_root: Path) -> dict[str, Path]:
        """The weights, trained once per settings and training data (a keyed folder: a second run finds them)."""
        from irglow.data.docstore import docs_store
        from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
        from irglow.models.source import keyed_train_dir
        from irglow.utils.atomic import atomic_write_text

        folder = keyed_train_dir(Path(train_root) / "linear-train", {"settings": asdict(settings),
                                                                     "source": source.digest})
        if not (folder / "weights.json").is_file():
            labels: dict[str, dict[str, int]] = {}
            for r in source.qrels():
                labels.setdefault(r.query_id, {})[r.doc_id] = r.relevance
            queries = [q for q in source.queries() if q.query_id in labels]
            bm25 = LexicalSearcher(source.index, LexicalConfig(system="bm25", depth=settings.depth)).search(queries)
            docs, pairs = docs_store(source.collection), []
            for q in queries:
                ranked = bm25.ranking.get(q.query_id, [])
                x = features(q, ranked, docs)
                grade = [labels[q.query_id].get(d, 0) for d, _ in ranked]
                pairs += [(x[i], x[j]) for i in range(len(ranked)) for j in range(len(ranked)) if grade[i] > grade[j]]
            w = fit(pairs, settings.steps, settings.lr)
            atomic_write_text(folder / "weights.json", json.dumps({"weights": w.tolist(), "pairs": len(pairs)}))
        return {"linear": folder}

    def run(self, ctx) -> dict:
        from irglow.data.docstore import docs_store
        from irglow.runs.trec import Run

        s = ctx.settings
        w = np.array(json.loads((self.train(s, ctx.source, ctx.train_root)["linear"] / "weights.json").read_text())
                     ["weights"])
        docs, ranking = docs_store(ctx.collection), {}
        for q in ctx.test_queries:
            ranked = ctx.runs["bm25"].ranking.get(q.query_id, [])
            top, tail = ranked[: s.depth], ranked[s.depth:]
            scores = features(q, top, docs) @ w if top else np.zeros(0)
            order = sorted(range(len(top)), key=lambda i: (-scores[i], i))
            floor = float(scores.min()) if top else 0.0
            ranking[q.query_id] = [(top[i][0], float(scores[i])) for i in order] + \
                [(d, floor - 1.0 - k) for k, (d, _) in enumerate(tail)]  # the rest below, in BM25's order
        run = Run(ranking, "linear")
        run.write(ctx.out / "linear.run")
        return {"linear": run}
