"""Checkpoints chosen on more than the training collection (irglow.models.validation, [validation] also)."""

from __future__ import annotations

import json
import math

import pytest

from tests.integration.pipelines import SMALL_DEMO, small_pipeline


def _glow(**extra):
    return {"enabled": True, "variants": ["glow"], "max_steps": 2, "batch_size": 4, "val_max_docs": 0,
            "val_pool_depth": 5, "model": {"num_layers": 1, "field_max_tokens": {"body": 8}}, **extra}


OTHER = "demo:n_topics=8,docs_per_topic=4,n_roundups=6,n_background=8,seed=7"


@pytest.mark.slow
def test_checkpoints_are_chosen_on_every_source_and_the_curves_keep_each(tmp_path, monkeypatch):
    """GLOW and NRM-F validate on their held-out training queries and on 3 judged queries of another collection
    (its own index); the kept score is the mean of the two, each source's curve is in training.json, and the
    models' keys change with the other source (a new folder), not the runs of stages that do not validate."""
    from irglow.models.checkpoints import read_training
    from irglow.outputs import read_results
    from irglow.pipeline import run_pipeline

    def models(out):
        results = read_results(out)
        return {"glow": results["glow"].models["glow"], "nrmf": results["rerank:nrmf"].model}

    monkeypatch.chdir(tmp_path)
    config = small_pipeline(
        tmp_path / "out", tmp_path / "data", systems=("bm25",), depth=30, glow=_glow(),
        rerank={"enabled": True, "models": ["nrmf"], "depth": 10,
                "nrmf": {"epochs": 1, "val_depth": 10, "negatives": 2, "batch_queries": 4}},
        validation={"also": [f"{OTHER}@test"], "queries": 3})
    run_pipeline(config)
    first = models(tmp_path / "out")
    label = next(iter(read_training(first["glow"])["also_validated_on"]))
    assert label.endswith("@test") and label.startswith("demo")
    for model_dir in first.values():
        info = read_training(model_dir)
        assert info["also_validated_on"] == {label: 3}
        for point in info["state"]["history"]:
            by = point["val_by_source"]
            assert set(by) == {"own", label}
            assert point["val_ndcg@10"] == pytest.approx((by["own"] + by[label]) / 2)
        assert info["state"]["best"] == pytest.approx(max(p["val_ndcg@10"] for p in info["state"]["history"]))
    config["validation"]["queries"] = 4
    run_pipeline(config)
    stages = json.loads((tmp_path / "out" / "manifest.json").read_text())["stages"]
    assert stages["lexical:bm25"] == "reused" and stages["glow"] == "ran" and stages["rerank:nrmf"] == "ran"
    again = models(tmp_path / "out")
    assert again["glow"] != first["glow"] and again["nrmf"] != first["nrmf"]
    config["validation"]["stages"] = ["glow"]  # the re-ranker back to in-domain validation only
    run_pipeline(config)
    stages = json.loads((tmp_path / "out" / "manifest.json").read_text())["stages"]
    assert stages["glow"] == "reused" and stages["rerank:nrmf"] == "ran"
    rerank = models(tmp_path / "out")["nrmf"]
    assert read_training(rerank)["also_validated_on"] == {}
    assert all("val_by_source" not in p for p in read_training(rerank)["state"]["history"])


@pytest.mark.parametrize("section, message", [
    ({"also": [f"{SMALL_DEMO}@test"], "queries": 0}, "validation.queries = 0 must be an integer >= 1"),
    ({"also": [f"{SMALL_DEMO}@test"], "stages": ["twbert"]}, r"validation.stages: \['twbert'\] cannot choose"),
    ({"alsoo": []}, r"unknown \[validation\] setting"),
    ({"also": 3}, r"validation.also = 3 must be a list of names")])
def test_a_wrong_validation_setting_is_named(tmp_path, section, message):
    from irglow.plan import check_config

    with pytest.raises(ValueError, match=message):
        check_config(small_pipeline(tmp_path / "o", tmp_path / "d", validation=section))


def test_a_source_split_that_does_not_exist_is_named(tmp_path, monkeypatch):
    from irglow.preparation import prepare

    monkeypatch.chdir(tmp_path)
    with pytest.raises(KeyError, match=r"has splits \['train', 'test'\], not 'nosuchsplit'"):
        prepare(small_pipeline(tmp_path / "o", tmp_path / "d", validation={"also": [f"{SMALL_DEMO}@nosuchsplit"]}))


def test_selection_is_the_mean_over_sources():
    from irglow.models.validation import selection_score

    assert selection_score(0.5, {}) == 0.5
    assert selection_score(0.5, {"b": 0.25}) == 0.375
    assert selection_score(0.6, {"b": 0.2, "c": 0.1}) == pytest.approx(0.3)
    assert selection_score(float("nan"), {"b": 0.25}) == 0.25
    assert math.isnan(selection_score(float("nan"), {}))
