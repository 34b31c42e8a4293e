"""The torch BM25 must equal Lucene on the demo collection: 100 random weighted queries with bi-grams."""

import random

import numpy as np
import pytest
import torch

from irglow.data.demo import DemoCollection
from irglow.index.forward import ForwardIndex
from irglow.index.stats import CollectionStats
from irglow.lexical import queries as lq
from irglow.lexical.searchers import doc_ids
from irglow.models.twbert.scorer import bm25_scores, build_features, collate
from irglow.models.twbert.search import lucene_query
from irglow.models.twbert.terms import extract_terms


def test_bigram_terms_keep_surface_and_stopword_gaps(demo_index):
    t = extract_terms(demo_index, "q", "Treatment of the Lyme disease, lyme")
    assert t.unigrams == ["treatment", "lyme", "diseas"]
    assert t.unigram_surface == ["Treatment", "Lyme", "disease"]
    assert t.bigrams == [("treatment", "lyme", 3), ("lyme", "diseas", 1), ("diseas", "lyme", 1)]
    assert t.bigram_surface[0] == "Treatment of the Lyme"
    assert extract_terms(demo_index, "s", "the of and").n_terms == 0


@pytest.mark.slow
@pytest.mark.parametrize("k1,b", [(0.9, 0.4), (1.2, 0.75)])
def test_torch_bm25_equals_lucene_on_100_weighted_queries(demo_index, k1, b):
    stats = CollectionStats.load(demo_index)
    forward = ForwardIndex(demo_index)
    ids = doc_ids(demo_index)
    searcher = lq.J("org.apache.lucene.search.IndexSearcher")(demo_index.lucene_reader)
    searcher.setSimilarity(lq.J("org.apache.lucene.search.similarities.BM25Similarity")(k1, b))
    collection = DemoCollection()
    docs = [d for d in collection.docs_iter() if len(d.text("body").split()) > 8]
    rng = random.Random(7)
    worst, n_phrase_hits = 0.0, 0
    for i in range(100):
        doc = rng.choice(docs)
        words = doc.text("body").split()
        start = rng.randrange(len(words) - 4)
        text = " ".join(words[start:start + rng.randint(2, 4)] + [rng.choice(words)])
        terms = extract_terms(demo_index, f"q{i}", text)
        if terms.n_terms == 0:
            continue
        weights = [rng.uniform(0.1, 3.0) for _ in range(terms.n_terms)]
        top = searcher.search(lucene_query(terms, weights), 50)
        hits = [(ids[sd.doc], float(sd.score)) for sd in top.scoreDocs]
        assert hits, text
        feats = build_features(terms, [d for d, _ in hits], stats, forward, k1, b)
        n_phrase_hits += int((feats.freq[:, len(terms.unigrams):] > 0).sum())
        batch = collate([feats], dtype=torch.float64)
        ours = bm25_scores(torch.tensor([weights], dtype=torch.float64), batch["freq"], batch["idf"], batch["norm"])[0]
        lucene = np.array([s for _, s in hits])
        worst = max(worst, float(np.max(np.abs(ours.numpy() - lucene) / np.abs(lucene))))
    assert n_phrase_hits > 100  # the bi-grams really matched documents
    assert worst <= 1e-4, worst
