"""TW-BERT at query time: predict n-gram weights, build Lucene objects, search through Pyserini.

The weighted query is Σ BoostQuery(TermQuery(t), b_t) + Σ BoostQuery(PhraseQuery(t1, t2), b_p) on
``contents`` with ``b = term_boosts(w, qtf, k3)`` — the same function the torch scorer trained.
With expansion, Pyserini's RM3 supplies feedback terms in a first pass; TW-BERT then weights
original and expansion terms together:

    boost(t) = α · b_t (original n-grams)        boost(e) = (1 − α) · b(w_e) · p_RM3(e) / max p_RM3

``prior_queries`` gives the same query structure with the fixed prior weights and no model:
the ``bm25-ngram`` baseline that shows what learning adds.
"""

from __future__ import annotations

import logging
from typing import Sequence

from irglow.utils.progress import tqdm

from irglow.data.records import Query
from irglow.index.lucene_index import LuceneIndex
from irglow.lexical import queries as lq
from irglow.models.checkpoints import pick_device
from irglow.models.twbert.model import TWBert, TWBertConfig, report_budget
from irglow.models.twbert.scorer import term_boosts
from irglow.models.twbert.terms import QueryTerms, extract_terms
from irglow.runs.trec import Run
from irglow.defaults import DEPTH, THREADS
from irglow.lexical.searchers import index_searcher, search_queries

log = logging.getLogger(__name__)


def lucene_query(terms: QueryTerms, weights: Sequence[float], extra: dict[str, float] | None = None,
                 field: str = "contents"):
    """Boosted term and phrase clauses; ``weights`` are the final Lucene boosts (see :func:`boosts`)."""
    clauses = []
    for t, w in zip(terms.unigrams, weights[: len(terms.unigrams)]):
        if w > 0:
            clauses.append(lq.boost(lq.term_query(field, t), w))
    for (a, b, gap), w in zip(terms.bigrams, weights[len(terms.unigrams):]):
        if w > 0:
            clauses.append(lq.boost(lq.phrase_query(field, [a, b], [0, gap]), w))
    for t, w in (extra or {}).items():
        if w > 0:
            clauses.append(lq.boost(lq.term_query(field, t), w))
    return lq.disjunction(clauses)


def boosts(terms: QueryTerms, weights: Sequence[float], k3: float | None) -> list[float]:
    return [float(term_boosts(w, c, k3)) for w, c in zip(weights, terms.qtf())]


def prior_queries(index: LuceneIndex, queries: Sequence[Query],
                  config: TWBertConfig) -> list[tuple[QueryTerms, list[float]]]:
    """The fixed-prior weights (uni-grams ``unigram_prior``, bi-grams ``bigram_prior``), no model."""
    out = []
    for q in queries:
        terms = extract_terms(index, q.query_id, q.text, config.bigrams)
        out.append((terms, config.priors(terms)))
    return out


def weigh_queries(model: TWBert, index: LuceneIndex, queries: Sequence[Query], batch_size: int = 32,
                  device=None) -> list[tuple[QueryTerms, list[float]]]:
    device = device or pick_device()
    model.to(device)
    all_terms = model.fit_budgets([extract_terms(index, q.query_id, q.text, model.config.bigrams) for q in queries],
                                  "TW-BERT weights")
    out = []
    for start in tqdm(range(0, len(all_terms), batch_size), desc="twbert weights", unit="batch",
                      disable=len(all_terms) < 500):
        chunk = all_terms[start:start + batch_size]
        live = [t for t in chunk if t.n_terms]
        weights = iter(model.predict(live, device) if live else [])
        out.extend((t, next(weights) if t.n_terms else []) for t in chunk)
    return out


def twbert_search(model: TWBert | None, index: LuceneIndex, queries: Sequence[Query], depth: int = DEPTH,
                  tag: str = "twbert", expansion: str | None = None, fb_terms: int = 10, fb_docs: int = 10,
                  original_weight: float = 0.5,
                  weighted: list[tuple[QueryTerms, list[float]]] | None = None,
                  config: TWBertConfig | None = None, threads: int = THREADS) -> Run:
    """One TREC run of TW-BERT-weighted queries (``expansion="rm3"`` for the two-pass variant).

    ``weighted``: :func:`weigh_queries` output for ``queries``, to share it between runs; with
    ``model=None`` it must be given (e.g. :func:`prior_queries`), and ``config`` gives k1, b, k3.
    """
    config = config or model.config
    if model is None and (weighted is None or expansion):
        raise ValueError("without a model, pass the weights (prior_queries) and no expansion")

    # exact float scores (Pyserini's hits are rounded to 4 decimals)
    searcher = index_searcher(index, lq.J("org.apache.lucene.search.similarities.BM25Similarity")(config.k1, config.b))
    if weighted is None:
        weighted = weigh_queries(model, index, queries)
    feedback = None
    if expansion == "rm3":
        fb = index.searcher()
        fb.set_bm25(config.k1, config.b)
        fb.set_rm3(fb_terms, fb_docs, original_weight)
        feedback = fb
    elif expansion is not None:
        raise ValueError(f"unknown expansion {expansion!r}; offered: rm3")
    items: list[tuple[str, object | None]] = []
    dropped: list = []  # queries cut to the token budget with their feedback terms: one summary line
    empty, zero = [], []
    for q, (terms, weights) in tqdm(list(zip(queries, weighted)), desc=f"{tag} queries", unit="q",
                                    disable=len(queries) < 200 or feedback is None):
        if terms.n_terms == 0:
            empty.append(f"{q.query_id} ({q.text[:40]!r})")
            items.append((q.query_id, None))
            continue
        if not any(w > 0 for w in weights):
            zero.append(q.query_id)
            weights = [1.0] * terms.n_terms
        extra = None
        weights = boosts(terms, weights, config.k3)
        if feedback is not None:
            extra = _expansion_weights(model, index, feedback, q, terms, original_weight, dropped)
            weights = [original_weight * w for w in weights]
        items.append((q.query_id, lucene_query(terms, weights, extra)))
    if feedback is not None:
        report_budget(dropped, f"{tag} (with feedback terms)", model.config.max_query_tokens)
    if empty:
        log.warning("%s: %d quer%s no searchable term after analysis (e.g. %s); empty rankings", tag, len(empty),
                    "y has" if len(empty) == 1 else "ies have", ", ".join(empty[:3]))
    if zero:
        log.warning("%s: TW-BERT gave every term weight 0 in %d quer%s (e.g. %s); uniform weights used", tag,
                    len(zero), "y" if len(zero) == 1 else "ies", ", ".join(zero[:3]))
    # Anserini's tie order and scores, as every lexical run: an untrained model's run is BM25's, file for file
    return Run(search_queries(index, searcher, items, depth, threads, tag, anserini=True), tag)


def twbert_rescore(model: TWBert | None, index: LuceneIndex, queries: Sequence[Query],
                   candidates: dict[str, list[str]], tag: str = "twbert", config: TWBertConfig | None = None,
                   weighted: list[tuple[QueryTerms, list[float]]] | None = None, threads: int = THREADS) -> Run:
    """TW-BERT's weighted queries scored by Lucene over each query's given ``candidates`` only (another run's top
    documents): the score each candidate gets is the one :func:`twbert_search` would give it; a candidate no
    weighted term matches scores 0, and one the index lacks is left out."""
    config = config or model.config

    searcher = index_searcher(index, lq.J("org.apache.lucene.search.similarities.BM25Similarity")(config.k1, config.b))
    if weighted is None:
        weighted = weigh_queries(model, index, queries)
    items = []
    for q, (terms, weights) in zip(queries, weighted):
        docs = candidates.get(q.query_id, [])
        if not docs:
            items.append((q.query_id, None))
            continue
        query = lucene_query(terms, boosts(terms, weights, config.k3)) if terms.n_terms else None
        items.append((q.query_id, lq.within(query, "id", docs)))
    depth = max((len(d) for d in candidates.values()), default=1)
    return Run(search_queries(index, searcher, items, max(1, depth), threads, tag), tag)


def _expansion_weights(model: TWBert, index: LuceneIndex, feedback, q: Query, terms: QueryTerms,
                       original_weight: float, dropped: list) -> dict[str, float]:
    fb = {t: float(w) for t, w in feedback.get_feedback_terms(q.text).items() if t not in terms.unigrams}
    if not fb:
        return {}
    top = max(fb.values())
    # TW-BERT reads the expansion terms after the query's own words
    exp_terms = QueryTerms(q.query_id, q.text, terms.unigrams + list(fb), terms.unigram_surface + list(fb))
    exp_terms = model.fit_budget(exp_terms, dropped)
    w = model.predict([exp_terms], pick_device())[0]
    n = len(terms.unigrams)
    k3 = model.config.k3
    return {t: (1 - original_weight) * float(term_boosts(wt, 1.0, k3)) * fb[t] / top
            for t, wt in zip(exp_terms.unigrams[n:], w[n:])}
