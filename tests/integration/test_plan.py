"""The binding step (irglow.plan): a configuration becomes a frozen Plan before any work, and nothing after it
reads the configuration again."""

from __future__ import annotations

import dataclasses

import pytest

from irglow.plan import Plan, bind_plan
from irglow.stage import Context
from tests.integration.pipelines import small_pipeline


def test_the_plan_is_frozen_and_holds_each_stages_settings_object(tmp_path):
    from irglow.hybrid import FusionSettings
    from irglow.lexical.ql import QLSettings
    from irglow.lexical.stage import LexicalSettings

    config = small_pipeline(tmp_path / "out", tmp_path / "data", ql={"enabled": True},
                            fusion={"enabled": True, "runs": ["bm25+ql"]})
    plan = bind_plan(config)
    assert plan.tags == ("bm25", "bm25f", "ql", "bm25+ql")
    kinds = {stage.name: type(bound) for stage, bound in plan.stages}
    assert kinds == {"lexical": LexicalSettings, "ql": QLSettings, "fusion": FusionSettings}
    assert next(bound for s, bound in plan.stages if s.name == "ql").enabled
    assert [t for t in plan.tags if plan.graph.reads_held_out(t)] == ["bm25", "ql"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.seed = 1
    assert "config" not in {f.name for f in dataclasses.fields(Context)}


def test_nothing_after_the_binding_reads_the_configuration(tmp_path, monkeypatch):
    """Prepared and bound once, a split is evaluated with every reader of the configuration made to fail: the
    stages' binding, the declared-settings reader and the lexical section's parser."""
    import irglow.settings
    from irglow.lexical.stage import LexicalSettings
    from irglow.pipeline import evaluate_split
    from irglow.preparation import prepare
    from irglow.stages import STAGES

    monkeypatch.setenv("IRGLOW_DATA", str(tmp_path / "data"))
    config = small_pipeline(tmp_path / "out", tmp_path / "data", ql={"enabled": True},
                            fusion={"enabled": True, "runs": ["bm25+ql"]})
    p = prepare(config)
    assert isinstance(p.plan, Plan)

    def read(*args, **kwargs):
        raise AssertionError("the configuration was read after the binding")

    for owner, name in ((irglow.settings, "value"), (irglow.settings, "check"), (LexicalSettings, "from_config"),
                        *((s.settings_class, "from_config") for s in STAGES)):
        monkeypatch.setattr(owner, name, read)
    config.clear()  # and the dictionary itself is gone
    cmp = evaluate_split(p.plan, p, "test", tmp_path / "out")
    assert list(cmp.means.index) == ["bm25", "bm25f", "ql", "bm25+ql"]
    import json

    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["config"]["ql"] == {"enabled": True} and manifest["settings"]["ql"] == {"enabled": True}
    assert manifest["settings"]["lexical"]["mu"] == 1000.0  # its μ: [lexical] mu, declared once


ROOT = __import__("pathlib").Path(__file__).parents[2]
PIPELINE_CONFIGS = sorted(p for p in (ROOT / "irglow" / "configs").rglob("*.toml")
                          if not p.name.startswith(("glow", "rerank", "twbert")) or p.parent.name != "configs")


@pytest.mark.parametrize("path", PIPELINE_CONFIGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_configuration_binds(path):
    """The configurations in configs/ load unchanged into a plan (each stage's section-only file through the stage
    that includes it below)."""
    from irglow.config import load_config

    assert bind_plan(load_config(path)).tags


@pytest.mark.parametrize("section, name", [("glow", "glow.toml"), ("glow", "glow-paper.toml"),
                                           ("twbert", "twbert.toml")])
def test_every_shipped_stage_file_binds_through_its_stage(section, name):
    """A section's ``config = "file"`` is laid when the configuration is loaded (binding reads no file); a
    configuration built in Python lays it with ``include_sections``, and one that does not is told so."""
    from irglow.config import include_sections

    plan = bind_plan(include_sections({section: {"enabled": True, "config": str(ROOT / "irglow" / "configs" / name)}}))
    assert any(stage.name == section for stage, _ in plan.stages)
    with pytest.raises(ValueError, match=rf"{section}.config is laid when the configuration is loaded"):
        bind_plan({section: {"enabled": True, "config": str(ROOT / "irglow" / "configs" / name)}})


def test_the_rerank_file_binds_through_the_rerank_stage():
    from irglow.config import load_config

    plan = bind_plan({"rerank": {"enabled": True, "models": ["monobert", "nrmf"],
                                 **load_config(ROOT / "irglow" / "configs" / "rerank.toml")}})
    assert plan.tags[-2:] == ("monobert", "nrmf")


@pytest.mark.parametrize("section, message", [
    ({"glow": {"enabled": False, "epochz": 3}}, r"\[glow\] \(disabled\): unknown \[glow\] setting\(s\) \['epochz'\] \(did you mean 'epochs'\?\)"),
    ({"twbert": {"enabled": False, "model": {"max_qeury_tokens": 3}}}, r"\[twbert\] \(disabled\).*max_qeury_tokens"),
    ({"rerank": {"enabled": True, "models": ["monobert"], "variants": {"unused": {"kind": "nrmf", "dpeth": 5}}}},
     "dpeth"),
    ({"rerank": {"enabled": True, "models": ["monobert"], "variants": {"unused": {"depth": 5}}}},
     r"\[rerank.variants.unused\] needs kind"),
    ({"glow": {"enabled": True, "model": {"attention": "sideways"}}}, "glow.model.attention = 'sideways' must be one of 'key', 'row'"),
    ({"glow": {"enabled": True, "model": {"num_layers": 0}}}, "glow.model.num_layers = 0 must be an integer >= 1"),
])
def test_misspelt_keys_are_named_whatever_is_enabled(tmp_path, section, message):
    """Issue 50: a misspelt key in a disabled section, or in a [rerank.variants.*] no model uses, surfaced only on
    the day it was used; GLOW's attention and depth were checked at the first batch, or not at all."""
    config = {**small_pipeline(tmp_path / "out", tmp_path / "data"), **section}
    with pytest.raises(ValueError, match=message):
        bind_plan(config)
