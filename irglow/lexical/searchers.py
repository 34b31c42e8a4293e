"""Lexical retrieval over an irglow Lucene index, producing :class:`~irglow.runs.trec.Run` objects.

* ``bm25``    Lucene's BM25 on ``contents`` with Anserini's bag-of-words query (a term repeated in
              the query is boosted by its count) built here and searched by Lucene's
              ``IndexSearcher`` directly — the same scores as Pyserini's ``batch_search``
              (tested), without moving every hit through JNI as an object; with RM3, Pyserini's searcher
              and Anserini's RM3, its hits taken in bulk too.
* ``bm25-mf`` Pyserini's multi-field search: Σ_f w_f · BM25_f (one boosted clause per field).
* ``bm25f``   Lucene's ``CombinedFieldQuery`` (true BM25F: weighted tf and length merged before saturation).
* ``tfidf``   Lucene's ``ClassicSimilarity`` over ``contents``.

An empty or all-stopword query yields an empty ranking and a warning, never an exception.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Callable, Mapping, Sequence

import numpy as np

from irglow.utils.progress import tqdm

from irglow.data.records import Query
from irglow.index.jvm import bulk_search_available
from irglow.index.lucene_index import LuceneIndex, doc_ids  # noqa: F401 (doc_ids re-exported)
from irglow.lexical import queries as lq
from irglow.lexical.systems import lexical_system, rm3_systems
from irglow.runs.packed import PackedRanking
from irglow.runs.trec import Run

from irglow.defaults import BM25_B, BM25_K1, DEPTH, QLD_MU, THREADS
from irglow.settings import setting
from irglow.config import check_values

log = logging.getLogger(__name__)

MAX_PYSERINI_CLAUSES = 1024


def pool_config(bm25: "LexicalConfig | None", depth: int | None = None) -> "LexicalConfig":
    """The BM25 a trainer's candidate pool searches with: the experiment's (``bm25``: its bound ``[lexical]`` BM25,
    k1 and b), else the defaults (a trainer run alone, ``irglow glow train``), to ``depth`` documents (``None``:
    the experiment's depth)."""
    config = bm25 or LexicalConfig("bm25")
    return replace(config, system="bm25", rm3=False, depth=config.depth if depth is None else depth)


def pool_inputs(bm25: "LexicalConfig | None") -> dict:
    """What a trainer's BM25 pool adds to what its model depends on (a checkpoint's inputs, a training folder's
    key): its k1 and b, where they are not the defaults (so the models trained before keep their keys).

    Args:
        bm25: The experiment's BM25 (``None``: irglow's defaults).
    """
    if bm25 is None or (bm25.k1, bm25.b) == (BM25_K1, BM25_B):
        return {}
    return {"bm25": {"k1": bm25.k1, "b": bm25.b}}


@dataclass
class LexicalConfig:
    """Parameters of a lexical run (saved in every run's manifest)."""

    system: str = setting("bm25", "the lexical system (irglow.lexical.systems: irglow's and the registered ones)")
    k1: float = setting(BM25_K1, "BM25's k1", low=0)
    b: float = setting(BM25_B, "BM25's b", low=0, high=1)
    depth: int = setting(DEPTH, "documents retrieved per query", low=1)
    threads: int = setting(THREADS, "search threads", low=1)
    field_weights: dict[str, float] = setting(factory=dict, doc="bm25-mf / bm25f: {field = weight} (empty: 1.0 per "
                                              "field)")
    mu: float = setting(QLD_MU, "qld: the Dirichlet prior μ (Lucene's LMDirichletSimilarity)", above=0)
    rm3: bool = setting(False, "expand the query by RM3")
    rm3_fb_terms: int = setting(10, "RM3's expansion terms", low=1)
    rm3_fb_docs: int = setting(10, "RM3's feedback documents", low=1)
    rm3_original_weight: float = setting(0.5, "RM3's weight of the original query", low=0, high=1)
    batch_size: int = setting(2000, "queries per Lucene batch search", low=1)

    def check(self) -> "LexicalConfig":
        """Types and ranges before any search: Lucene would otherwise answer ``k1 = -1`` or ``b = 2`` with
        an ``IllegalArgumentException`` mid-run, and a NaN field weight with an empty run."""
        import math

        spec = lexical_system(self.system)  # an unknown name is named, with the systems there are
        check_values(self, "lexical")
        for key in ("k1", "b"):  # Lucene keeps them as 32-bit floats: a larger value becomes infinite there
            if getattr(self, key) > JAVA_FLOAT_MAX:
                raise ValueError(f"lexical.{key} = {getattr(self, key)!r} is too large: Lucene stores it as a 32-bit "
                                 f"float (at most {JAVA_FLOAT_MAX:.4g})")
        if self.depth > JAVA_INT_MAX:  # a Java int; Lucene caps it at the number of documents anyway
            raise ValueError(f"lexical.depth = {self.depth!r} is too large: at most {JAVA_INT_MAX:,} (a Java int)")
        if not isinstance(self.field_weights, dict):
            raise ValueError(f"lexical.field_weights = {self.field_weights!r} must be a table field = weight")
        for f, w in self.field_weights.items():
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w <= 0:
                raise ValueError(f"field weight {f} = {w!r} must be a finite number > 0")
            if w < spec.min_field_weight:
                raise ValueError(f"field weight {f} = {w!r}: {spec.name} ({spec.meaning}) needs weights >= "
                                 f"{spec.min_field_weight:g}; scale every weight up instead")
        return self


JAVA_FLOAT_MAX = 3.4028234663852886e38
JAVA_INT_MAX = 2 ** 31 - 1


def _warn_empty(qid: str, text: str) -> None:
    log.warning("query %s (%r) has no searchable term after analysis; its ranking is empty", qid, text[:80])


class LexicalSearcher:
    """Runs :class:`LexicalConfig` systems on one index.

    Args:
        index: The Lucene index irglow built.
        config: The system and its parameters (unset: BM25 with irglow's defaults), checked before any search.
    """

    def __init__(self, index: LuceneIndex, config: LexicalConfig | None = None):
        self.index = index
        self.config = (config or LexicalConfig()).check()

    # -- shared helpers -----------------------------------------------------------------------
    def field_weights(self) -> dict[str, float]:
        """The weight of each field this system searches (BM25F's and multi-field BM25's; one field: 1)."""
        weights = dict(self.config.field_weights) or {f: 1.0 for f in self.index.fields}
        unknown = set(weights) - set(self.index.fields) - {"contents"}
        if unknown:
            raise KeyError(f"fields {sorted(unknown)} are not in the index (fields: {list(self.index.fields)})")
        return weights

    def analyzed(self, queries: Sequence[Query]) -> list[tuple[Query, list[str]]]:
        """Each query with its index terms, through the index's own analyzer (what Lucene will match).

        Args:
            queries: The queries.
        """
        out = []
        for q in queries:
            terms = self.index.analyze(q.text) if q.text.strip() else []
            if not terms:
                _warn_empty(q.query_id, q.text)
            out.append((q, terms))
        return out

    @cached_property
    def pyserini(self):
        s = self.index.searcher()
        s.set_bm25(self.config.k1, self.config.b)
        if self.config.rm3:
            s.set_rm3(self.config.rm3_fb_terms, self.config.rm3_fb_docs, self.config.rm3_original_weight)
        return s

    # -- entry point ------------------------------------------------------------------------------
    def search(self, queries: Sequence[Query], tag: str | None = None) -> Run:
        """The run of ``queries`` at this searcher's depth, in Anserini's tie order, named ``tag`` (default: the
        system's name)."""
        tag = tag or self.config.system
        spec = lexical_system(self.config.system)
        if self.config.rm3 and not spec.rm3:
            raise ValueError(f"RM3 is offered for {', '.join(rm3_systems())} (Pyserini's implementation), not "
                             f"{spec.name}")
        if spec.similarity is None or self.config.rm3:  # Pyserini's searcher scores it (and expands it by RM3)
            return self._batch_pyserini(queries, tag)
        if spec.build is None:  # a bag of words on contents: analyzed, built and searched in bulk
            build: Callable[[list[str]], object] = lq.bag_of_words
        else:
            weights = self.field_weights()
            build = lambda terms: spec.build(terms, weights)  # noqa: E731
        return self._loop(queries, build, spec.similarity(self.config), tag)

    def _batch_pyserini(self, queries: Sequence[Query], tag: str) -> Run:
        fields = self.field_weights() if lexical_system(self.config.system).multi_field else {}
        ranking = PackedRanking(self.index.ids)
        analyzed = self.analyzed(queries)
        # Pyserini's batch fails as a whole on a query over Lucene's clause limit; such a query is
        # searched on its own instead (without expansion), and said so.
        huge = [(q, t) for q, t in analyzed if len(set(t)) * max(1, len(fields)) >= MAX_PYSERINI_CLAUSES]
        for q, terms in huge:
            log.warning("query %s has %d distinct terms (Lucene's clause limit is %d): searched without %s",
                        q.query_id, len(set(terms)), MAX_PYSERINI_CLAUSES, "RM3" if self.config.rm3 else "Pyserini")
        if huge:
            direct = LexicalSearcher(self.index, LexicalConfig(**{**self.config.__dict__, "rm3": False,
                                                                   "system": "bm25"}))
            for qid, docs in direct.search([q for q, _ in huge]).ranking.items():
                ranking[qid] = docs
        skip = {q.query_id for q, _ in huge}
        valid = [q for q, terms in analyzed if terms and q.query_id not in skip]
        bs = self.config.batch_size
        bulk = bulk_search_available()
        from jnius import JavaException  # importable now: bulk_search_available started the JVM
        with tqdm(total=len(valid), desc=f"{tag} search", unit="q", disable=len(valid) < 200) as bar:
            for start in range(0, len(valid), bs):
                chunk = valid[start:start + bs]
                if bulk:
                    try:
                        self._pyserini_bulk(chunk, fields, ranking)
                    except JavaException as err:  # a reranker the bulk path does not know: Pyserini's own path
                        log.warning("%s: hits in bulk failed (%s); searching through Pyserini", tag, err)
                        bulk = False
                if not bulk:
                    hits = self.pyserini.batch_search([q.text for q in chunk], [q.query_id for q in chunk],
                                                      k=self.config.depth, threads=self.config.threads, fields=fields)
                    for q in chunk:
                        ranking[q.query_id] = [(h.docid, float(h.score)) for h in hits.get(q.query_id, [])]
                bar.update(len(chunk))
        return Run(ranking.reordered([q.query_id for q in queries]), tag)

    def _pyserini_bulk(self, chunk: Sequence[Query], fields: dict[str, float], packed: PackedRanking) -> None:
        """Pyserini's search run by ``irglow.BulkSearch.pyseriniPacked``: the same Anserini searcher, query, RM3
        expansion and score rounding, with the final hits packed in trec_eval's order instead of k stored
        documents per query (the same hits and scores as ``batch_search`` / ``batch_search_fields``, tested)."""
        jfields = lq.J("java.util.HashMap")()
        for f, w in fields.items():
            jfields.put(f, lq.J("java.lang.Float")(float(w)))
        hits = lq.J("irglow.BulkSearch").pyseriniPacked(self.pyserini.object, [q.text for q in chunk], jfields,
                                                        int(self.config.depth), int(max(1, self.config.threads)),
                                                        self.index.tie_order)
        packed.add([q.query_id for q in chunk], bytes(hits.tostring()))

    def _loop(self, queries: Sequence[Query], build, similarity, tag: str) -> Run:
        searcher = index_searcher(self.index, similarity)
        if build is lq.bag_of_words and bulk_search_available():  # analyzed, built and searched in Java
            return Run(search_texts(self.index, searcher, queries, self.config.depth, self.config.threads, tag,
                                    anserini=True), tag)
        items = [(q.query_id, build(terms) if terms else None) for q, terms in self.analyzed(queries)]
        return Run(search_queries(self.index, searcher, items, self.config.depth, self.config.threads, tag,
                                  anserini=True), tag)


def index_searcher(index: LuceneIndex, similarity):
    """Lucene's own ``IndexSearcher`` on the index: exact float scores, one JNI call per query.

    Args:
        index: The Lucene index.
        similarity: A Lucene ``Similarity`` (BM25, ClassicSimilarity, LMDirichlet …).
    """
    searcher = lq.J("org.apache.lucene.search.IndexSearcher")(index.lucene_reader)
    searcher.setSimilarity(similarity)
    return searcher


def search_lucene_query(searcher, query, depth: int, ids: Sequence[str], anserini: bool = False
                        ) -> list[tuple[str, float]]:
    """One Lucene query → ``[(doc_id, score)]``, hit by hit (three JNI calls per hit): the path where the
    bulk helper is not available; ``Run`` puts ties in trec_eval's order.  ``anserini``: Anserini's top k and
    scores (:func:`anserini_scores`), as the bulk helper's ``anseriniTop``.

    Args:
        searcher: A Lucene ``IndexSearcher``.
        query: A Lucene query.
        depth: Documents returned.
        ids: The index's id table (Lucene document number → id).
        anserini: Scores rounded as Anserini rounds them (its runs' exact text).
    """
    if query is None:
        return []
    if not anserini:
        top = searcher.search(query, int(depth))
        return [(ids[sd.doc], float(sd.score)) for sd in top.scoreDocs]
    sort_field = lq.J("org.apache.lucene.search.SortField")
    by_id = lq.J("org.apache.lucene.search.Sort")(sort_field.FIELD_SCORE,
                                                 sort_field("id", lq.J("org.apache.lucene.search.SortField$Type").STRING_VAL))
    hits = list(searcher.search(query, int(depth), by_id, True).scoreDocs)
    scores = anserini_scores(np.array([sd.score for sd in hits], np.float32))
    return [(ids[sd.doc], float(s)) for sd, s in zip(hits, scores)]


def anserini_scores(scores: np.ndarray) -> np.ndarray:
    """Anserini's ScoreTiesAdjusterReranker on a ranking's float32 scores, in its single-precision arithmetic:
    each score rounded to 4 decimals, and the i-th of a run of scores within 1e-4 of the one before lowered by
    i * 1e-6, so that trec_eval keeps the order Lucene gave (ties by document id ascending).

    Args:
        scores: Lucene's float scores.
    """
    out = np.empty(len(scores), np.float32)
    dup = 0
    for i, s in enumerate(scores.tolist()):
        out[i] = np.float32(math.floor(float(np.float32(s)) * 10000.0 + 0.5) / 10000.0)  # Math.round, then d2f
        if i == 0 or np.float32(out[i - 1] - out[i]) > np.float32(1e-4):
            dup = 0
        else:
            dup += 1
            out[i] = np.float32(out[i] - np.float32(np.float32(1e-6) * np.float32(dup)))
    return out


BULK_BATCH = 2000  # queries per bulk call: bounds the hit arrays held at once


def search_queries(index: LuceneIndex, searcher, items: Sequence[tuple[str, object | None]], depth: int,
                   threads: int = THREADS, desc: str = "search", bulk: bool | None = None, anserini: bool = False
                   ) -> Mapping[str, list[tuple[str, float]]]:
    """Lucene queries (``None``: an empty ranking) → ``{qid: [(doc_id, score)]}`` in trec_eval's order.

    With irglow's bulk helper (``irglow.BulkSearch``, compiled where the JDK has ``javac``) a batch of
    queries is searched on ``threads`` Java threads, its hits put in trec_eval's order in Java and handed over
    as one packed byte array (:class:`irglow.runs.packed.PackedRanking`: a query's pairs are made when read);
    otherwise each hit crosses JNI on its own.  Both give the same hits, scores and order (tested).

    Args:
        index: The Lucene index.
        searcher: A Lucene ``IndexSearcher``.
        items: ``(query id, Lucene query or None)`` pairs.
        depth: Documents per query.
        threads: Search threads.
        desc: The progress bar's label.
        bulk: Whether to use irglow's bulk helper (unset: where it is compiled).
        anserini: Scores rounded as Anserini rounds them.
    """
    ids = index.ids
    use_bulk = bulk_search_available() if bulk is None else bulk
    with tqdm(total=len(items), desc=f"{desc} search", unit="q", disable=len(items) < 200) as bar:
        if not use_bulk:
            ranking: dict[str, list[tuple[str, float]]] = {}
            for qid, query in items:
                ranking[qid] = search_lucene_query(searcher, query, depth, ids, anserini)
                bar.update(1)
            return ranking
        helper, order = lq.J("irglow.BulkSearch"), index.tie_order
        packed = PackedRanking(index.ids)
        for start in range(0, len(items), BULK_BATCH):
            chunk = items[start:start + BULK_BATCH]
            packed.add([qid for qid, _ in chunk],
                       bytes(helper.searchPacked(searcher, [q for _, q in chunk], int(depth), int(max(1, threads)),
                                                 order, bool(anserini)).tostring()))
            bar.update(len(chunk))
    return packed


def search_texts(index: LuceneIndex, searcher, queries: Sequence[Query], depth: int, threads: int = THREADS,
                 desc: str = "search", anserini: bool = False) -> PackedRanking:
    """Bag-of-words queries from their texts, analyzed, built and searched in Java in one call per batch (the
    bulk helper's ``searchTextsPacked``): the query :func:`irglow.lexical.queries.bag_of_words` builds from the
    index's analyzer, without a JNI call per query; a query left with no term is reported and ranks nothing.

    Args:
        index: The Lucene index.
        searcher: A Lucene ``IndexSearcher``.
        queries: The queries.
        depth: Documents per query.
        threads: Search threads.
        desc: The progress bar's label.
        anserini: Scores rounded as Anserini rounds them.
    """
    helper, order = lq.J("irglow.BulkSearch"), index.tie_order
    packed = PackedRanking(index.ids)
    with tqdm(total=len(queries), desc=f"{desc} search", unit="q", disable=len(queries) < 200) as bar:
        for start in range(0, len(queries), BULK_BATCH):
            chunk = queries[start:start + BULK_BATCH]
            segment = packed.add([q.query_id for q in chunk], bytes(helper.searchTextsPacked(
                searcher, index.analyzer, "contents", [q.text for q in chunk], int(depth), int(max(1, threads)),
                order, bool(anserini)).tostring()))
            for q, n in zip(chunk, segment.extra.tolist()):
                if n == 0:
                    _warn_empty(q.query_id, q.text)
            bar.update(len(chunk))
    return packed


def run_lexical(index: LuceneIndex, queries: Sequence[Query], system: str = "bm25", **overrides) -> Run:
    """One lexical run in one call: ``run_lexical(index, queries, "bm25f", field_weights={"title": 2, "text": 1})``.

    Args:
        index: The Lucene index irglow built (:func:`~irglow.index.lucene_index.build_index`).
        queries: The queries (:class:`~irglow.data.records.Query`: id and text), e.g. a collection's
            ``queries("test")``.
        system: The lexical system: ``bm25``, ``bm25f``, ``bm25-mf``, ``tfidf``, ``qld`` or a registered one.
        **overrides: Any other :class:`LexicalConfig` field: ``k1``, ``b``, ``depth``, ``mu``, ``rm3``,
            ``field_weights``, ``threads`` ….

    Returns:
        The run (:class:`~irglow.runs.trec.Run`), its tag the system's name.
    """
    return LexicalSearcher(index, LexicalConfig(system=system, **overrides)).search(queries)
