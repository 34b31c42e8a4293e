import json
import logging
import math

import pytest
import torch

from irglow.data.demo import DemoCollection
from irglow.data.records import Query
from irglow.index.stats import CollectionStats
from irglow.models.checkpoints import load_trainer_checkpoint
from irglow.models.twbert.model import TWBert, TWBertConfig
from irglow.models.twbert.search import twbert_search
from irglow.models.twbert.terms import QueryTerms, extract_terms
from irglow.models.twbert.train import TrainConfig, Trainer, amse, list_mle


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return TWBert.from_pretrained_bert(TWBertConfig(max_query_tokens=32))


def test_amse_by_hand():
    got = amse(torch.tensor([0.1, 0.5, 2.0, 0.9]), torch.tensor([0.0, 0.0, 0.0, 1.0]), d1=0.2, d2=1.0)
    # |e| = 0.1 (dead zone), 0.5 (½e²), 2.0 (d2(|e| − ½d2)), 0.1 (dead zone)
    assert got.tolist() == pytest.approx([0.0, 0.125, 1.5, 0.0])


def test_list_mle_by_hand():
    pred, target = torch.tensor([[2.0, 1.0, 5.0]]), torch.tensor([[1.0, 0.0, 0.0]])
    mask = torch.tensor([[True, True, False]])  # the third doc is padding
    # order by label: (2, 1): [log(e² + e¹) − 2] + [log e¹ − 1], averaged over 2 docs
    expected = math.log(1 + math.exp(-1)) / 2
    assert list_mle(pred, target, mask).item() == pytest.approx(expected, rel=1e-5)


def test_term_mask_covers_each_terms_pieces(model):
    terms = QueryTerms("q", "", ["lyme", "diseas"], ["Lyme", "diseases"], [("lyme", "diseas", 1)], ["Lyme diseases"])
    enc = model.encode([terms])
    mask = enc["term_mask"][0]
    ids = enc["input_ids"][0].tolist()
    assert mask.shape[0] == 3
    assert torch.allclose(mask.sum(-1), torch.ones(3))
    pieces = lambda row: [model.tokenizer.convert_ids_to_tokens(ids[t]) for t in row.nonzero().flatten().tolist()]
    assert pieces(mask[0]) == model.tokenizer.tokenize("Lyme")
    assert pieces(mask[1]) == model.tokenizer.tokenize("diseases")
    assert pieces(mask[2]) == model.tokenizer.tokenize("Lyme diseases")
    sep = ids.index(model.tokenizer.sep_token_id)
    assert mask[2].nonzero().min() > sep > mask[1].nonzero().max()  # uni-grams first, then bi-grams


def test_save_load_roundtrip_and_bad_dirs(model, tmp_path):
    terms = QueryTerms("q", "", ["apple", "pie"], ["apple", "pie"], [("apple", "pie", 1)], ["apple pie"])
    before = model.predict([terms])[0]
    path = model.save(tmp_path / "m")
    again = TWBert.load(path)
    assert torch.allclose(torch.tensor(before), torch.tensor(again.predict([terms])[0]), atol=1e-6)
    assert again.config == model.config
    with pytest.raises(FileNotFoundError, match="does not exist"):
        TWBert.load(tmp_path / "nope")
    (path / "twbert.json").unlink()
    with pytest.raises(FileNotFoundError, match="missing twbert.json"):
        TWBert.load(path)
    model.save(path)
    (path / "twbert_head.safetensors").write_bytes(b"garbage")
    with pytest.raises(ValueError, match="corrupt"):
        TWBert.load(path)


def test_overlong_query_is_truncated_with_notice(model, demo_index, caplog):
    text = " ".join(f"word{i} thing{i}" for i in range(40))
    with caplog.at_level(logging.WARNING):
        terms = model.fit_budget(extract_terms(demo_index, "long", text))
    assert terms.dropped > 0 and "longer than 32 tokens" in caplog.text
    enc = model.encode([terms])
    assert enc["input_ids"].shape[1] <= 32 and (enc["term_mask"].sum(-1) > 0).all()


def test_stopword_query_gives_empty_ranking(model, demo_index, caplog):
    queries = [Query("s", "the of and"), Query("ok", DemoCollection().queries("test")[0].text)]
    with caplog.at_level(logging.WARNING):
        run = twbert_search(model, demo_index, queries, depth=10)
    assert run.ranking["s"] == [] and len(run.ranking["ok"]) == 10
    assert "no searchable term" in caplog.text


def test_training_checkpoints_and_resumes(demo_index, tmp_path, caplog):
    demo = DemoCollection()
    stats = CollectionStats.load(demo_index)
    cfg = TrainConfig(model=TWBertConfig(max_query_tokens=32), candidates=10, max_train_queries=24,
                      batch_queries=8, stage1_epochs=1, epochs=1, patience=5, seed=3)
    best = Trainer(cfg, tmp_path).train(demo_index, stats, demo.queries("train"), demo.qrels("train"))
    assert (best / "twbert.json").is_file() and (tmp_path / "checkpoint" / "trainer.pt").is_file()
    first = json.loads(load_trainer_checkpoint(tmp_path / "checkpoint" / "trainer.pt")["state"])
    assert first["warming"] is False and first["epoch"] == 1
    cfg.epochs = 2
    with caplog.at_level(logging.WARNING):
        Trainer(cfg, tmp_path).train(demo_index, stats, demo.queries("train"), demo.qrels("train"))
    assert "resuming TW-BERT training" in caplog.text
    second = json.loads(load_trainer_checkpoint(tmp_path / "checkpoint" / "trainer.pt")["state"])
    assert second["epoch"] == 2 and len(second["history"]) == len(first["history"]) + 1


@pytest.mark.slow
def test_a_resumed_twbert_training_is_the_uninterrupted_one(demo_index, tmp_path, monkeypatch):
    """TW-BERT killed after its first checkpoint (the stage-1 epoch) and resumed trains what the uninterrupted
    run trains: ListMLE's tie shuffling draws from a generator the checkpoint now carries (it was re-seeded on
    resume), and dropout from torch's RNG."""
    import irglow.models.training as train_module
    from tests.integration.resumed import assert_resumed_is_uninterrupted

    demo = DemoCollection()
    stats = CollectionStats.load(demo_index)
    cfg = TrainConfig(model=TWBertConfig(max_query_tokens=32), candidates=10, max_train_queries=24,
                      batch_queries=8, stage1_epochs=1, epochs=2, patience=5, seed=3, loss="amse+listmle")
    assert_resumed_is_uninterrupted(
        monkeypatch, train_module,
        lambda out: Trainer(cfg, out).train(demo_index, stats, demo.queries("train"), demo.qrels("train")),
        tmp_path, evaluations=3)


def test_cross_validation_chooses_the_length_on_every_training_query(demo_index, tmp_path):
    """folds = 3: the folds hold out disjoint shares of the training queries that together are all of them (and
    only them: the judgments given are the training split's); the final training runs the chosen length plus
    the averaging window on all the queries."""
    from irglow.models.checkpoints import read_training, training_summary
    from irglow.models.twbert.train import choose_length

    demo = DemoCollection()
    stats = CollectionStats.load(demo_index)
    qrels = demo.qrels("train")
    cfg = TrainConfig(model=TWBertConfig(max_query_tokens=32), candidates=10, max_train_queries=24,
                      batch_queries=4, epochs=1, eval_every=2, folds=3, fold_steps=4, average_last=2, seed=3)
    kept = Trainer(cfg, tmp_path).train(demo_index, stats, demo.queries("train"), qrels)
    assert kept == tmp_path / "average"
    final = read_training(kept)
    cv = final["cross_validation"]
    folds = [read_training(tmp_path / "folds" / f"fold-{i}" / "best") for i in (1, 2, 3)]
    held = [set(f["val_query_ids"]) for f in folds]
    assert all(held) and not (held[0] & held[1] or held[0] & held[2] or held[1] & held[2])
    # every training query held out by one fold: the out-of-fold queries a fusion is tuned on
    assert len(set.union(*held)) == final["train_queries"] and final["val_query_ids"] == sorted(set.union(*held))
    assert set.union(*held) <= {r.query_id for r in qrels if r.relevance > 0}
    assert [f["state"]["step"] for f in folds] == [4, 4, 4]
    curves = [[(h["step"], h["val_ndcg@10"]) for h in f["state"]["history"]] for f in folds]
    assert cv["fold_curves"] == [[list(p) for p in c] for c in curves]
    assert cv["chosen_step"] == choose_length(curves)[0]
    assert cv["trained_steps"] == final["state"]["step"] == cv["chosen_step"] + 2  # + (average_last − 1) · eval_every
    assert final["state"]["averaged_steps"][-1] == cv["trained_steps"]
    summary = training_summary(kept)  # the pipeline's training table: the folds' mean curve, every query held out
    assert (summary["folds"], summary["step"], summary["val_queries"]) == (3, cv["chosen_step"], len(set.union(*held)))
    assert summary["validation"] == dict((s, v) for s, v in cv["mean_curve"])[cv["chosen_step"]]


def test_more_folds_than_the_training_queries_fill_are_refused_before_any_fold_trains(demo_index, tmp_path,
                                                                                       monkeypatch):
    """Issue 59.14: a fold that held out nothing trained anyway, its curve all NaN, then StopIteration."""
    import irglow.models.twbert.train as twbert_train

    demo = DemoCollection()
    cfg = TrainConfig(model=TWBertConfig(max_query_tokens=32), candidates=10, max_train_queries=6,
                      batch_queries=2, epochs=1, eval_every=2, folds=12, fold_steps=2, seed=3)
    monkeypatch.setattr(twbert_train.Trainer, "_loop", lambda *a, **k: pytest.fail("a fold trained"))
    with pytest.raises(ValueError, match=r"twbert folds = 12: fold\(s\) .* would hold out none of the 6 training "
                                         r"queries .*; use fewer folds"):
        Trainer(cfg, tmp_path).train(demo_index, CollectionStats.load(demo_index), demo.queries("train"),
                                     demo.qrels("train"))
