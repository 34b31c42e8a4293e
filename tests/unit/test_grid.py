"""Grids of settings (irglow.grid), named settings, stage variants and training folders keyed on inputs."""

from __future__ import annotations

import json

import pytest

from irglow.grid import grid_points, point_labels, split_values, trained_sections


def test_values_split_on_top_level_commas_only():
    assert split_values("0.25,0.5,1") == ["0.25", "0.5", "1"]
    assert split_values('["bert","glow"],["glow"]') == ['["bert","glow"]', '["glow"]']
    assert split_values("'a,b',c") == ["'a,b'", "c"]
    assert split_values("x,,y,") == ["x", "y"]


def test_grid_points_are_the_product_in_grid_order():
    points = grid_points(["glow.loss=contrastive,bce", "glow.model.weight_alpha=0.25,1"])
    assert points == [["glow.loss=contrastive", "glow.model.weight_alpha=0.25"],
                      ["glow.loss=contrastive", "glow.model.weight_alpha=1"],
                      ["glow.loss=bce", "glow.model.weight_alpha=0.25"],
                      ["glow.loss=bce", "glow.model.weight_alpha=1"]]
    assert point_labels(["glow.loss=contrastive,bce", "glow.model.weight_alpha=0.25,1"]) == [
        "loss=contrastive,weight_alpha=0.25", "loss=contrastive,weight_alpha=1",
        "loss=bce,weight_alpha=0.25", "loss=bce,weight_alpha=1"]


def test_a_key_given_twice_is_one_axis_of_its_values():
    """Issue 59.16: --grid k1=0.9 --grid k1=1.2 was one point labelled k1=0.9,k1=1.2 (k1 set twice)."""
    grid = ["lexical.k1=0.9", "lexical.b=0.4,0.75", "lexical.k1=1.2,0.9"]
    assert grid_points(grid) == [["lexical.k1=0.9", "lexical.b=0.4"], ["lexical.k1=0.9", "lexical.b=0.75"],
                                 ["lexical.k1=1.2", "lexical.b=0.4"], ["lexical.k1=1.2", "lexical.b=0.75"]]
    assert point_labels(grid) == ["k1=0.9,b=0.4", "k1=0.9,b=0.75", "k1=1.2,b=0.4", "k1=1.2,b=0.75"]


def test_presets_expand_to_their_settings_and_all_means_every_one():
    presets = {"paper": {"twbert.loss": "amse", "twbert.model.head": "relu"}, "default": {},
               "frozen": {"twbert.freeze_encoder": True}}
    assert grid_points(["preset=paper,default"], presets) == [["twbert.loss='amse'", "twbert.model.head='relu'"], []]
    assert grid_points(["preset=all"], presets)[2] == ["twbert.freeze_encoder=True"]
    assert point_labels(["preset=all"], presets) == ["paper", "default", "frozen"]
    with pytest.raises(ValueError, match=r"preset=nope: no \[presets.nope\].*paper, default, frozen"):
        grid_points(["preset=nope"], presets)
    with pytest.raises(ValueError, match="must look like section.key=value1,value2"):
        grid_points(["glow.loss"])


def test_a_preset_value_reads_back_as_the_value():
    from irglow.config import apply_override

    config: dict = {}
    for item in grid_points(["preset=p"], {"p": {"a.s": "x y", "a.b": False, "a.n": 3e-5, "a.l": ["t", "u"]}})[0]:
        apply_override(config, item)
    assert config == {"a": {"s": "x y", "b": False, "n": 3e-5, "l": ["t", "u"]}}


def test_selection_needs_a_trained_stage():
    config = {"glow": {"enabled": True}, "twbert": {"enabled": False}}
    assert trained_sections([["glow.lr=1e-5"], ["glow.lr=2e-5"]], config) == ["glow"]
    with pytest.raises(ValueError, match="name no enabled model stage"):
        trained_sections([["twbert.lr=1"], ["twbert.lr=2"]], config)
    with pytest.raises(ValueError, match=r"\['lexical'\] would change what every point shares"):
        trained_sections([["lexical.k1=0.9", "glow.lr=1"], ["glow.lr=2"]], config)


def test_rerank_variants_start_from_their_kind_and_expand_per_field():
    from irglow.models.rerank.stage import RerankSettings
    from irglow.models.rerank.train import RerankTrainConfig

    config = {"rerank": {"models": "nrmf,nrmf-{field},nrmf-shared", "depth": 20,
                         "nrmf": {"epochs": 3, "model": {"dim": 64, "fields": ["title", "text"]}},
                         "variants": {"nrmf-{field}": {"kind": "nrmf", "model": {"fields": ["{field}"]}},
                                      "nrmf-shared": {"kind": "nrmf", "model": {"query_per_field": False}}}}}
    bound = RerankSettings.from_config(config)
    assert tuple(bound.expanded) == ("nrmf", "nrmf-shared")  # the fields not known yet: no per-field models
    s = bound.with_fields(["title", "text"])  # typed, the configuration not read again
    assert tuple(s.expanded) == ("nrmf", "nrmf-title", "nrmf-text", "nrmf-shared") and s.depth == 20
    assert s.expanded["nrmf-text"].train == RerankTrainConfig(kind="nrmf", epochs=3, model={"dim": 64, "fields": ["text"]})
    assert s.expanded["nrmf-shared"].train.model == {"dim": 64, "fields": ["title", "text"], "query_per_field": False}
    assert s == RerankSettings.from_config(config, ["title", "text"])
    assert tuple(bound.with_fields(["text"]).expanded) == ("nrmf", "nrmf-shared")  # one field: no per-field ablation
    config["rerank"]["models"] = ["nrmf-typo"]
    with pytest.raises(ValueError, match="'nrmf-typo' is neither a kind"):
        RerankSettings.from_config(config, ["title"])
    config["rerank"]["models"], config["rerank"]["variants"]["x"] = ["x"], {"model": {}}
    with pytest.raises(ValueError, match=r"\[rerank.variants.x\] needs kind"):
        RerankSettings.from_config(config, ["title"])


def test_bert_does_not_key_on_weighting_settings():
    from irglow.models.glow.model import GlowConfig
    from irglow.models.glow.stage import training_inputs
    from irglow.models.glow.train import GlowTrainConfig

    ramped, plain = GlowTrainConfig(lr=2e-5, alpha_ramp=0.5), GlowTrainConfig(lr=2e-5)
    a = GlowConfig(attention="key", weight_alpha=0.25, fields=["title"])
    b = GlowConfig(attention="row", weight_alpha=1.0, fields=["title"])
    assert training_inputs(ramped, a, "bert", {}) == training_inputs(plain, b, "bert", {})
    assert training_inputs(ramped, a, "glow", {}) != training_inputs(ramped, b, "glow", {})
    assert training_inputs(plain, a, "bert", {}) != training_inputs(GlowTrainConfig(lr=3e-5), a, "bert", {})


def test_training_folders_are_keyed_on_inputs_and_kept_side_by_side(tmp_path):
    from irglow.models.source import keyed_train_dir, reused_model

    a = keyed_train_dir(tmp_path / "models" / "glow-train", {"lr": 1})
    (a / "best").mkdir()
    b = keyed_train_dir(tmp_path / "models" / "glow-train", {"lr": 2})
    assert a != b and a.parent == b.parent and a.is_dir() and b.is_dir()
    assert keyed_train_dir(tmp_path / "models" / "glow-train", {"lr": 1}) == a  # the same inputs: the same folder
    assert sorted(p.name for p in a.parent.iterdir()) == sorted([a.name, b.name])  # no marker another run moves
    # a run folder names the model it used in its manifest, wherever the model was trained
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "manifest.json").write_text(json.dumps({"results": {"glow": {
        "kind": "models", "models": {"glow": str(a / "best")}}}}))
    assert reused_model(tmp_path / "run", "glow") == a / "best"
    (tmp_path / "folder" / "glow" / "best").mkdir(parents=True)  # or a folder of model folders
    assert reused_model(tmp_path / "folder", "glow") == tmp_path / "folder" / "glow" / "best"
    with pytest.raises(FileNotFoundError, match="no trained 'bert' model"):
        reused_model(tmp_path / "run", "bert")


def test_training_summary_reads_every_trainer(tmp_path):
    from irglow.models.checkpoints import training_summary

    (tmp_path / "best").mkdir()
    (tmp_path / "training.json").write_text(json.dumps({"state": {
        "best": 0.7, "best_at": {"stage": 2, "step": 40}, "train_seconds": 12.5, "step": 55,
        "history": [{"step": 0, "val_ndcg@10": 0.6}, {"step": 40, "val_ndcg@10": 0.7}]}}))
    assert training_summary(tmp_path / "best") == {"validation": 0.7, "start": 0.6, "step": 40, "seconds": 12.5,
                                                   "steps": 55, "train_queries": None, "val_queries": None,
                                                   "mix": None, "folds": None}
    (tmp_path / "training.json").write_text(json.dumps({"state": {"best": 0.5, "best_step": 9, "history": [
        {"step": 9, "val_ndcg@10": 0.5}]}, "train_queries": 10, "val_queries": 2}))
    assert training_summary(tmp_path / "best") == {"validation": 0.5, "start": None, "step": 9, "seconds": None,
                                                   "steps": None, "train_queries": 10, "val_queries": 2,
                                                   "mix": None, "folds": None}


def test_each_reranker_has_its_first_stage():
    """Issue 33.2: a variant's own first_stage, else [rerank] first_stage, else bm25; a per-field variant inherits
    its template's; the training settings never carry it."""
    from dataclasses import fields

    from irglow.models.rerank.stage import RerankSettings

    config = {"rerank": {"models": "monobert,monobert-tw,nrmf-{field}", "first_stage": "bm25f",
                         "variants": {"monobert-tw": {"kind": "monobert", "first_stage": "twbert"},
                                      "nrmf-{field}": {"kind": "nrmf", "model": {"fields": ["{field}"]},
                                                       "first_stage": "bm25-ngram"}}}}
    assert firsts(RerankSettings.from_config(config, ["title", "text"])) == {
        "monobert": "bm25f", "monobert-tw": "twbert", "nrmf-title": "bm25-ngram", "nrmf-text": "bm25-ngram"}
    assert "first_stage" not in {f.name for f in fields(RerankSettings.from_config(config).expanded["monobert"].train)}
    del config["rerank"]["first_stage"]
    assert firsts(RerankSettings.from_config(config, ["text"])) == {"monobert": "bm25", "monobert-tw": "twbert"}


def test_the_plan_given_the_index_fields_plans_each_fields_model_without_the_configuration():
    from irglow.plan import bind_plan

    config = {"lexical": {"systems": ["bm25"]},
              "rerank": {"enabled": True, "models": ["nrmf-{field}"],
                         "variants": {"nrmf-{field}": {"kind": "nrmf", "model": {"fields": ["{field}"]}}}}}
    plan = bind_plan(config)
    assert plan.tags == ("bm25",)
    config.clear()  # nothing below reads it
    per_field = plan.with_fields(["title", "text"])
    assert per_field.tags == ("bm25", "nrmf-title", "nrmf-text")
    assert dict(per_field.stages)[next(s for s, _ in plan.stages if s.name == "rerank")].expanded[
        "nrmf-text"].train.model == {"fields": ["text"]}


def test_encoding_workers_are_not_in_what_a_glow_model_is_keyed_on():
    """Issue 80: ``[glow] encode_workers`` 0 → 2 trained the model again; the workers change the encoder's speed,
    not its vectors."""
    from irglow.models.glow.model import GlowConfig
    from irglow.models.glow.stage import training_inputs
    from irglow.models.glow.train import GlowTrainConfig

    model = GlowConfig(fields=["title"])
    for variant in ("glow", "bert"):
        assert training_inputs(GlowTrainConfig(encode_workers=0), model, variant, {}) == \
            training_inputs(GlowTrainConfig(encode_workers=2), model, variant, {})


def firsts(settings) -> dict[str, str]:
    """``{model: the run it re-ranks}`` of bound ``[rerank]`` settings."""
    return {n: r.first_stage for n, r in settings.expanded.items()}
