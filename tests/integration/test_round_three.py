"""Issue 30, "no silent wrong answers, round three": each numbered reproduction as a test.  A small BEIR folder
built from the demo generator (as a new user's collection would be), NRM-F as the fast trained model."""

from __future__ import annotations

import json
import logging
import shutil

import pytest

from irglow.cli import main
from tests.integration.test_stale_inputs import _beir_from_demo

NRMF = {"epochs": 1, "val_depth": 10, "negatives": 2, "batch_queries": 4,
        "model": {"embedding_dim": 8, "filters": 8, "dim": 8, "hidden": 8, "hash_buckets": 1000}}


def _config(folder, out, data, **rerank) -> dict:
    return {"seed": 13, "data_dir": str(data),
            "collection": {"name": str(folder), "train_split": "train", "test_split": "test"},
            "index": {"threads": 1}, "lexical": {"systems": ["bm25"], "depth": 30},
            "eval": {"measures": ["nDCG@10", "AP"], "baseline": "bm25"}, "output": {"dir": str(out)},
            "rerank": {"enabled": True, "models": ["nrmf"], "depth": 10, "nrmf": dict(NRMF), **rerank}}


@pytest.fixture(scope="module")
def coll(tmp_path_factory):
    folder = tmp_path_factory.mktemp("c") / "c"
    _beir_from_demo(folder)
    return folder


def _results(out) -> str:
    return (out / "results.csv").read_text()


def test_a_model_replaced_at_the_same_path_is_not_reused(coll, tmp_path, monkeypatch):
    """30.1: ``model_dir = "M"``, the weights in M replaced between two runs: the stage used to be 'reused'."""
    from irglow.models.source import current_train_dir
    from irglow.pipeline import run_pipeline

    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data"
    for seed in (1, 2):  # two differently trained NRM-F models
        config = _config(coll, tmp_path / f"train{seed}", data)
        config["rerank"]["nrmf"]["seed"] = seed
        run_pipeline(config)
    trained = {s: current_train_dir(tmp_path / f"train{s}" / "nrmf-train") / "best" for s in (1, 2)}
    # 30.3: the table notes say how many queries trained and validated, and how many steps were taken
    notes = (tmp_path / "train1" / "results.md").read_text()
    assert "| model | training queries | validation queries | optimizer steps |" in notes
    assert "| nrmf | 8 | 0 | 2 | – | – |" in notes
    shutil.copytree(trained[1], tmp_path / "M" / "nrmf" / "best")
    out = tmp_path / "out"
    run_pipeline(_config(coll, out, data, model_dir="M"))
    first = _results(out)
    shutil.rmtree(tmp_path / "M" / "nrmf" / "best")
    shutil.copytree(trained[2], tmp_path / "M" / "nrmf" / "best")
    run_pipeline(_config(coll, out, data, model_dir="M"))
    stages = json.loads((out / "manifest.json").read_text())["stages"]
    assert stages["rerank:nrmf"] == "ran" and stages["lexical:bm25"] == "reused"
    run_pipeline(_config(coll, tmp_path / "fresh", data, model_dir="M"))
    assert _results(out) == _results(tmp_path / "fresh") != first


def _write_small_config(tmp_path):
    (tmp_path / "r.toml").write_text("[nrmf]\nepochs = 1\nval_depth = 10\nnegatives = 2\nbatch_queries = 4\n"
                                     "[nrmf.model]\nembedding_dim = 8\nfilters = 8\ndim = 8\nhidden = 8\n"
                                     "hash_buckets = 1000\n")
    return str(tmp_path / "r.toml")


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


def test_fit_batch_by_hand():
    from irglow.models.checkpoints import fit_batch

    assert fit_batch(16, 40, "t") == 16
    assert fit_batch(16, 11, "t") == 11
    assert fit_batch(16, 11, "t", per_batch=2) == 5  # two processes (or accumulation steps) share 11 queries
    with pytest.raises(ValueError, match="0 training queries with a relevant document, too few"):
        fit_batch(16, 0, "t")
    with pytest.raises(ValueError, match="1 training queries"):
        fit_batch(16, 1, "t", per_batch=2)


@pytest.mark.parametrize("section, value", [("twbert", "false"), ("glow", "no"), ("rerank", 1), ("fusion", "yes")])
def test_enabled_must_be_a_boolean(tmp_path, section, value):
    """30.4: ``enabled = "false"`` (a non-empty string) turned the stage on."""
    from irglow.pipeline import check_config

    config = _config("demo", tmp_path / "o", tmp_path / "d")
    config[section] = {**config.get(section, {}), "enabled": value}
    with pytest.raises(ValueError, match=f"{section}.enabled = {value!r} must be true or false"):
        check_config(config)


def test_set_enabled_no_is_an_error_naming_the_key(tmp_path, capsys):
    assert main(["run", "--config", "configs/demo.toml", "--set", "twbert.enabled=no",
                 "--set", f"output.dir={tmp_path}"]) == 2
    assert "twbert.enabled = 'no' must be true or false" in capsys.readouterr().err


def _trec(path, rows) -> str:
    path.write_text("".join(f"{q} Q0 {d} {i + 1} {s} t\n" for i, (q, d, s) in enumerate(rows)))
    return str(path)


def test_fuse_refuses_to_overwrite_an_input(tmp_path, capsys):
    """30.5: ``irglow fuse a.run b.run -o a.run`` overwrote its input."""
    a = _trec(tmp_path / "a.run", [("q1", "d1", 2.0), ("q1", "d2", 1.0)])
    b = _trec(tmp_path / "b.run", [("q1", "d2", 2.0), ("q1", "d1", 1.0)])
    before = (tmp_path / "a.run").read_bytes()
    with pytest.raises(SystemExit, match="is one of the inputs; it would be overwritten"):
        main(["fuse", a, b, "-o", a])
    assert (tmp_path / "a.run").read_bytes() == before


def test_fusion_tuned_on_qrels_of_other_queries_is_refused(tmp_path, capsys, caplog):
    """30.6: tuning qrels sharing no query with the tuning runs: 0.0 at every point, 'tuned' weights, exit 0."""
    a = _trec(tmp_path / "a.run", [("q1", "d1", 2.0), ("q1", "d2", 1.0)])
    b = _trec(tmp_path / "b.run", [("q1", "d2", 2.0), ("q1", "d1", 1.0)])
    (tmp_path / "other.qrels").write_text("x9 0 d1 1\nx8 0 d2 1\n")
    args = ["fuse", a, b, "-o", str(tmp_path / "f.run"), "--method", "wsum", "--tune-runs", a, b]
    assert main([*args, "--tune-qrels", str(tmp_path / "other.qrels")]) == 2
    err = capsys.readouterr().err
    assert "share no query with a relevant judgment" in err and "x8, x9" in err and "q1" in err
    assert not (tmp_path / "f.run").exists()
    (tmp_path / "same.qrels").write_text("q1 0 d2 1\n")
    with caplog.at_level(logging.WARNING):
        assert main([*args, "--tune-qrels", str(tmp_path / "same.qrels")]) == 0
    assert "only 1 tuning queries have a relevant judgment" in caplog.text


def test_a_setting_added_since_a_checkpoint_does_not_stop_its_resumption(tmp_path):
    """A checkpoint written before irglow had a setting (so it does not record it) resumes when the setting is at
    its default, and is refused when it is not."""
    from irglow.models.checkpoints import check_resumable, training_inputs
    from irglow.models.rerank.train import RerankTrainConfig

    now = training_inputs(RerankTrainConfig(kind="nrmf"), [], [])
    old = json.loads(json.dumps(now))
    old["settings"].pop("score_batch")  # as if added since
    check_resumable("ckpt", {"inputs": old}, now)
    changed = training_inputs(RerankTrainConfig(kind="nrmf", score_batch=8), [], [])
    with pytest.raises(ValueError, match="settings.score_batch: '\\(absent\\)' → 8"):
        check_resumable("ckpt", {"inputs": old}, changed)


def test_a_reused_twbert_without_held_out_queries_is_refused_before_work(tmp_path, capsys):
    """Issue 37 item 8: ``twbert.model_dir`` with a fusion that tunes twbert's weight failed only after every stage
    ran (tuning runs sharing no query); the cause is known from the settings and said before any work."""
    reused = tmp_path / "M" / "best"
    reused.mkdir(parents=True)
    (tmp_path / "M" / "training.json").write_text('{"val_query_ids": ["not-a-demo-query"]}')
    out = tmp_path / "out"
    assert main(["run", "--config", "configs/demo.toml", "--set", f'twbert.model_dir="{reused}"',
                 "--set", f"output.dir={out}", "--set", f"data_dir={tmp_path / 'data'}"]) == 2
    err = capsys.readouterr().err
    assert "none of its 1 held-out queries is among demo" in err and "nothing to tune on" in err
    assert not (tmp_path / "data").exists()  # no index was built: nothing ran
