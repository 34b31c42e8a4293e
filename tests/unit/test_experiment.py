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


def test_hybrids_and_reranked_runs_as_objects(tmp_path):
    """A fusion with its own method or fixed weights and a re-ranker over a given first stage, constructed, saved
    as a configuration and loaded back."""
    from irglow import Hybrid, Reranked

    exp = Experiment("demo", systems=["bm25", Hybrid(["bm25", "glow"], method="rrf"),
                                      Hybrid("bm25f+twbert", weights=[0.3, 0.7]),
                                      Reranked("monobert", first_stage="twbert")])
    cfg = exp.config
    assert exp.systems == ["bm25", "bm25+glow", "bm25f+twbert", "monobert-twbert"]
    assert cfg["fusion"]["runs"] == [{"runs": ["bm25", "glow"], "method": "rrf"},
                                     {"runs": ["bm25f", "twbert"], "weights": [0.3, 0.7]}]
    assert cfg["rerank"] == {"enabled": True, "variants": {"monobert-twbert": {"kind": "monobert",
                                                                                "first_stage": "twbert"}},
                             "models": ["monobert-twbert"]}
    assert cfg["lexical"]["systems"] == ["bm25", "bm25f"] and cfg["twbert"]["enabled"]
    loaded = Experiment.load(exp.save(tmp_path / "exp.yaml"))
    assert loaded.config["fusion"] == cfg["fusion"] and loaded.config["rerank"] == cfg["rerank"]
    assert Reranked("nrmf").tag == "nrmf" and Reranked("nrmf", name="n").tag == "n"


@pytest.mark.parametrize("entry, message", [
    ({"runs": ["bm25", "bm25f"], "mehtod": "rrf"}, r"takes runs, method, norm and weights; not mehtod"),
    ({"runs": ["bm25", "bm25f"], "method": "max"}, r"fusion.runs\[0\].method = 'max' must be one of wsum, rrf"),
    ({"runs": ["bm25", "bm25f"], "weights": [1.0]}, r"weights = \[1.0\] must be 2 numbers >= 0"),
    ({"runs": ["bm25", "bm25f"], "weights": [0, 0]}, r"not all 0"),
    ({"method": "rrf"}, r"runs is missing"),
])
def test_a_wrong_hybrid_table_is_named(entry, message):
    from irglow.plan import check_config

    cfg = {"lexical": {"systems": ["bm25", "bm25f"]}, "fusion": {"enabled": True, "runs": [entry]}}
    with pytest.raises(ValueError, match=message):
        check_config(cfg)


def test_a_stage_with_a_settings_class_is_checked_and_keyed_by_it():
    """The base class derives binding (the check) and the manifest entry from ``settings_class`` (the
    query-likelihood example)."""
    from irglow.lexical.ql import QLSettings, QueryLikelihoodStage

    ql = QueryLikelihoodStage()
    with pytest.raises(ValueError, match=r"ql.mu = -1.0 must be"):
        ql.bind({"ql": {"enabled": True, "mu": -1.0}})
    with pytest.raises(ValueError, match="muu"):
        ql.bind({"ql": {"enabled": True, "muu": 1.0}})
    assert ql.bind({"ql": {"enabled": True}}) == QLSettings(enabled=True, mu=1000.0)
    assert ql.resolved(ql.bind({"ql": {"enabled": True, "mu": 500}})) == {"enabled": True, "mu": 500}
    assert ql.run_names() == ["ql"]
