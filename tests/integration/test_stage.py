"""The stage interface (irglow.stage): what a stage's cache key covers."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.integration.pipelines import beir_from_demo, nrmf_pipeline


def _results(out) -> str:
    return (out / "results.csv").read_text()


@pytest.fixture(scope="module")
def coll(tmp_path_factory):
    folder = tmp_path_factory.mktemp("c") / "c"
    beir_from_demo(folder)
    return folder


def test_a_model_replaced_at_the_same_path_is_not_reused(coll, tmp_path, monkeypatch):
    """30.1: ``model_dir = "M"``, the weights in M replaced between two runs: the stage used to be 'reused'."""
    from tests.integration.pipelines import model_folder
    from irglow.pipeline import run_pipeline

    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data"
    for seed in (1, 2):  # two differently trained NRM-F models
        config = nrmf_pipeline(coll, tmp_path / f"train{seed}", data)
        config["rerank"]["nrmf"]["seed"] = seed
        run_pipeline(config)
    trained = {s: model_folder(tmp_path / f"train{s}", "nrmf") / "best" for s in (1, 2)}
    # 30.3: the table notes say how many queries trained and validated, and how many steps were taken
    notes = (tmp_path / "train1" / "results.md").read_text()
    assert "| model | training queries | validation queries | optimizer steps |" in notes
    assert "| nrmf | 8 | 0 | 2 | – | – |" in notes
    shutil.copytree(trained[1], tmp_path / "M" / "nrmf" / "best")
    out = tmp_path / "out"
    run_pipeline(nrmf_pipeline(coll, out, data, model_dir="M"))
    first = _results(out)
    shutil.rmtree(tmp_path / "M" / "nrmf" / "best")
    shutil.copytree(trained[2], tmp_path / "M" / "nrmf" / "best")
    run_pipeline(nrmf_pipeline(coll, out, data, model_dir="M"))
    stages = json.loads((out / "manifest.json").read_text())["stages"]
    assert stages["rerank:nrmf"] == "ran" and stages["lexical:bm25"] == "reused"
    run_pipeline(nrmf_pipeline(coll, tmp_path / "fresh", data, model_dir="M"))
    assert _results(out) == _results(tmp_path / "fresh") != first
