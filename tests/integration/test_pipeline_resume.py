"""A pipeline killed mid-way and started again skips what it finished and ends with run files
byte-identical to an uninterrupted run; a changed setting re-runs only the stage it belongs to."""

from __future__ import annotations

import copy
import json

import pytest

from irglow.models.source import current_train_dir
from tests.integration.pipelines import small_pipeline


def _config(out, data) -> dict:
    return small_pipeline(out, data, rerank={"enabled": True, "models": ["nrmf"], "depth": 10,
                                             "nrmf": {"epochs": 2, "val_depth": 10, "negatives": 2,
                                                      "batch_queries": 4}})


def _runs(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.run"))}


def test_killed_pipeline_resumes_to_byte_identical_runs(tmp_path, monkeypatch):
    import irglow.lexical.searchers as searchers
    import irglow.models.rerank.rerank as rerank_stage
    from irglow.pipeline import run_pipeline

    monkeypatch.chdir(tmp_path)  # the pipeline writes qrels/ under the working directory
    data = tmp_path / "data"
    whole = run_pipeline(_config(tmp_path / "whole", data)).out
    assert set(_runs(whole)) == {"bm25.run", "bm25f.run", "nrmf.run"}

    real_rerank = rerank_stage.rerank

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(rerank_stage, "rerank", killed)
    out = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        run_pipeline(_config(out, data))
    assert set(_runs(out)) == {"bm25.run", "bm25f.run"}  # the lexical stages finished before the kill

    monkeypatch.setattr(rerank_stage, "rerank", real_rerank)

    class NoSearch:  # the restart must not search again
        def __init__(self, *args, **kwargs):
            raise AssertionError("a finished lexical stage ran again")

    monkeypatch.setattr(searchers, "LexicalSearcher", NoSearch)
    run_pipeline(_config(out, data))
    assert _runs(out) == _runs(whole)
    stages = json.loads((out / "manifest.json").read_text())["stages"]
    assert stages == {"lexical:bm25": "reused", "lexical:bm25f": "reused", "rerank:nrmf": "ran"}

    changed = _config(out, data)
    changed["rerank"]["depth"] = 5
    run_pipeline(changed)
    stages = json.loads((out / "manifest.json").read_text())["stages"]
    assert stages == {"lexical:bm25": "reused", "lexical:bm25f": "reused", "rerank:nrmf": "ran"}
    assert _runs(out)["bm25.run"] == _runs(whole)["bm25.run"] and _runs(out)["nrmf.run"] != _runs(whole)["nrmf.run"]

    again = copy.deepcopy(changed)
    run_pipeline(again)
    assert json.loads((out / "manifest.json").read_text())["stages"]["rerank:nrmf"] == "reused"


def test_models_can_train_on_another_collection(tmp_path, monkeypatch):
    """collection.train: the evaluated collection's training split is never read; the trainer's recorded
    inputs name the other collection's index (what `make bench-twbert TRAIN=a TEST=b` relies on)."""
    from irglow.pipeline import run_pipeline

    monkeypatch.chdir(tmp_path)
    config = _config(tmp_path / "zs", tmp_path / "data")
    config["collection"]["train"] = "demo:n_topics=14,docs_per_topic=4,n_roundups=10,n_background=10"
    config["rerank"]["nrmf"]["epochs"] = 1
    out = run_pipeline(config).out
    inputs = json.loads((current_train_dir(out / "nrmf-train") / "inputs.json").read_text())["inputs"]["source"]
    assert inputs["index"].startswith("demo-s13-t14-") and (out / "nrmf.run").is_file()


def test_models_can_train_on_several_collections_at_once(tmp_path, monkeypatch):
    """collection.train = ["a@train", "b@train"]: every trainer gets one union of the sources (ids prefixed by
    source), so its batches and held-out queries come from both; the evaluated collection is another one."""
    from irglow.data.collection import load_collection
    from irglow.models.checkpoints import read_training
    from irglow.pipeline import run_pipeline

    monkeypatch.chdir(tmp_path)
    a = "demo:n_topics=14,docs_per_topic=4,n_roundups=10,n_background=10"
    b = "demo:seed=7,n_topics=10,docs_per_topic=4,n_roundups=10,n_background=10"
    config = _config(tmp_path / "multi", tmp_path / "data")
    config["collection"]["train"] = [f"{a}@train", f"{b}@train"]
    config["rerank"]["nrmf"].update(epochs=1, val_fraction=0.3)
    config["twbert"] = {"enabled": True, "rm3": False, "epochs": 1, "candidates": 10, "eval_every": 0,
                        "val_fraction": 0.3}
    out = run_pipeline(config).out
    judged = {f"{k}/{r.query_id}" for k, spec in enumerate((a, b)) for r in load_collection(spec).qrels("train")
              if r.relevance > 0}
    for model in ("nrmf", "twbert"):
        keyed = current_train_dir(out / f"{model}-train")
        assert json.loads((keyed / "inputs.json").read_text())["inputs"]["source"]["index"].startswith("union-")
        info = read_training(keyed / "best")
        held_out = set(info["val_query_ids"])
        assert held_out <= judged and {q.split("/")[0] for q in held_out} == {"0", "1"}
        assert info["train_queries"] + info["val_queries"] == len(judged)
    assert {p.stem for p in out.glob("*.run")} == {"bm25", "bm25f", "nrmf", "bm25-ngram", "twbert"}
