"""`[fusion]` in a whole pipeline: TW-BERT, GLOW and NRM-F each write the runs of the queries their training
held out, the hybrids are tuned on the queries all of them held out (training queries, never the test split),
and a second run reuses every stage, the fusion included."""

from __future__ import annotations

import pytest

import json

from tests.integration.pipelines import SMALL_DEMO, small_pipeline


def _config(out, data) -> dict:
    return small_pipeline(
        out, data,
        twbert={"enabled": True, "rm3": False, "epochs": 1, "candidates": 10, "eval_every": 0},
        glow={"enabled": True, "variants": ["glow"], "max_steps": 2, "batch_size": 4,
              "val_max_docs": 0, "val_pool_depth": 5, "model": {"num_layers": 1, "field_max_tokens": {"body": 8}}},
        rerank={"enabled": True, "models": ["nrmf"], "depth": 10,
                "nrmf": {"epochs": 1, "val_depth": 10, "negatives": 2, "batch_queries": 4}},
        fusion={"enabled": True, "runs": [["twbert", "glow"], ["bm25f", "glow", "nrmf"]]})


@pytest.mark.slow
def test_hybrids_tune_on_what_every_fused_model_held_out(tmp_path, monkeypatch):
    from irglow.data.collection import load_collection
    from irglow.models.checkpoints import read_training
    from irglow.outputs import read_results
    from irglow.pipeline import run_pipeline
    from irglow.runs.trec import Run

    monkeypatch.chdir(tmp_path)
    out = run_pipeline(_config(tmp_path / "out", tmp_path / "data")).out
    coll = load_collection(SMALL_DEMO)
    test_ids = {q.query_id for q in coll.queries("test")}
    train_ids = {q.query_id for q in coll.queries("train")}
    results = read_results(out)
    models = {**results["twbert"].models, **results["glow"].models, "nrmf": results["rerank:nrmf"].model}
    held_out = {name: set(read_training(d)["val_query_ids"]) for name, d in models.items()}
    assert set(held_out) == {"twbert", "glow", "nrmf"}
    # one split for every trainer (a hash of seed and query id): each demo training query has an indexed
    # relevant document, so all three may use the same queries and hold out the same ones
    assert held_out["twbert"] == held_out["glow"] == held_out["nrmf"]
    for tag in ("twbert", "glow", "nrmf"):
        tuning = set(Run.read(out / "tuning" / f"{tag}.run").ranking)
        assert tuning == held_out[tag] and tuning <= train_ids and not tuning & test_ids
    assert not (out / "tuning" / "bm25f.run").exists()  # lexical tuning runs are searched, not kept
    fusion = {t: results[f"fusion:{t}"] for t in ("twbert+glow", "bm25f+glow+nrmf")}
    assert fusion["twbert+glow"].tuning_queries == len(held_out["twbert"] & held_out["glow"]) > 0
    assert fusion["bm25f+glow+nrmf"].tuning_queries == len(held_out["glow"] & held_out["nrmf"])
    assert len(fusion["bm25f+glow+nrmf"].weights) == 3
    for tag in ("twbert+glow", "bm25f+glow+nrmf"):
        assert set(Run.read(out / f"{tag}.run").ranking) == test_ids
    table = (out / "results.md").read_text()
    assert "| twbert+glow " in table and "tuning" not in table.split("Field weights")[0]

    run_pipeline(_config(tmp_path / "out", tmp_path / "data"))
    stages = json.loads((out / "manifest.json").read_text())["stages"]
    assert set(stages.values()) == {"reused"} and "fusion:twbert+glow" in stages

    # a fusion that no longer names nrmf: the re-ranker's held-out run is not wanted, so that stage runs again;
    # TW-BERT and GLOW, whose held-out runs are still wanted, are reused, and so is the unchanged hybrid
    config = _config(tmp_path / "out", tmp_path / "data")
    config["fusion"]["runs"] = [["twbert", "glow"], ["bm25f", "glow"]]
    run_pipeline(config)
    stages = json.loads((out / "manifest.json").read_text())["stages"]
    assert (stages["twbert"], stages["glow"], stages["rerank:nrmf"]) == ("reused", "reused", "ran")
    assert (stages["fusion:twbert+glow"], stages["fusion:bm25f+glow"]) == ("reused", "ran")
    assert "- bm25f+glow+nrmf:" not in (out / "results.md").read_text()  # a hybrid no longer configured


def test_a_lexical_only_hybrid_is_tuned_on_the_training_queries(tmp_path):
    """Issue 50: bm25+bm25f fell back to RRF with an empty reason ("no held-out runs of "): lexical runs learn
    nothing from the training queries, so every judged training query tunes the weights (never the test split)."""
    from irglow.pipeline import run_pipeline

    config = small_pipeline(tmp_path / "out", tmp_path / "data", systems=("bm25", "bm25f", "tfidf"),
                            fusion={"enabled": True, "runs": ["bm25+tfidf"]})
    run_pipeline(config)
    notes = (tmp_path / "out" / "results.md").read_text()
    line = next(l for l in notes.splitlines() if l.startswith("- bm25+tfidf:"))
    assert "wsum fusion" in line and "training queries, nDCG@10" in line and "held-out" not in line, line
