"""Training GLOW/BERT (irglow.models.glow.train): the model directory, resumption, losses and negatives by hand,
the pipeline stage, mixing with the starting checkpoint."""

import json
import logging
import random

import pytest
import torch

from irglow.data.demo import DemoCollection
from irglow.index.stats import CollectionStats
from irglow.models.checkpoints import load_trainer_checkpoint
from irglow.models.glow.explain import top_attended_words
from irglow.models.glow.model import GlowEncoder
from irglow.models.glow.runner import featurizer_for, glow_run
from irglow.models.glow.train import GlowTrainConfig, GlowTrainer, contrastive_loss, epoch_batches
from irglow.models.training import linear_schedule, pick_negatives


@pytest.fixture(scope="module")
def trained(demo_index, module_tmp):
    demo = DemoCollection()
    stats = CollectionStats.load(demo_index)
    docs = {d.doc_id: d for d in demo.docs_iter()}
    out = module_tmp
    cfg = GlowTrainConfig.from_dict({"batch_size": 4, "epochs": 1, "max_steps": 2, "val_max_docs": 10,
                                     "alpha_ramp": 0.5, "val_pool_depth": 5,
                                     "model": {"variant": "glow", "num_layers": 2, "fields": ["title", "url", "body", "anchor"],
                                               "field_max_tokens": {"body": 16}}})
    best = GlowTrainer(cfg, out).train(demo_index, stats, docs, demo.queries("train")[:40], demo.qrels("train"))
    return best, out, cfg, stats, docs


def test_training_writes_model_dir_and_resumes(trained, demo_index, caplog):
    best, out, cfg, stats, docs = trained
    assert (best / "glow.json").is_file() and (out / "checkpoint" / "trainer.pt").is_file()
    # tensors and plain values only: the checkpoint loads with weights_only=True
    saved = json.loads(load_trainer_checkpoint(out / "checkpoint" / "trainer.pt")["state"])
    assert saved["epoch"] == 1 and saved["step"] == 2
    model = GlowEncoder.load(best)
    queries = DemoCollection().queries("train")[:40]
    # the average query length in content words: what Lucene's analyzer keeps of each query
    expected = sum(len(demo_index.analyze(q.text)) for q in queries) / len(queries)
    assert model.config.variant == "glow" and model.config.weights["avg_query_len"] == pytest.approx(expected)
    info = json.loads((out / "training.json").read_text())
    hist = info["state"]["history"]
    # the checkpoint is validated first (step 0, full weighting); α ramps 0 → 1 over the first half (1 step)
    assert [h["step"] for h in hist] == [0, 2] and hist[0]["loss"] is None and hist[-1]["alpha"] == 1.0
    # validation on what a retriever sees: 62 documents > val_max_docs 10 → BM25 top-5 pools, no judged docs added
    assert info["val_docs"] <= 5 * info["val_queries"] and len(info["val_query_ids"]) == info["val_queries"]
    cfg.epochs, cfg.max_steps = 2, 3
    demo = DemoCollection()
    with caplog.at_level(logging.WARNING):
        GlowTrainer(cfg, out).train(demo_index, stats, docs, demo.queries("train")[:40], demo.qrels("train"))
    assert "resuming GLOW[glow] training" in caplog.text
    assert json.loads(load_trainer_checkpoint(out / "checkpoint" / "trainer.pt")["state"])["step"] == 3


def test_search_writes_embeddings_and_run(trained, demo_index, tmp_path):
    best, _, _, stats, docs = trained
    model = GlowEncoder.load(best)
    some = list(docs.values())[:50]
    queries = DemoCollection().queries("test")[:3]
    run, info = glow_run(model, demo_index, stats, some, queries, tmp_path, "glow", depth=10)
    emb, = tmp_path.glob("glow-*.embeddings")  # keyed on the model, the corpus and the precision
    assert (emb / "embeddings.npy").is_file()
    ids = (emb / "ids.txt").read_text().split()
    assert ids == [d.doc_id for d in some] and all(len(v) == 10 for v in run.ranking.values())
    words = top_attended_words(model, featurizer_for(model, demo_index, stats), docs["t000d00"], top=3)
    assert set(words) == {"title", "url", "body", "anchor"} and len(words["title"]) == 3
    probs = [p for _, p in words["title"]]
    assert probs == sorted(probs, reverse=True) and sum(probs) <= 1.0 + 1e-6


def test_contrastive_loss_by_hand():
    """cos/τ with τ 0.5: row 0 logits (1, 0.2) → ln(1 + e^−0.8) = 0.371101; row 1 (0.4, 0.8), target 0.8
    → ln(1 + e^−0.4) = 0.513015; mean 0.442058.  Masking row 0's other column leaves it alone: loss 0."""
    cos = torch.tensor([[0.5, 0.1], [0.2, 0.4]])
    none = torch.zeros(2, 2, dtype=torch.bool)
    assert float(contrastive_loss(cos, none, 0.5)) == pytest.approx(0.442058, abs=1e-6)
    masked = none.clone()
    masked[0, 1] = True
    assert float(contrastive_loss(cos, masked, 0.5)) == pytest.approx(0.513015 / 2, abs=1e-6)


def test_batches_schedule_and_negatives():
    # 10 queries, batch 3 → 3 full batches; accumulating 2 → only the whole group of 2
    assert epoch_batches(list(range(10)), 3, 1) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert epoch_batches(list(range(10)), 3, 2) == [[0, 1, 2], [3, 4, 5]]
    assert [round(linear_schedule(s, 2, 6), 3) for s in range(7)] == [0.5, 1.0, 1.0, 0.75, 0.5, 0.25, 0.0]
    rng = random.Random(0)
    assert set(pick_negatives(["h1", "h2"], {"p"}, ["p", "h1"], 5, rng)) <= {"h1", "h2"}
    # no hard negative: random documents, never a judged one
    assert set(pick_negatives([], {"a", "b"}, ["a", "b", "c"], 4, rng)) == {"c"}
    with pytest.raises(ValueError, match="every document is judged"):
        pick_negatives([], {"a"}, ["a"], 1, rng)
    with pytest.raises(ValueError, match=r"unknown \[glow\] setting.*'lr_bert'"):
        GlowTrainConfig.from_dict({"lr_bert": 1.0})


def test_pipeline_stage_trains_searches_and_fuses(tmp_path):
    """The stage behind ``make run``: both variants trained, searched, and fused with bm25f using a weight
    tuned on the held-out training queries (never the test split)."""
    from irglow.data.collection import load_collection
    from irglow.index.lucene_index import IndexConfig, build_index
    from irglow.lexical.stage import LexicalSettings
    from irglow.models.glow.stage import GlowStage
    from irglow.models.source import TrainSource
    from irglow.stage import Context

    coll = load_collection("demo:n_topics=12,docs_per_topic=4,n_roundups=10,n_background=10")
    index = build_index(coll, IndexConfig(threads=1), root=tmp_path / "data")
    config = {"collection": {"train_split": "train", "test_split": "test"}, "lexical": {"depth": 20},
              "glow": {"enabled": True, "variants": ["bert", "glow"], "batch_size": 4,
                       "max_steps": 1, "val_max_docs": 0, "val_pool_depth": 5,
                       "model": {"num_layers": 1, "field_max_tokens": {"body": 8}}},
              "fusion": {"enabled": True, "runs": ["bm25f+bert", "bm25f+glow"]}}
    stats = CollectionStats.load(index)
    stage = GlowStage()
    ctx = Context(coll, index, stats, TrainSource(coll, index, stats, "train"), tmp_path, tmp_path,
                  LexicalSettings(systems=["bm25f"], depth=20), {"bm25f": {}}, "test",
                  settings=stage.settings_class.from_config(config), held_out=frozenset({"bert", "glow"}))
    from irglow.runs.keys import Runs

    runs = {}  # the test runs (the held-out ones are the fusion's)
    for tag in ("bert", "glow"):
        runs.update(Runs(stage.run(ctx, tag).runs))
    assert ctx.settings == stage.settings_class.from_config(config)  # training changed nothing of the bound settings (a later split reads them)
    assert set(runs) == {"bert", "glow"}  # the hybrids are the fusion stage's: the held-out runs are written for it
    assert (tmp_path / "tuning" / "bert.run").is_file() and (tmp_path / "tuning" / "glow.run").is_file()
    test_ids = {q.query_id for q in coll.queries("test")}
    for tag, run in runs.items():
        assert set(run.ranking) == test_ids and (tmp_path / f"{tag}.run").is_file()
        assert all(len(docs) <= 20 for docs in run.ranking.values())
    keyed, = (tmp_path / "glow-train").iterdir()  # the one folder keyed on this training's inputs
    held_out = json.loads((keyed / "training.json").read_text())["val_query_ids"]
    assert held_out and not set(held_out) & test_ids


def test_l2sp_penalty_by_hand():
    """Issue 33.1 (the code path): λ·Σ‖θ − θ₀‖² toward the starting checkpoint."""
    import torch

    from irglow.models.glow.train import GlowTrainConfig, l2sp_penalty

    layer = torch.nn.Linear(2, 2)
    start = {n: p.detach().clone() for n, p in layer.named_parameters()}
    assert float(l2sp_penalty(layer, start)) == 0.0
    with torch.no_grad():
        layer.weight += 0.5  # four weights 0.5 away: 4 × 0.25
    assert float(l2sp_penalty(layer, start)) == pytest.approx(1.0)
    start["bias"] = torch.zeros(3)  # another shape (a grown embedding): not pulled
    assert float(l2sp_penalty(layer, start)) == pytest.approx(1.0)
    assert GlowTrainConfig.from_dict({"l2sp": 0.01}).l2sp == 0.01
    with pytest.raises(ValueError, match="glow.l2sp"):
        GlowTrainConfig.from_dict({"l2sp": -1.0})


def test_a_resumed_glow_training_is_the_uninterrupted_one(demo_index, tmp_path, monkeypatch):
    """GLOW killed after its first epoch's checkpoint and resumed trains the model the uninterrupted run trains:
    the checkpoint holds the negatives' sampler *and* torch's RNG (dropout draws); without the latter the resumed
    epoch drops other units and ends with other weights."""
    import irglow.models.training as train_module
    from tests.integration.resumed import assert_resumed_is_uninterrupted

    demo = DemoCollection()
    stats = CollectionStats.load(demo_index)
    docs = {d.doc_id: d for d in demo.docs_iter()}
    queries, qrels = demo.queries("train")[:16], demo.qrels("train")
    cfg = GlowTrainConfig.from_dict({"batch_size": 4, "epochs": 2, "val_max_docs": 10, "val_pool_depth": 5,
                                     "model": {"variant": "glow", "num_layers": 1, "fields": ["title", "body"],
                                               "field_max_tokens": {"body": 16}}})
    assert_resumed_is_uninterrupted(
        monkeypatch, train_module, lambda out: GlowTrainer(cfg, out).train(demo_index, stats, docs, queries, qrels),
        tmp_path, evaluations=3)


def test_glow_mixed_with_its_checkpoint(demo_index, tmp_path, monkeypatch):
    """``mix_checkpoint``: after training, θ₀ + m·(θ − θ₀) is validated like an epoch's model; the curve is in
    training.json and the model kept is the mix when it wins (the epoch's model then in best-unmixed)."""
    from irglow.models.glow.train import starting_weights
    from irglow.models.mixing import mix_weights

    demo = DemoCollection()
    stats = CollectionStats.load(demo_index)
    docs = {d.doc_id: d for d in demo.docs_iter()}
    queries, qrels = demo.queries("train")[:24], demo.qrels("train")
    cfg = GlowTrainConfig.from_dict({"batch_size": 4, "epochs": 1, "lr": 5e-4, "val_max_docs": 10,
                                     "val_pool_depth": 5, "mix_checkpoint": [0.5],
                                     "model": {"variant": "glow", "num_layers": 1, "fields": ["title", "body"],
                                               "field_max_tokens": {"body": 16}}})
    best = GlowTrainer(cfg, tmp_path).train(demo_index, stats, docs, queries, qrels)
    state = json.loads((tmp_path / "training.json").read_text())["state"]
    (mix,) = state["mixes"]
    assert mix["mix"] == 0.5 and set(mix) >= {"val_ndcg@10", "kept"}
    epoch_best = max(h["val_ndcg@10"] for h in state["history"])
    assert mix["kept"] == (mix["val_ndcg@10"] > epoch_best + 1e-5) == (tmp_path / "best-unmixed").is_dir()
    assert state["best"] == (mix["val_ndcg@10"] if mix["kept"] else epoch_best)
    # found again (another collection evaluated with it), the mixes are not validated again
    import irglow.models.glow.train as train_module

    def no_validation(*args, **kwargs):
        raise AssertionError("a finished training's mixes were validated again")

    monkeypatch.setattr(train_module, "choose_mix", no_validation)
    assert GlowTrainer(cfg, tmp_path).train(demo_index, stats, docs, queries, qrels) == best
    assert json.loads((tmp_path / "training.json").read_text())["state"]["mixes"] == state["mixes"]
    # every weight of the encoder has its counterpart in the checkpoint, so the mix moves all of them
    model = GlowEncoder.load(best)
    trained = {n: p.detach().clone() for n, p in model.named_parameters()}
    assert mix_weights(model, starting_weights(cfg.model), trained, 0.5) == len(trained)


def test_distillation_loss_by_hand():
    """KL(target ‖ model) over each query's batch at cos / τ.  τ = 1, one query, two documents: the target [ln 3, 0]
    is the distribution (3/4, 1/4), the model's equal cosines (1/2, 1/2): 3/4·ln(3/2) + 1/4·ln(1/2) = 0.130812."""
    import math

    from irglow.models.glow.train import distillation_loss

    target = torch.tensor([[math.log(3.0), 0.0]])
    assert float(distillation_loss(torch.zeros(1, 2), target, 1.0)) == pytest.approx(0.130812, abs=1e-6)
    assert float(distillation_loss(target, target, 1.0)) == pytest.approx(0.0, abs=1e-7)
    # averaged over queries: a second query already matching its target halves the loss
    both = torch.tensor([[0.0, 0.0], [1.0, 1.0]])
    assert float(distillation_loss(both, torch.tensor([[math.log(3.0), 0.0], [2.0, 2.0]]), 1.0)) == \
        pytest.approx(0.130812 / 2, abs=1e-6)


def test_frozen_lower_layers_and_distillation_keep_the_checkpoint(demo_index, tmp_path, monkeypatch):
    """``freeze_layers = 1`` on a 2-layer model: after training, the word and position embeddings and layer 0 are
    the checkpoint's, bit for bit, while layer 1 and the field embeddings moved; ``distill`` trains with the
    checkpoint's similarities as a second target (its loss is the contrastive one plus a KL ≥ 0)."""
    demo = DemoCollection()
    stats = CollectionStats.load(demo_index)
    docs = {d.doc_id: d for d in demo.docs_iter()}
    queries, qrels = demo.queries("train")[:16], demo.qrels("train")
    model_cfg = {"variant": "glow", "num_layers": 2, "fields": ["title", "body"], "field_max_tokens": {"body": 16}}
    base = {"batch_size": 4, "epochs": 1, "max_steps": 2, "lr": 5e-4, "val_max_docs": 10, "val_pool_depth": 5,
            "model": model_cfg}
    cfg = GlowTrainConfig.from_dict({**base, "freeze_layers": 1, "distill": 1.0})
    import irglow.models.glow.train as train_module

    seen, real = [], train_module.distillation_loss

    def spied(cos, target, temperature):
        seen.append((cos.requires_grad, target.requires_grad, tuple(cos.shape) == tuple(target.shape)))
        return real(cos, target, temperature)

    monkeypatch.setattr(train_module, "distillation_loss", spied)
    best = GlowTrainer(cfg, tmp_path / "frozen").train(demo_index, stats, docs, queries, qrels)
    # every step: the model's cosines (trained) against the checkpoint's (a fixed target) over the same batch
    assert seen == [(True, False, True)] * 2
    state = json.loads((tmp_path / "frozen" / "training.json").read_text())["state"]
    assert state["step"] == 2 and state["history"][-1]["loss"] > 0
    from irglow.models.checkpoints import seed_everything

    seed_everything(13)  # as the trainer does before it builds the model (the grown field embedding's init)
    start = GlowEncoder.from_pretrained_bert(GlowTrainConfig.from_dict(base).model).state_dict()
    trained = load_trainer_checkpoint(tmp_path / "frozen" / "checkpoint" / "trainer.pt")["model"]  # after step 2
    kept = [n for n in start if n.startswith(("bert.embeddings.word_embeddings", "bert.embeddings.position_embeddings",
                                              "bert.encoder.layer.0."))]
    moved = [n for n in start if n.startswith("bert.encoder.layer.1.") and n.endswith("weight")]
    assert kept and moved
    assert all(torch.equal(start[n], trained[n]) for n in kept)
    assert all(not torch.equal(start[n], trained[n]) for n in moved)
    assert not torch.equal(start["bert.embeddings.token_type_embeddings.weight"],
                           trained["bert.embeddings.token_type_embeddings.weight"])
    assert best.is_dir()
    with pytest.raises(ValueError, match="freeze_layers = 3: the model has only 2 layers"):
        GlowTrainer(GlowTrainConfig.from_dict({**base, "freeze_layers": 3}), tmp_path / "x").train(
            demo_index, stats, docs, queries, qrels)
    with pytest.raises(ValueError, match="glow.distill"):
        GlowTrainConfig.from_dict({**base, "distill": -1.0})


def test_a_low_rank_update_moves_each_projection_by_at_most_its_rank(demo_index, tmp_path, monkeypatch):
    """``low_rank = 2``: the saved model is a plain GLOW directory (the adapters merged), its embeddings are the
    checkpoint's bit for bit, and every projection moved by a matrix of rank ≤ 2; the field embeddings trained."""
    from irglow.models.checkpoints import seed_everything

    demo = DemoCollection()
    stats = CollectionStats.load(demo_index)
    docs = {d.doc_id: d for d in demo.docs_iter()}
    model_cfg = {"variant": "glow", "num_layers": 2, "fields": ["title", "body"], "field_max_tokens": {"body": 16}}
    base = {"batch_size": 4, "epochs": 1, "max_steps": 2, "lr": 5e-4, "val_max_docs": 10, "val_pool_depth": 5,
            "model": model_cfg}
    cfg = GlowTrainConfig.from_dict({**base, "low_rank": 2, "low_rank_lr": 1e-2, "val_fraction": 0.5})
    out = tmp_path / "lora"
    import irglow.models.glow.train as train_module

    # validation that rises with every step: the model kept is the last one, saved by the trainer (merged)
    monkeypatch.setattr(train_module._GlowTask, "scores", lambda self: (float(self.state.get("step", 0)), {}))
    GlowTrainer(cfg, out).train(demo_index, stats, docs, demo.queries("train")[:16], demo.qrels("train"))
    seed_everything(13)  # as the trainer does before it builds the model (the grown field embedding's init)
    start = GlowEncoder.from_pretrained_bert(GlowTrainConfig.from_dict(base).model).state_dict()
    adapters = load_trainer_checkpoint(out / "checkpoint" / "trainer.pt")["model"]  # resumable: A and B kept
    assert any(n.endswith(".down") for n in adapters) and any(n.endswith(".up") for n in adapters)
    from irglow.models.glow.train import merge_low_rank

    model = GlowEncoder.from_pretrained_bert(GlowTrainConfig.from_dict(base).model)
    from irglow.models.glow.train import low_rank_update

    assert low_rank_update(model, 2, cfg.low_rank_scale) == 2 * 6  # q, k, v, attention out, intermediate, out
    model.load_state_dict(adapters)
    trained = merge_low_rank(model).state_dict()
    assert trained.keys() == start.keys()  # a plain model: nothing of the adapters left
    projections = [n for n in start if n.startswith("bert.encoder.layer.") and n.endswith(".weight")
                   and start[n].dim() == 2]
    assert len(projections) == 12
    for n in projections:
        rank = int(torch.linalg.matrix_rank((trained[n] - start[n]).double(), atol=1e-6))
        assert 1 <= rank <= 2, (n, rank)
    for n in start:
        if n.startswith(("bert.embeddings.word", "bert.embeddings.position", "bert.embeddings.LayerNorm")) or \
                (n.startswith("bert.encoder") and not n.endswith(".weight")) or "LayerNorm" in n:
            assert torch.equal(start[n], trained[n]), n  # frozen: biases and layer norms included
    assert not torch.equal(start["bert.embeddings.token_type_embeddings.weight"],
                           trained["bert.embeddings.token_type_embeddings.weight"])
    state = json.loads((out / "training.json").read_text())["state"]
    kept = GlowEncoder.load(out / "best").state_dict()  # loads as any GLOW model: the merged weights it was saved with
    assert state["best_step"] == state["step"] == 2
    assert kept.keys() == start.keys() and all(torch.allclose(kept[n], trained[n]) for n in kept)
    with pytest.raises(ValueError, match="does not combine with freeze_layers"):
        GlowTrainConfig.from_dict({**base, "low_rank": 2, "freeze_layers": 1})


def test_search_time_token_budgets(trained, demo_index):
    """``irglow glow search --field-tokens body=40``: a model trained at 16 body tokens encodes 40 of a long body
    (its field id on each), other fields keep theirs; budgets past the position embeddings are refused."""
    from irglow.commands.glow import parse_field_tokens

    best, out, cfg, stats, docs = trained
    body = cfg.model.fields.index("body")
    long_doc = max(docs.values(), key=lambda d: len(" ".join(d.fields.get("body", ()))))

    def body_tokens(model):  # the body's word pieces and its [SEP]
        types = featurizer_for(model, demo_index, stats).documents([long_doc])["token_type_ids"][0]
        return int((types == body).sum())

    model = GlowEncoder.load(best)
    assert body_tokens(model) == 16 + 1
    assert parse_field_tokens(["body=40", "*=8"]) == {"body": 40, "*": 8}
    model.with_token_budgets({"body": 40})
    assert body_tokens(model) == 40 + 1 and model.config.default_field_tokens == cfg.model.default_field_tokens
    with pytest.raises(ValueError, match="this model takes 1 to 512"):
        model.with_token_budgets({"body": 600})
    with pytest.raises(ValueError, match="'body': expected FIELD=N"):
        parse_field_tokens(["body"])


def test_the_stage_searches_with_the_configured_faiss_index(tmp_path, monkeypatch):
    """``[glow] faiss``: the corpus encoding is searched with that index kind (HNSW here), and a kind faiss irglow
    does not build is refused when the configuration is bound."""
    import irglow.models.glow.runner as runner
    from irglow.data.collection import load_collection
    from irglow.index.lucene_index import IndexConfig, build_index
    from irglow.lexical.stage import LexicalSettings
    from irglow.models.glow.stage import GlowStage
    from irglow.models.source import TrainSource
    from irglow.stage import Context

    kinds = []
    built = runner.faiss_index
    monkeypatch.setattr(runner, "faiss_index", lambda vectors, kind="flat": kinds.append(kind) or built(vectors, kind))
    coll = load_collection("demo:n_topics=12,docs_per_topic=4,n_roundups=10,n_background=10")
    index = build_index(coll, IndexConfig(threads=1), root=tmp_path / "data")
    config = {"glow": {"enabled": True, "variants": ["bert"], "batch_size": 4, "max_steps": 1, "val_max_docs": 0,
                       "val_pool_depth": 5, "faiss": "hnsw", "model": {"num_layers": 1, "field_max_tokens": {"body": 8}}}}
    stage = GlowStage()
    with pytest.raises(ValueError, match="glow.faiss = 'ann' must be one of 'flat', 'hnsw', 'ivf', 'ivfpq'"):
        stage.settings_class.from_config({"glow": {**config["glow"], "faiss": "ann"}})
    stats = CollectionStats.load(index)
    ctx = Context(coll, index, stats, TrainSource(coll, index, stats, "train"), tmp_path, tmp_path,
                  LexicalSettings(systems=["bm25"], depth=20), {}, "test", settings=stage.settings_class.from_config(config))
    run = stage.run(ctx, "bert").runs["bert"]
    assert kinds == ["hnsw"] and set(run.ranking) == {q.query_id for q in coll.queries("test")}
