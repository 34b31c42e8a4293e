import logging

import pytest
import torch

from irglow.data.demo import DemoCollection
from irglow.index.stats import CollectionStats
from irglow.models.glow.explain import top_attended_words
from irglow.models.glow.model import GlowEncoder
from irglow.models.glow.runner import featurizer_for, glow_run
from irglow.models.glow.train import GlowTrainConfig, GlowTrainer


@pytest.fixture(scope="module")
def trained(demo_index, tmp_path_factory):
    demo = DemoCollection()
    stats = CollectionStats.load(demo_index)
    docs = {d.doc_id: d for d in demo.docs_iter()}
    out = tmp_path_factory.mktemp("glow")
    cfg = GlowTrainConfig.from_dict({"batch_size": 4, "epochs": 1, "max_steps": 2, "val_max_docs": 10,
                                     "model": {"variant": "glow", "num_layers": 2, "fields": ["title", "url", "body", "anchor"],
                                               "field_max_tokens": {"body": 16}}})
    best = GlowTrainer(cfg, out).train(demo_index, stats, docs, demo.queries("train")[:40], demo.qrels("train"))
    return best, out, cfg, stats, docs


def test_training_writes_model_dir_and_resumes(trained, demo_index, caplog):
    best, out, cfg, stats, docs = trained
    assert (best / "glow.json").is_file() and (out / "checkpoint" / "trainer.pt").is_file()
    saved = torch.load(out / "checkpoint" / "trainer.pt", weights_only=False)["state"]
    assert saved["epoch"] == 1 and saved["step"] == 2
    model = GlowEncoder.load(best)
    assert model.config.variant == "glow" and model.config.weights["avg_query_len"] > 0
    cfg.epochs, cfg.max_steps = 2, 3
    demo = DemoCollection()
    with caplog.at_level(logging.WARNING):
        GlowTrainer(cfg, out).train(demo_index, stats, docs, demo.queries("train")[:40], demo.qrels("train"))
    assert "resuming GLOW training" in caplog.text
    assert torch.load(out / "checkpoint" / "trainer.pt", weights_only=False)["state"]["step"] == 3


def test_search_writes_embeddings_and_run(trained, demo_index, tmp_path):
    best, _, _, stats, docs = trained
    model = GlowEncoder.load(best)
    some = list(docs.values())[:50]
    queries = DemoCollection().queries("test")[:3]
    run, info = glow_run(model, demo_index, stats, some, queries, tmp_path, "glow", depth=10)
    assert (tmp_path / "glow.embeddings" / "embeddings.npy").is_file()
    assert all(len(v) == 10 for v in run.ranking.values()) and info["docs_per_s"] > 0
    words = top_attended_words(model, featurizer_for(model, demo_index, stats), docs["t000d00"], top=3)
    assert set(words) == {"title", "url", "body", "anchor"} and len(words["title"]) == 3
    assert all(p > 0 for w, p in words["title"])
