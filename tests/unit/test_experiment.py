"""Experiment's configuration, built from run names by the stages themselves (irglow.experiment): each stage
switches itself on for the runs it writes, and the runs a run is made from come with it."""

import pytest

from irglow import stages
from irglow.experiment import Experiment
from irglow.stage import Stage


def test_each_name_switches_on_its_stage_and_what_it_is_made_of():
    cfg = Experiment("demo", systems=["bm25+rm3", "twbert+glow+monobert", "minilm", "ql"]).config
    assert cfg["lexical"] == {"systems": ["bm25+rm3", "bm25"]}  # monobert re-ranks bm25 by default
    assert cfg["twbert"] == {"enabled": True, "rm3": False}
    assert cfg["glow"] == {"enabled": True, "variants": ["glow"], "untrained": ["minilm"]}
    assert cfg["rerank"] == {"enabled": True, "models": ["monobert"]}
    assert cfg["fusion"] == {"enabled": True, "runs": ["twbert+glow+monobert"]}
    assert cfg["ql"] == {"enabled": True}
    assert cfg["eval"]["baseline"] == "bm25-rm3"


def test_a_reranker_brings_the_first_stage_it_is_configured_with():
    cfg = Experiment("demo", systems=["bm25", "nrmf"], config={"rerank": {"first_stage": "twbert"}}).config
    assert cfg["twbert"]["enabled"] and cfg["rerank"]["models"] == ["nrmf"]


def test_a_new_stage_needs_no_edit_to_experiment(monkeypatch):
    class Echo(Stage):
        name = "echo"

        def switch_on(self, config, run):
            if run == "echo":
                config.setdefault("echo", {})["enabled"] = True
            return run == "echo"

        def run_names(self):
            return ["echo"]

    monkeypatch.setattr(stages, "STAGES", [*stages.STAGES, Echo()])
    assert Experiment("demo", systems=["bm25", "echo"]).config["echo"] == {"enabled": True}
    with pytest.raises(ValueError, match=r"'bm26' is not a run irglow can make; systems are bm25 .*, echo"):
        Experiment("demo", systems=["bm26"])
