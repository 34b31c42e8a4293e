"""Trainer checkpoints (irglow.models.checkpoints) through the CLI: resumption refused on other data or settings, batches that shrink to what the queries fill."""

from __future__ import annotations

import logging
import shutil

import pytest

from irglow.cli import main
from tests.integration.pipelines import beir_from_demo


def _write_small_config(tmp_path):
    (tmp_path / "r.toml").write_text("[nrmf]\nepochs = 1\nval_depth = 10\nnegatives = 2\nbatch_queries = 4\n"
                                     "[nrmf.model]\nembedding_dim = 8\nfilters = 8\ndim = 8\nhidden = 8\n"
                                     "hash_buckets = 1000\n")
    return str(tmp_path / "r.toml")


@pytest.fixture(scope="module")
def coll(tmp_path_factory):
    folder = tmp_path_factory.mktemp("c") / "c"
    beir_from_demo(folder)
    return folder


NRMF = {"epochs": 1, "val_depth": 10, "negatives": 2, "batch_queries": 4,
        "model": {"embedding_dim": 8, "filters": 8, "dim": 8, "hidden": 8, "hash_buckets": 1000}}


def test_training_does_not_resume_on_other_data_or_settings(coll, tmp_path, capsys):
    """30.2: train, cut the training qrels, rerun with another lr: 'resuming …' and a rewritten training.json.
    Now: refused, naming what differs; --no-resume starts afresh."""
    c = tmp_path / "c"
    shutil.copytree(coll, c)
    cfg = _write_small_config(tmp_path)
    args = ["nrmf", "train", str(c), "--out", str(tmp_path / "tw"), "--config", cfg, "--data-dir", str(tmp_path / "d")]
    assert main(args) == 0
    best = (tmp_path / "tw" / "best" / "model.safetensors").read_bytes()
    qrels = c / "qrels" / "train.tsv"
    lines = qrels.read_text().splitlines()
    qrels.write_text("\n".join(lines[:7]) + "\n")  # header + 6 judgments
    capsys.readouterr()
    assert main([*args, "--set", "lr=0.5"]) == 2
    err = capsys.readouterr().err
    assert "was trained on other data or settings, so it is not resumed" in err
    assert "settings.lr: 0.001 → 0.5" in err and "data.qrels:" in err and "--no-resume" in err
    assert (tmp_path / "tw" / "best" / "model.safetensors").read_bytes() == best  # nothing touched
    # the same data and settings resume (nothing left to train); a longer training may resume too
    qrels.write_text("\n".join(lines) + "\n")
    assert main(args) == 0 and main([*args, "--set", "epochs=2"]) == 0
    assert main([*args, "--set", "lr=0.5", "--no-resume"]) == 0


def test_a_trainer_with_fewer_queries_than_its_batch_shrinks_it_and_steps(coll, tmp_path, caplog):
    """30.3: fewer training queries than the batch: 0 optimizer steps, the untouched model kept as best/."""
    from irglow.data.collection import load_collection
    from irglow.index.lucene_index import build_index
    from irglow.models.checkpoints import read_training
    from irglow.models.rerank.train import RerankTrainConfig, RerankTrainer

    c = load_collection(str(coll))
    index = build_index(c, root=tmp_path / "d")
    cfg = RerankTrainConfig.from_dict({**NRMF, "batch_queries": 64, "kind": "nrmf"})
    with caplog.at_level(logging.WARNING):
        best = RerankTrainer(cfg, tmp_path / "t").train(index, {d.doc_id: d for d in c.docs_iter()},
                                                         c.queries("train"), c.qrels("train"))
    info = read_training(best)
    assert info["state"]["step"] >= 1 and info["state"]["batch_queries"] == info["train_queries"] < 64
    assert f"cannot fill one batch of 64; the batch_queries is {info['train_queries']}" in caplog.text
