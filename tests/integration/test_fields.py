"""Token budgets that follow the hardware (irglow.models.fields, "auto")."""

from __future__ import annotations


def test_auto_token_budget_follows_the_device():
    """Issue 33.4: "auto" is 256 WordPieces on a GPU and 96 on CPU; other budgets stay as written; the manifest's
    note says which was chosen."""
    from irglow.models.fields import resolve_auto_budgets

    model = {"field_max_tokens": {"text": "auto", "title": 20}, "default_field_tokens": 20}
    cpu, note = resolve_auto_budgets(model, "cpu")
    assert cpu["field_max_tokens"] == {"text": 96, "title": 20} and note["tokens"] == 96 and note["device"] == "cpu"
    gpu, note = resolve_auto_budgets({**model, "default_field_tokens": "auto"}, "cuda:0")
    assert gpu["field_max_tokens"] == {"text": 256, "title": 20} and gpu["default_field_tokens"] == 256
    assert note == {"fields": ["text", "(default)"], "tokens": 256, "device": "cuda",
                    "rule": "auto: 256 on a GPU, 96 on CPU"}
    assert resolve_auto_budgets({"field_max_tokens": {"text": 64}}, "cpu") == ({"field_max_tokens": {"text": 64}}, None)
    assert model["field_max_tokens"]["text"] == "auto"  # the configuration is not written back


def test_the_packaged_glow_config_trains_at_the_devices_budget(tmp_path):
    """configs/glow.toml's long fields are "auto": the stage binds them for this machine (CPU here: 96) and its
    resolved settings (the manifest) say so."""
    from irglow.models.glow.stage import GlowStage

    from irglow.config import include_sections

    config = include_sections({"glow": {"enabled": True, "device": "cpu", "config": str(
        __import__("pathlib").Path(__file__).parents[2] / "irglow" / "configs" / "glow.toml")}})
    stage = GlowStage()
    resolved = stage.resolved(stage.settings_class.from_config(config))
    assert resolved["train"]["model"]["field_max_tokens"]["text"] == 96
    assert resolved["token_budget"]["tokens"] == 96 and resolved["token_budget"]["device"] == "cpu"
