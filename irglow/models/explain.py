"""What a trained model did to each query, for the results browser (``irglow report --twbert``, the pipeline's
page): TW-BERT's term weights and GLOW's word weights.  Kept with the models, so evaluation never imports
them; the page only receives the tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from irglow.defaults import BM25_B, BM25_K1
from irglow.dense.clusters import query_clusters
from irglow.eval.matching import TermMatcher
from irglow.models.glow.weights import split_words


def twbert_weights(model_dir: str | Path, index, queries) -> dict[str, dict[str, Any]]:
    """TW-BERT's learned weight of each uni- and bi-gram of each query, with the fixed prior beside it."""
    from irglow.models.twbert.model import TWBert
    from irglow.models.twbert.search import weigh_queries

    model = TWBert.load(model_dir)
    c = model.config
    note = (f"Fixed prior: the weight an n-gram has before training (uni-grams {c.unigram_prior:g}, bi-grams "
            f"{c.bigram_prior:g}), the query the bm25-ngram baseline runs; the weight column is what TW-BERT "
            f"learned for this query, the boost Lucene receives (×qtf). Terms are as the index's analyzer makes "
            f"them (stemmed); the next column gives the words of the query they come from.")
    out = {}
    for terms, weights in weigh_queries(model, index, queries):
        out[terms.query_id] = {"terms": terms.labels(), "surfaces": terms.surfaces(),
                               "weights": [round(float(w), 4) for w in weights],
                               "prior": [round(float(p), 4) for p in c.priors(terms)], "prior_note": note}
    return out


def glow_weights(model_dir: str | Path, index, stats, queries) -> dict[str, dict[str, Any]]:
    """The weight GLOW's attention gives each word of each query: BM25 of the word in the query against this
    collection's statistics, mean-normalised (stop words 0.5), as the model's weighted attention reads it
    (raised to ``weight_alpha`` inside the attention)."""
    from irglow.models.glow.model import GlowEncoder, featurizer_for

    model = GlowEncoder.load(model_dir)
    weighter = featurizer_for(model, index, stats).weighter
    if weighter is None:  # an unweighted encoder (bert): nothing to show
        return {}
    mode = "idf" if model.config.variant == "glow-idf" else "bm25"
    c = weighter.config
    fields = ", ".join(f"{f} α {c.field_weights.get(f, 1.0):g}" for f in model.config.fields)
    out = {}
    for q in queries:
        words = split_words(q.text)
        if words:
            weights = weighter.normalise(weighter.query_words(words, mode))
            out[q.query_id] = {"terms": words, "weights": [round(float(w), 4) for w in weights],
                               "label": f"GLOW's attention weights of the query's words ({mode}, mean 1, "
                                        f"exponent {model.config.weight_alpha:g}); documents' words: BM25F over "
                                        f"the fields ({fields}), k1 {c.doc_k1:g}"}
    return out



def report_analysis(index, stats, queries: dict[str, str], clusters: int | None = None, k1: float | None = None,
                    b: float | None = None, encoder: str = "default") -> dict[str, Any]:
    """What the results page needs beyond the runs, as :func:`irglow.eval.report.report_data`'s keywords: the
    index's analyzer and statistics for highlighting and mean IDF (with ``index``), and topic clusters of the
    queries' embeddings (``clusters``: how many; ``None`` about one per 25 queries; 0 none)."""
    out: dict[str, Any] = {}
    if index is not None and stats is not None:
        out["matcher"] = TermMatcher(index, stats, BM25_K1 if k1 is None else k1, BM25_B if b is None else b)
    if clusters != 0 and queries:
        out["clusters"] = query_clusters(queries, clusters, model=encoder)
        name = "all-MiniLM-L6-v2" if encoder == "default" else encoder
        out["cluster_source"] = f"{name}, mean-pooled, spherical k-means in faiss"
    return out
