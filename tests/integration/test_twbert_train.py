"""TW-BERT training pieces pinned by hand, and the promises that tie training to Lucene:
an untrained model is BM25 exactly (repeated query terms included), k3 means the same in both."""

import math
import pickle

import pytest
import torch

from irglow.data.demo import DemoCollection
from irglow.data.records import Query
from irglow.index.forward import ForwardIndex
from irglow.index.stats import CollectionStats
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
from irglow.models.checkpoints import load_trainer_checkpoint
from irglow.models.twbert.model import TWBert, TWBertConfig
from irglow.models.twbert.scorer import bm25_scores, build_features, collate, term_boosts
from irglow.models.twbert.search import boosts, prior_queries, twbert_search
from irglow.models.twbert.terms import extract_terms
from irglow.models.twbert.train import TrainConfig, label_gains, scaled_scores, softmax_ce


def _batch(qtf=(1.0, 1.0)):
    # two docs, two terms: doc0 tf (1, 0), doc1 tf (2, 1); idf (1, 0.5); K_d (1, 2)
    return {"freq": torch.tensor([[[1.0, 0.0], [2.0, 1.0]]]), "idf": torch.tensor([[1.0, 0.5]]),
            "norm": torch.tensor([[1.0, 2.0]]), "term_valid": torch.ones(1, 2), "qtf": torch.tensor([list(qtf)]),
            "doc_mask": torch.tensor([[True, True]])}


def _queries_with_repeats():
    demo = DemoCollection().queries("test")[:40]
    out = []
    for i, q in enumerate(demo):
        words = q.text.split()
        out.append(Query(q.query_id, q.text + " " + words[i % len(words)] + (" " + words[0] if i % 3 == 0 else "")))
    return out


def test_scaled_scores_by_hand():
    w = torch.tensor([[1.0, 2.0]])
    # doc0: 1·1·1/2 = 0.5; doc1: 1·1·2/4 + 2·0.5·1/3 = 0.8333
    assert scaled_scores(w, _batch(), None, "weighted")[0].tolist() == pytest.approx([0.6, 1.0])
    # uniform: scaled by the unweighted maximum 0.5 + 0.5/3 = 0.6667
    assert scaled_scores(w, _batch(), None, "uniform")[0].tolist() == pytest.approx([0.75, 1.25])
    # query term counts multiply the boost: qtf (2, 1) → boosts (2, 2): doc0 1.0, doc1 1.3333
    raw = bm25_scores(w, **{k: v for k, v in _batch((2.0, 1.0)).items() if k in ("freq", "idf", "norm")},
                      qtf=torch.tensor([[2.0, 1.0]]))
    assert raw[0].tolist() == pytest.approx([1.0, 4 / 3])
    # k3 = 1: w → 2w / (1 + w), so 1 → 1 and 2 → 4/3
    assert term_boosts(torch.tensor([1.0, 2.0]), 1.0, 1.0).tolist() == pytest.approx([1.0, 4 / 3])
    assert term_boosts(2.0, 3, 1.0) == pytest.approx(4.0)


def test_maxout_by_hand():
    model = TWBert.__new__(TWBert)
    torch.nn.Module.__init__(model)
    model.maxout_a = torch.nn.Parameter(torch.tensor([0.5, 1.0, 1.5]))
    model.maxout_c = torch.nn.Parameter(torch.tensor([-0.1, 0.0, 0.1]))
    # 0.6 → max(0.2, 0.6, 1.0); −1 → max(−0.6, −1.0, −1.4)
    assert model.maxout(torch.tensor([0.6, -1.0])).tolist() == pytest.approx([1.0, -0.6])


def test_softmax_ce_and_label_gains_by_hand():
    scores, mask = torch.tensor([[0.6, 1.0]]), torch.tensor([[True, True]])
    # logits (6, 10): −log softmax₀ = log(1 + e⁴)
    assert softmax_ce(scores, torch.tensor([[1.0, 0.0]]), mask, 0.1).item() == pytest.approx(math.log(1 + math.e ** 4))
    both = 0.5 * (math.log(1 + math.e ** 4) + math.log(1 + math.e ** -4))
    assert softmax_ce(scores, torch.tensor([[1.0, 1.0]]), mask, 0.1).item() == pytest.approx(both)
    # a query with no positive contributes nothing (and no NaN)
    assert softmax_ce(scores, torch.zeros(1, 2), mask, 0.1).item() == 0.0
    labels = torch.tensor([0.0, 1.0, 2.0])
    assert label_gains(labels, "linear", 2).tolist() == pytest.approx([0, 0.5, 1])
    assert label_gains(labels, "exp", 2).tolist() == pytest.approx([0, 1 / 3, 1])
    assert label_gains(labels, "binary", 2).tolist() == [0, 1, 1]


@pytest.mark.parametrize("k3,scale_by", [(None, "weighted"), (2.0, "weighted"), (None, "uniform")])
def test_scorer_gradient_matches_finite_differences(k3, scale_by):
    g = torch.Generator().manual_seed(1)
    batch = {"freq": torch.randint(0, 4, (2, 5, 3), generator=g).double(),
             "idf": torch.rand(2, 3, generator=g, dtype=torch.float64) + 0.2,
             "norm": torch.rand(2, 5, generator=g, dtype=torch.float64) + 0.5,
             "term_valid": torch.ones(2, 3, dtype=torch.float64),
             "qtf": torch.tensor([[1.0, 2.0, 1.0], [3.0, 1.0, 1.0]], dtype=torch.float64),
             "doc_mask": torch.ones(2, 5, dtype=torch.bool)}
    batch["freq"][:, 0, :] = 1.0  # every query has a matching document (max score > 0)
    w = (torch.rand(2, 3, generator=g, dtype=torch.float64) + 0.5).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x: scaled_scores(x, batch, k3, scale_by), (w,), eps=1e-6, atol=1e-7)


def test_untrained_model_is_lucene_bm25_with_repeated_terms(demo_index):
    queries = _queries_with_repeats()
    repeated = [extract_terms(demo_index, q.query_id, q.text) for q in queries]
    assert sum(max(t.qtf()) > 1 for t in repeated) >= 30  # the fixture really repeats terms
    bm25 = LexicalSearcher(demo_index, LexicalConfig("bm25", depth=100)).search(queries)
    model = TWBert.from_pretrained_bert(TWBertConfig(bigrams=False, max_query_tokens=64))
    run = twbert_search(model, demo_index, queries, depth=100)
    for q in queries:
        ours, theirs = run.ranking[q.query_id], bm25.ranking[q.query_id]
        assert [d for d, _ in ours] == [d for d, _ in theirs], q.text
        assert [s for _, s in ours] == pytest.approx([s for _, s in theirs], abs=1e-6)


def test_untrained_model_with_bigrams_is_the_fixed_prior(demo_index):
    queries = _queries_with_repeats()[:15]
    model = TWBert.from_pretrained_bert(TWBertConfig(max_query_tokens=64, bigram_prior=0.3))
    prior = twbert_search(None, demo_index, queries, depth=50, tag="bm25-ngram",
                          weighted=prior_queries(demo_index, queries, model.config), config=model.config)
    run = twbert_search(model, demo_index, queries, depth=50)
    for q in queries:
        assert [d for d, _ in run.ranking[q.query_id]] == [d for d, _ in prior.ranking[q.query_id]]


def test_k3_model_lucene_scores_equal_torch_scorer(demo_index):
    from irglow.lexical import queries as lq
    from irglow.lexical.searchers import doc_ids
    from irglow.models.twbert.search import lucene_query

    k3 = 2.0
    stats, forward, ids = CollectionStats.load(demo_index), ForwardIndex(demo_index), doc_ids(demo_index)
    searcher = lq.J("org.apache.lucene.search.IndexSearcher")(demo_index.lucene_reader)
    searcher.setSimilarity(lq.J("org.apache.lucene.search.similarities.BM25Similarity")(0.9, 0.4))
    g = torch.Generator().manual_seed(5)
    for q in _queries_with_repeats()[:20]:
        terms = extract_terms(demo_index, q.query_id, q.text)
        w = (torch.rand(terms.n_terms, generator=g, dtype=torch.float64) * 3).tolist()
        top = searcher.search(lucene_query(terms, boosts(terms, w, k3)), 20)
        hits = [(ids[sd.doc], float(sd.score)) for sd in top.scoreDocs]
        feats = build_features(terms, [d for d, _ in hits], stats, forward, 0.9, 0.4)
        b = collate([feats], dtype=torch.float64)
        ours = bm25_scores(torch.tensor([w], dtype=torch.float64), b["freq"], b["idf"], b["norm"], k3=k3, qtf=b["qtf"])
        assert ours[0].tolist() == pytest.approx([s for _, s in hits], rel=1e-4)


def test_trainer_checkpoint_refuses_pickled_code(tmp_path):
    class Boom:
        def __reduce__(self):
            return (print, ("this must not run",))

    bad = tmp_path / "trainer.pt"
    bad.write_bytes(pickle.dumps({"state": Boom()}))
    with pytest.raises(ValueError, match="must not carry code"):
        load_trainer_checkpoint(bad)


def test_unknown_config_key_names_the_key_and_choices():
    with pytest.raises(ValueError, match=r"unknown \[twbert\] setting\(s\) \['lerning_rate'\] \(did you mean 'learning_rate'\?\)|unknown \[twbert\] setting\(s\) \['lerning_rate'\].*known"):
        TrainConfig.from_dict({"lerning_rate": 1})
    with pytest.raises(ValueError, match=r"twbert.model"):
        TrainConfig.from_dict({"model": {"k5": 1}})
    with pytest.raises(ValueError, match="twbert.loss = 'hinge' must be one of 'softmax', 'amse.listmle'"):
        TrainConfig(loss="hinge")
    with pytest.raises(ValueError, match="twbert.model.head = 'tanh' must be one of 'residual', 'relu'"):
        TrainConfig.from_dict({"model": {"head": "tanh"}})
    with pytest.raises(ValueError, match="twbert.max_train_queries = 0 must be an integer >= 1"):
        TrainConfig(max_train_queries=0)  # a None default is checked too when set


def test_choose_length_by_hand():
    """Mean over the folds at the steps all of them evaluated (25 is one fold's epoch end): 0 → 0.45, 10 → 0.6,
    20 → 0.6, 30 → 0.7; the best is 30.  Equal means keep the earliest step."""
    from irglow.models.twbert.train import choose_length

    a = [(0, 0.5), (10, 0.6), (20, 0.7), (25, 0.9), (30, 0.6)]
    b = [(0, 0.4), (10, 0.6), (20, 0.5), (30, 0.8)]
    step, mean = choose_length([a, b])
    assert step == 30 and mean == [(0, 0.45), (10, 0.6), (20, pytest.approx(0.6)), (30, pytest.approx(0.7))]
    assert choose_length([a[:3], b[:3]])[0] == 10  # 10 and 20 both 0.6: the earlier
