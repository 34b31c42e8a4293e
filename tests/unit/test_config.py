"""Configuration files (irglow.config): includes, overrides, the checks before any work."""

from __future__ import annotations

import pytest

from irglow.cli import main
from irglow.config import load_config
from irglow.plan import check_config
from tests.integration.pipelines import nrmf_pipeline


@pytest.mark.parametrize("section, value", [("twbert", "false"), ("glow", "no"), ("rerank", 1), ("fusion", "yes")])
def test_enabled_must_be_a_boolean(tmp_path, section, value):
    """30.4: ``enabled = "false"`` (a non-empty string) turned the stage on."""
    from irglow.plan import check_config

    config = nrmf_pipeline("demo", tmp_path / "o", tmp_path / "d")
    config[section] = {**config.get(section, {}), "enabled": value}
    with pytest.raises(ValueError, match=f"{section}.enabled = {value!r} must be true or false"):
        check_config(config)


def test_set_enabled_no_is_an_error_naming_the_key(tmp_path, capsys):
    assert main(["run", "--config", "configs/demo.toml", "--set", "twbert.enabled=no",
                 "--set", f"output.dir={tmp_path}"]) == 2
    assert "twbert.enabled = 'no' must be true or false" in capsys.readouterr().err


# Crashes and unclear errors
def test_config_base_cycles_and_relative_paths(tmp_path):
    from irglow.config import load_config

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.toml").write_text('base = "b.toml"\n[lexical]\ndepth = 10\n')
    (tmp_path / "sub" / "b.toml").write_text('[lexical]\nk1 = 1.2\ndepth = 5\n')
    assert load_config(tmp_path / "sub" / "a.toml")["lexical"] == {"k1": 1.2, "depth": 10}  # beside a.toml
    (tmp_path / "self.toml").write_text('base = "self.toml"\n')
    with pytest.raises(ValueError, match="cycle"):
        load_config(tmp_path / "self.toml")
    (tmp_path / "x.toml").write_text('base = "y.toml"\n')
    (tmp_path / "y.toml").write_text('base = "x.toml"\n')
    with pytest.raises(ValueError, match="cycle"):
        load_config(tmp_path / "x.toml")
    (tmp_path / "bad.toml").write_text("[lexical\n")
    with pytest.raises(ValueError, match="bad.toml: not valid TOML"):
        load_config(tmp_path / "bad.toml")


@pytest.mark.parametrize("path", ["configs/demo.toml", "configs/msmarco.toml", "configs/msmarco-small.toml",
                                  "configs/zero-shot.toml"])
def test_shipped_configs_pass(path):
    check_config(load_config(path))


@pytest.mark.parametrize("override, message", [
    ("lexcal.depth=10", r"unknown top-level setting\(s\) \['lexcal'\] \(did you mean 'lexical'\?\); known: .*lexical"),
    ("lexical.k2=1.2", r"unknown \[lexical\] setting\(s\) \['k2'\].*; known: .*k1"),
    ("lexical.systems=['bm25', 'bm26']", r"'bm26' is not a lexical system; known: bm25, bm25f, bm25-mf, tfidf, qld"),
    ("lexical.systems=['bm25-rm4']", r"'bm25-rm4' is not a lexical system"),
    ("lexical.systems=['bm25+rm3']", r"'\+' joins the runs of a fusion; a system with RM3 is written 'bm25-rm3'"),
    ("collection.test_splt='dev'", r"\['test_splt'\]"),
    ("eval='nDCG@10'", r"\[eval\] must be a table"),
])
def test_bad_config_names_the_key(override, message):
    with pytest.raises(ValueError, match=message):
        check_config(load_config("configs/demo.toml", [override]))


def test_a_sealed_configuration_refuses_every_read_nested_and_copied_alike():
    """Issue 54: ``irglow run`` binds the configuration, then seals it; a module reading a setting from the
    dictionary afterwards stops with an error instead of running on a default."""
    import copy
    import json

    from irglow.config import SealedConfig

    config = SealedConfig({"glow": {"model": {"fields": ["title"]}}, "fusion": {"runs": [{"runs": ["a", "b"]}]}})
    kept = config["glow"]["model"]  # a table a stage might have kept instead of its settings object
    entry, snapshot = config["fusion"]["runs"][0], copy.deepcopy(config)
    assert json.loads(json.dumps(config)) == {"glow": {"model": {"fields": ["title"]}},
                                              "fusion": {"runs": [{"runs": ["a", "b"]}]}}
    config.seal()
    reads = [lambda: config["glow"], lambda: config.get("glow", {}), lambda: "glow" in config, lambda: list(config),
             lambda: {**config}, lambda: kept["fields"], lambda: kept.get("fields"), lambda: entry["runs"],
             lambda: json.dumps(config), lambda: config.setdefault("x", {}), lambda: config.copy()["glow"]["model"]]
    for read in reads:
        with pytest.raises(RuntimeError, match="read after it was bound"):
            read()
    assert snapshot["glow"]["model"] == {"fields": ["title"]}  # a deep copy taken while binding: a plain snapshot


def test_the_shipped_configurations_are_found_from_any_folder(tmp_path, monkeypatch):
    """Issue 70.1: `irglow run` said "configuration configs/demo.toml does not exist" from any folder but the clone;
    the configurations are package data, found by the name the docs use (or the file's own name)."""
    from irglow.config import SHIPPED, config_path, load_config

    monkeypatch.chdir(tmp_path)
    assert config_path("configs/demo.toml") == config_path("demo.toml") == SHIPPED / "demo.toml"
    assert load_config("configs/msmarco-small.toml")["collection"]  # its base = "msmarco.toml" found beside it
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "demo.toml").write_text("[collection]\nname = \"mine\"\n")
    assert load_config("configs/demo.toml")["collection"]["name"] == "mine"  # a file of one's own comes first
    with pytest.raises(FileNotFoundError, match=r"configuration configs/nope.toml does not exist \(irglow ships .*"
                                                r"demo.toml"):
        config_path("configs/nope.toml")
