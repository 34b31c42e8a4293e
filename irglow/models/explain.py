"""What a trained model did to each query, for the results browser (``irglow report --twbert``, the pipeline's
page): TW-BERT's term weights and GLOW's word weights.  Kept with the models, so evaluation never imports
them; the page only receives the tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def twbert_weights(model_dir: str | Path, index, queries) -> dict[str, dict[str, Any]]:
    """TW-BERT's learned weight of each uni- and bi-gram of each query, with the fixed prior beside it."""
    from irglow.models.twbert.model import TWBert
    from irglow.models.twbert.search import weigh_queries

    model = TWBert.load(model_dir)
    out = {}
    for terms, weights in weigh_queries(model, index, queries):
        out[terms.query_id] = {"terms": terms.labels(), "weights": [round(float(w), 4) for w in weights],
                               "prior": [round(float(p), 4) for p in model.config.priors(terms)]}
    return out


def glow_weights(model_dir: str | Path, index, stats, queries) -> dict[str, dict[str, Any]]:
    """The weight GLOW's attention gives each word of each query: BM25 of the word in the query against this
    collection's statistics, mean-normalised (stop words 0.5), as the model's weighted attention reads it
    (raised to ``weight_alpha`` inside the attention)."""
    from irglow.models.glow.model import GlowEncoder, featurizer_for
    from irglow.models.glow.weights import split_words

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

