"""irglow's rankers as PyTerrier transformers, so they compose in the notebook standard of the field::

    import pyterrier as pt
    from irglow.pyterrier import Lexical, TWBert, Glow, CrossEncoder, Fusion

    bm25 = Lexical(index, "bm25")
    pt.Experiment([bm25, bm25 >> TWBert("runs/demo/twbert.model", index),
                   bm25 % 100 >> CrossEncoder("runs/demo/monobert.model", collection),
                   Fusion(bm25, bm25 >> Glow("runs/demo/glow.model", index, collection), method="rrf")],
                  topics, qrels, ["nDCG@10", "RR@10"])

``pip install irglow[pyterrier]`` (PyPI's ``pyterrier`` core).  Nothing here starts Terrier: irglow's own Lucene
index (through Pyserini) does the retrieval, so no Terrier jar is fetched and everything runs offline — PyTerrier
is used for its data frames, its operators (``>>``, ``%``, ``+``) and ``pt.Experiment``.

Frames follow PyTerrier's conventions: a query frame has ``qid`` and ``query``; a result frame adds ``docno``,
``score`` and ``rank`` (0 first).  Each transformer computes exactly what irglow's own command computes
(``irglow search``, TW-BERT's weighted Lucene queries, ``irglow rerank``, the fusion of ``irglow fuse``), so a
result frame written as a run equals the run file irglow writes (a test checks both that and the metrics).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

try:
    import pyterrier as pt
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError("irglow.pyterrier needs PyTerrier: pip install 'irglow[pyterrier]' (PyPI's pyterrier; no "
                      "Terrier jar or Java start is needed for irglow's transformers)") from exc

from irglow.data.records import Document, Query
from irglow.index.lucene_index import LuceneIndex
from irglow.runs.trec import Run
from irglow.defaults import DEPTH

__all__ = ["Lexical", "QL", "TWBert", "Dense", "Glow", "CrossEncoder", "KindReranker", "Fusion", "transformer",
           "run_to_frame", "frame_to_run"]


# -- frames ↔ runs -------------------------------------------------------------------------------------------
def frame_to_run(frame: pd.DataFrame, tag: str = "pyterrier") -> Run:
    """A result frame as an irglow run (ties in trec_eval's order, as every irglow run)."""
    ranking: dict[str, list[tuple[str, float]]] = {}
    for qid, docno, score in zip(frame["qid"].astype(str), frame["docno"].astype(str), frame["score"].astype(float)):
        ranking.setdefault(qid, []).append((docno, score))
    return Run(ranking, tag)


def run_to_frame(run: Run, topics: pd.DataFrame) -> pd.DataFrame:
    """An irglow run as a result frame over ``topics`` (its other columns carried along, rank 0 first)."""
    rows = []
    for qid in dict.fromkeys(topics["qid"].astype(str)):
        for rank, (docno, score) in enumerate(run.ranking.get(qid, [])):
            rows.append((qid, docno, float(score), rank))
    results = pd.DataFrame(rows, columns=["qid", "docno", "score", "rank"])
    keep = topics.drop(columns=[c for c in ("docno", "score", "rank", "docid") if c in topics.columns])
    keep = keep.assign(qid=keep["qid"].astype(str)).drop_duplicates("qid")
    return keep.merge(results, on="qid", how="inner")[[*keep.columns, "docno", "score", "rank"]]


def _queries(frame: pd.DataFrame) -> list[Query]:
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


def _candidates(frame: pd.DataFrame) -> dict[str, list[str]]:
    """Each query's documents in the frame, in its rank order."""
    order = frame.sort_values(["qid", "rank"]) if "rank" in frame.columns else frame
    out: dict[str, list[str]] = {}
    for qid, docno in zip(order["qid"].astype(str), order["docno"].astype(str)):
        out.setdefault(qid, []).append(docno)
    return out


def _index(index: LuceneIndex | str | Path) -> LuceneIndex:
    return index if isinstance(index, LuceneIndex) else LuceneIndex.open(index)


class _Documents:
    """Documents by id from a collection (its document store, :mod:`irglow.data.docstore`: read a result frame's
    documents at a time, never the corpus) or a mapping."""

    def __init__(self, docs):
        self._source, self._docs = docs, docs if isinstance(docs, Mapping) else None

    def get(self) -> Mapping[str, Document]:
        if self._docs is None:
            from irglow.data.docstore import docs_store

            self._docs = docs_store(self._source)
        return self._docs


# -- transformers --------------------------------------------------------------------------------------------
class Lexical(pt.Transformer):
    """Lucene retrieval through irglow (``bm25``, ``bm25f``, ``tfidf``, ``bm25-rm3`` …, as ``irglow search``):
    a query frame in, a result frame of the top ``depth`` out."""

    def __init__(self, index: LuceneIndex | str | Path, system: str = "bm25", depth: int = DEPTH, config=None,
                 **overrides: Any):
        from irglow.lexical.searchers import LexicalConfig

        self.index = _index(index)
        self.config = config if config is not None else LexicalConfig(system=system, depth=depth, **overrides)
        self.config.check()
        self.system = self.config.system + ("-rm3" if self.config.rm3 else "")

    def transform(self, topics: pd.DataFrame) -> pd.DataFrame:
        from irglow.lexical.searchers import LexicalSearcher

        return run_to_frame(LexicalSearcher(self.index, self.config).search(_queries(topics), self.system), topics)

    def __repr__(self) -> str:
        return f"irglow.Lexical({self.system})"


class TWBert(pt.Transformer):
    """TW-BERT's learned query-term weights, run in Lucene.  On a query frame it retrieves (the ``twbert`` run);
    on a result frame (``bm25 >> TWBert(...)``) it re-scores those documents with the same weighted query — the
    score each would get in the ``twbert`` run, 0 where no weighted term matches."""

    def __init__(self, model, index: LuceneIndex | str | Path, depth: int = DEPTH, threads: int = 2):
        from irglow.models.twbert.model import TWBert as Model

        self.model = model if isinstance(model, Model) else Model.load(model)
        self.index, self.depth, self.threads = _index(index), depth, threads

    def transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        from irglow.models.twbert.search import twbert_rescore, twbert_search

        queries = _queries(frame)
        if "docno" in frame.columns:
            run = twbert_rescore(self.model, self.index, queries, _candidates(frame), threads=self.threads)
        else:
            run = twbert_search(self.model, self.index, queries, self.depth, threads=self.threads)
        return run_to_frame(run, frame)


class Glow(pt.Transformer):
    """A GLOW/BERT encoder (a saved ``GlowEncoder`` directory) re-scoring a result frame's documents by the cosine
    of query and document embeddings — what its faiss run computes for those documents."""

    def __init__(self, model, index: LuceneIndex | str | Path, docs, batch_size: int = 64, device=None):
        from irglow.index.stats import CollectionStats
        from irglow.models.glow.model import GlowEncoder, featurizer_for

        self.model = model if isinstance(model, GlowEncoder) else GlowEncoder.load(model)
        self.index = _index(index)
        self.featurizer = featurizer_for(self.model, self.index, CollectionStats.load(self.index))
        self.docs, self.batch_size, self.device = _Documents(docs), batch_size, device

    def transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        import numpy as np
        import torch

        from irglow.dense.encode import encode
        from irglow.models.checkpoints import pick_device
        from irglow.models.glow.train import embed

        if "docno" not in frame.columns:
            raise ValueError("irglow.pyterrier.Glow re-ranks a result frame: put a first stage before it "
                             "(Lexical(index) >> Glow(...))")
        device = self.device or pick_device()
        self.model.to(device).eval()
        queries, candidates, docs = _queries(frame), _candidates(frame), self.docs.get()
        wanted = sorted({d for ds in candidates.values() for d in ds if d in docs})
        with torch.no_grad():
            qv = encode(queries, lambda b: embed(self.model, self.featurizer, b, device, "query"), self.batch_size)
            dv = encode([docs[d] for d in wanted], lambda b: embed(self.model, self.featurizer, b, device, "doc"),
                        self.batch_size)
        row = {d: i for i, d in enumerate(wanted)}
        ranking = {}
        for q, vector in zip(queries, qv):
            held = [d for d in candidates.get(q.query_id, []) if d in row]
            scores = dv[[row[d] for d in held]] @ vector if held else np.zeros(0)
            ranking[q.query_id] = [(d, float(s)) for d, s in zip(held, scores)]
        return run_to_frame(Run(ranking, "glow"), frame)


class CrossEncoder(pt.Transformer):
    """A trained monoBERT or NRM-F re-ranker (its directory; the kind is read from it) over a result frame's
    documents, as ``irglow rerank`` scores them; documents the collection lacks keep their order below."""

    def __init__(self, model, docs, batch_size: int = 64, device=None):
        from irglow.models.rerank.rerank import load_reranker

        self.model = load_reranker(model) if isinstance(model, (str, Path)) else model
        self.docs, self.batch_size, self.device = _Documents(docs), batch_size, device

    def transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        from irglow.models.rerank.rerank import rerank

        if "docno" not in frame.columns:
            raise ValueError("irglow.pyterrier.CrossEncoder re-ranks a result frame: put a first stage before it")
        first = frame_to_run(frame)
        depth = max((len(r) for r in first.ranking.values()), default=1)
        run = rerank(self.model, first, _queries(frame), self.docs.get(), depth=depth, batch_size=self.batch_size,
                     device=self.device)
        return run_to_frame(run, frame)


class KindReranker(pt.Transformer):
    """A trained re-ranker of a registered kind (:mod:`irglow.models.rerank.kinds`; its folder says which) over a
    result frame's documents, as the re-ranking stage re-ranks a run."""

    def __init__(self, model_dir: str | Path, docs):
        from irglow.models.rerank.kinds import kind_of, plugin_kind

        self.kind = plugin_kind(kind_of(model_dir))
        if self.kind is None:
            raise ValueError(f"{model_dir} holds a {kind_of(model_dir)!r} model: irglow.pyterrier.CrossEncoder "
                             f"re-ranks with it")
        self.model_dir, self.docs = Path(model_dir), _Documents(docs)

    def transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        if "docno" not in frame.columns:
            raise ValueError("irglow.pyterrier.KindReranker re-ranks a result frame: put a first stage before it")
        first = frame_to_run(frame)
        depth = max((len(r) for r in first.ranking.values()), default=1)
        return run_to_frame(self.kind.rerank(self.model_dir, first, _queries(frame), self.docs.get(), depth,
                                             self.kind.name), frame)


class Fusion(pt.Transformer):
    """irglow's fusion of several pipelines' results (``irglow fuse``): reciprocal-rank fusion (``rrf``) or a
    weighted sum of normalised scores (``wsum`` with ``weights``, equal if none)."""

    def __init__(self, *parts: pt.Transformer, method: str = "rrf", norm: str = "min-max",
                 weights: Sequence[float] | None = None, depth: int = DEPTH):
        from irglow.runs.fusion import check_fusion

        if len(parts) < 2:
            raise ValueError("Fusion needs at least two transformers")
        if weights is not None and len(weights) != len(parts):
            raise ValueError(f"{len(weights)} weights for {len(parts)} transformers")
        check_fusion(method, norm, 60.0, depth)
        self.parts, self.method, self.norm, self.weights, self.depth = parts, method, norm, weights, depth

    def transform(self, topics: pd.DataFrame) -> pd.DataFrame:
        from irglow.runs.fusion import fuse

        runs = [frame_to_run(part.transform(topics), f"part{i}") for i, part in enumerate(self.parts)]
        fused = fuse(runs, method=self.method, norm=self.norm, weights=self.weights, depth=self.depth, tag="fusion")
        return run_to_frame(fused, topics)


class QL(pt.Transformer):
    """Query likelihood with Dirichlet smoothing (Lucene's ``LMDirichletSimilarity``), as irglow's ``ql`` run."""

    def __init__(self, index: LuceneIndex | str | Path, mu: float | None = None, depth: int = DEPTH,
                 threads: int = 2):
        from irglow import settings as declared

        self.mu = declared.value({}, "ql", "mu") if mu is None else mu  # [ql] mu's default: Anserini's 1000
        self.index, self.depth, self.threads = _index(index), depth, threads

    def transform(self, topics: pd.DataFrame) -> pd.DataFrame:
        from irglow.lexical.ql import ql_search

        return run_to_frame(ql_search(self.index, _queries(topics), self.mu, self.depth, self.threads), topics)


class Dense(pt.Transformer):
    """A trained GLOW/BERT encoder's faiss retrieval over a corpus encoding an irglow run kept
    (``<run folder>/<variant>.embeddings``): a query frame in, the run the pipeline wrote out."""

    def __init__(self, model, index: LuceneIndex | str | Path, embeddings: str | Path, depth: int = DEPTH,
                 batch_size: int = 64, device=None):
        from irglow.index.stats import CollectionStats
        from irglow.models.glow.model import GlowEncoder, featurizer_for

        self.model = model if isinstance(model, GlowEncoder) else GlowEncoder.load(model)
        self.index = _index(index)
        self.featurizer = featurizer_for(self.model, self.index, CollectionStats.load(self.index))
        self.embeddings, self.depth, self.batch_size, self.device = Path(embeddings), depth, batch_size, device

    def transform(self, topics: pd.DataFrame) -> pd.DataFrame:
        import torch

        from irglow.dense.encode import dense_search, encode, faiss_index, load_embeddings
        from irglow.models.checkpoints import pick_device
        from irglow.models.glow.runner import glow_encoders

        device = self.device or pick_device()
        self.model.to(device).eval()
        _, query_encoder = glow_encoders(self.model, self.featurizer, device, "fp32")
        queries = _queries(topics)
        with torch.no_grad():
            qv = encode(queries, query_encoder, self.batch_size)
        vectors, ids = load_embeddings(self.embeddings)
        return run_to_frame(dense_search(faiss_index(vectors, "flat"), ids, queries, qv, self.depth, "dense"), topics)


# -- the rankers an irglow experiment ran, as PyTerrier pipelines -------------------------------------------
def transformer(ranker, run_dir: str | Path) -> pt.Transformer:
    """``ranker`` — the object an :class:`~irglow.experiment.Experiment` ran (:mod:`irglow.rankers`) or the name of
    its run — as a PyTerrier pipeline over what that run built, trained and tuned (``run_dir``: its output folder;
    the index, BM25's settings and field weights, QL's μ, the trained models, the re-ranking depth and each
    fusion's method and weights, read from its manifest and stage notes).  Its frames rank as the run files the
    pipeline wrote (a re-ranking: its re-ranked block)."""
    from irglow.plan import ranker as as_ranker

    built = _Built(Path(run_dir))
    return built.build(as_ranker(ranker, built.config))


class _Built:
    """One pipeline run's folder, read once: what :func:`transformer` builds from."""

    def __init__(self, out: Path):
        import json

        from irglow.lexical.stage import LexicalSettings

        manifest = json.loads((out / "manifest.json").read_text())
        self.out, self.config, self.settings = out, manifest["config"], manifest["settings"]
        self.index = LuceneIndex.open(manifest["index"])
        self.lexical = LexicalSettings(**self.settings["lexical"])
        self.field_weights = manifest.get("field_weights", {})
        self._docs = None
        self._results = None

    def result(self, unit: str):
        """What the unit ``unit`` of that run did (:class:`~irglow.stage.Result`), or ``None``."""
        if self._results is None:
            from irglow.outputs import read_results

            self._results = read_results(self.out)
        return self._results.get(unit)

    @property
    def docs(self):
        if self._docs is None:
            from irglow.data.collection import load_collection

            self._docs = _Documents(load_collection(self.config["collection"]["name"]))
        return self._docs.get()

    def build(self, r) -> pt.Transformer:
        from irglow import rankers

        depth = self.lexical.depth
        if isinstance(r, rankers.Lexical):
            return Lexical(self.index, config=self.lexical.config(r.tag, self.field_weights))
        if isinstance(r, rankers.StageRun) and r.stage == "ql":
            return QL(self.index, self.settings["ql"]["mu"], depth, self.lexical.threads)
        if isinstance(r, rankers.TWBert) and r.run == "twbert":
            return TWBert(self.result("twbert").models["twbert"], self.index, depth, self.lexical.threads)
        trained = self.result("glow").models if isinstance(r, rankers.Dense) and self.result("glow") else {}
        if r.tag in trained:
            return Dense(trained[r.tag], self.index, self.out / f"{r.tag}.embeddings", depth)
        if isinstance(r, rankers.Rerank):
            from irglow.models.rerank.kinds import kind_of, plugin_kind

            done = self.result(f"rerank:{r.tag}")
            model = KindReranker(done.model, self.docs) if plugin_kind(kind_of(done.model)) else \
                CrossEncoder(done.model, self.docs)
            return (self.build(r.first) % done.depth) >> model
        if isinstance(r, rankers.Fusion):
            from irglow.runs.wanted import hybrids

            info = self.result(f"fusion:{r.tag}")
            if info is None:
                raise ValueError(f"{r.tag}: the run in {self.out} made no such fusion (its weights are tuned there)")
            made = next((h for h in hybrids(self.config) if h.tag == r.tag), None)
            if made is not None and made != r.hybrid:  # the folder's weights belong to its own fusion, not this one
                raise ValueError(f"{r.tag}: the run in {self.out} fused it with {made.settings_text()} "
                                 f"({info.method}, weights {info.weights}), not {r.hybrid.settings_text()}: run "
                                 f"an experiment with this fusion")
            return Fusion(*(self.build(p) for p in r.rankers), method=info.method,
                          norm=info.norm or "min-max", weights=info.weights, depth=depth)
        raise ValueError(f"{r.tag}: irglow.pyterrier builds lexical runs, ql, twbert, trained dense encoders, "
                         f"re-rankings and fusions of them; take this one's run file ({self.out / (r.tag + '.run')})")
