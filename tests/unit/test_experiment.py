"""Experiment's configuration, built from rankers (irglow.rankers) or the names of their runs, which the stages
read themselves (irglow.experiment): each ranker switches on what makes it, its parts first."""

from dataclasses import dataclass

import pytest

from irglow import stages
from irglow.experiment import Experiment
from irglow.plan import check_config
from irglow.stage import Stage


def test_each_name_switches_on_its_stage_and_what_it_is_made_of():
    cfg = Experiment("demo", systems=["bm25-rm3", "twbert+glow+monobert", "minilm", "ql"]).config
    assert cfg["lexical"] == {"systems": ["bm25-rm3", "bm25"]}  # monobert re-ranks bm25 by default
    assert cfg["twbert"] == {"enabled": True, "runs": ["twbert"], "rm3": False}
    assert cfg["glow"] == {"enabled": True, "variants": ["glow"], "untrained": ["minilm"]}
    assert cfg["rerank"] == {"enabled": True, "models": ["monobert"]}
    assert cfg["fusion"] == {"enabled": True, "runs": ["twbert+glow+monobert"]}
    assert cfg["ql"] == {"enabled": True}
    assert cfg["eval"]["baseline"] == "bm25-rm3"
    with pytest.raises(ValueError, match=r"'rm3' is not a run irglow can make"):  # '+' is fusion, only
        Experiment("demo", systems=["bm25+rm3"])
    with pytest.raises(ValueError, match=r"'\+' joins the runs of a fusion; a system with RM3 is written 'bm25-rm3'"):
        check_config({"lexical": {"systems": ["bm25+rm3"]}})  # a configuration's list (an Experiment's config= has none)


def test_a_reranker_brings_the_first_stage_it_is_configured_with():
    cfg = Experiment("demo", systems=["bm25", "nrmf"], config={"rerank": {"first_stage": "twbert"}}).config
    assert cfg["twbert"]["enabled"] and cfg["rerank"]["models"] == ["nrmf"]


def _switched(section: str) -> type:
    """A plugin stage's settings class of one setting, ``[section] enabled``."""
    @dataclass(frozen=True)
    class Settings:
        enabled: bool

        @classmethod
        def from_config(cls, config):
            return cls(config.get(section, {}).get("enabled", False))

    return Settings


def test_a_new_stage_needs_no_edit_to_experiment(monkeypatch):
    class Echo(Stage):
        name, settings_class = "echo", _switched("echo")

        def tags(self, settings):
            return ["echo"]

    monkeypatch.setattr(stages, "STAGES", [*stages.STAGES, Echo()])
    exp = Experiment("demo", systems=["bm25", "echo", "bm25+echo"])
    assert exp.config["echo"] == {"enabled": True} and exp.config["fusion"]["runs"] == ["bm25+echo"]
    with pytest.raises(ValueError, match=r"'bm26' is not a run irglow can make: .*ql, .*echo"):
        Experiment("demo", systems=["bm26"])


def test_rankers_compose_and_nest_and_read_back_from_their_tags(tmp_path):
    """Issue 54: one kind of object for every run; Fusion and Rerank take rankers and nest; ``+`` is fusion and
    ``>>`` re-ranking, nothing else; a ranker's tag read back is the same ranker's configuration."""
    from irglow import Dense, Fusion, Lexical, MonoBERT, NRMF, QL, Rerank, TWBert
    from irglow.plan import ranker

    hybrid = Lexical("bm25f") + Dense("glow")
    nested = Rerank(Lexical("bm25") + Rerank(hybrid, NRMF(epochs=1)), MonoBERT())
    assert hybrid == Fusion([Lexical("bm25f"), Dense("glow")]) and (hybrid >> MonoBERT()).tag == "monobert(bm25f+glow)"
    assert nested.tag == "monobert(bm25+nrmf(bm25f+glow))"
    assert (Lexical("bm25") + Fusion([QL(), TWBert()], method="rrf")).tag == "bm25+(ql+twbert)"
    assert (Lexical("bm25") + QL() + TWBert()).tag == "bm25+ql+twbert"  # a plain fusion is extended, not nested
    exp = Experiment("demo", systems=[Lexical("bm25"), nested, Fusion([Lexical("bm25"), TWBert()], weights=[0.3, 0.7]),
                                      Rerank(TWBert(), MonoBERT())])
    cfg = exp.config
    assert exp.systems == ["bm25", "monobert(bm25+nrmf(bm25f+glow))", "bm25+twbert", "monobert(twbert)"]
    assert cfg["rerank"]["models"] == ["nrmf(bm25f+glow)", "monobert(bm25+nrmf(bm25f+glow))", "monobert(twbert)"]
    # a re-ranking's tag says its kind and first stage: a table only for the model's own settings
    assert cfg["rerank"]["variants"] == {"nrmf(bm25f+glow)": {"kind": "nrmf", "first_stage": "bm25f+glow", "epochs": 1}}
    assert cfg["fusion"]["runs"] == ["bm25f+glow", "bm25+nrmf(bm25f+glow)",
                                     {"runs": ["bm25", "twbert"], "weights": [0.3, 0.7]}]
    assert exp.check()[-3:] == ["bm25f+glow", "bm25+nrmf(bm25f+glow)", "bm25+twbert"]  # the plan binds it
    # the names read back as the same rankers (what a file's tags and the CLI's systems are)
    assert Experiment("demo", systems=["bm25", "monobert(bm25+nrmf(bm25f+glow))", "monobert(twbert)"]).config[
        "fusion"]["runs"] == ["bm25f+glow", "bm25+nrmf(bm25f+glow)"]
    assert ranker("bm25+monobert(twbert)") == Lexical("bm25") + Rerank(TWBert(), MonoBERT())
    loaded = Experiment.load(exp.save(tmp_path / "exp.yaml"))
    assert loaded.config == cfg and loaded.systems == exp.systems


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
    with pytest.raises(ValueError, match=r"ql.enabled = 'yes' must be"):
        ql.settings_class.from_config({"ql": {"enabled": "yes"}})
    with pytest.raises(ValueError, match="mu"):  # issue 68.6: its μ is [lexical] mu, declared once
        ql.settings_class.from_config({"ql": {"enabled": True, "mu": 500.0}})
    assert ql.settings_class.from_config({"ql": {"enabled": True}}) == QLSettings(enabled=True)
    assert ql.resolved(ql.settings_class.from_config({"ql": {"enabled": True}})) == {"enabled": True}
    from irglow.plan import ranker
    from irglow.lexical.ql import QL

    assert ranker("ql") == QL() == QL(mu=None)
    config: dict = {}
    QL(mu=500).configure(config)
    assert config == {"ql": {"enabled": True}, "lexical": {"mu": 500}}
    with pytest.raises(ValueError, match="lexical.mu: one experiment asks for 500 and 800"):
        QL(mu=800).configure(config)


def test_every_run_of_a_file_reads_back_as_its_ranker():
    """Issue 54: every run a file makes reads back as its ranker object, the same objects Experiment takes."""
    from irglow import Dense, Fusion, Lexical, MonoBERT, Rerank, TWBert
    from irglow.config import load_config
    from irglow.plan import bind_plan, ranker

    config = load_config("configs/demo.toml")
    demo = {t: ranker(t, config) for t in bind_plan(config).tags}
    assert demo["twbert+glow+monobert"] == Fusion([TWBert(), Dense("glow"), Rerank(Lexical("bm25"), MonoBERT())])
    assert demo["bm25-rm3"].tag == Lexical("bm25", rm3=True).tag == "bm25-rm3"
    assert all(r.tag == t for t, r in demo.items())
    msmarco = load_config("configs/msmarco.toml")
    # rerank_also: the hybrid re-ranked by monobert's trained model (its node says whose: Model.of)
    from irglow.rankers import Model

    assert ranker("monobert(bm25f+glow)", msmarco) == Rerank(Lexical("bm25f") + Dense("glow"),
                                                           Model("monobert", of=Rerank(Lexical("bm25"), MonoBERT())))


def test_a_reranking_read_back_keeps_its_models_settings():
    from irglow import NRMF, Lexical, Rerank, TWBert
    from irglow.plan import ranker

    exp = Experiment("demo", systems=[Lexical("bm25"), Rerank(TWBert(), NRMF(epochs=3))])
    assert ranker("nrmf(twbert)", exp.config) == Rerank(TWBert(), NRMF(epochs=3))


def test_a_rerankings_tag_in_rerank_models_says_its_kind_and_first_stage():
    """Issue 68: ``monobert(twbert)`` in ``rerank.models`` is monoBERT re-ranking TW-BERT with [rerank.monobert]'s
    settings (the tag a ranker writes, read by the binding); a name of that form with no kind is named."""
    from irglow import Lexical, MonoBERT, Rerank, TWBert
    from irglow.plan import bind_plan, ranker

    config = {"twbert": {"enabled": True}, "rerank": {"enabled": True, "models": ["monobert", "monobert(twbert)"],
                                                      "monobert": {"epochs": 2}}}
    plan = bind_plan(config)
    rerank = dict(plan.stages)[next(s for s, _ in plan.stages if s.name == "rerank")]
    assert {n: r.first_stage for n, r in rerank.expanded.items()} == {"monobert": "bm25", "monobert(twbert)": "twbert"}
    assert rerank.expanded["monobert(twbert)"].train == rerank.expanded["monobert"].train
    assert plan.graph["monobert(twbert)"] == Rerank(TWBert(), MonoBERT()) == ranker("monobert(twbert)", config)
    assert plan.graph["monobert"] == Rerank(Lexical("bm25"), MonoBERT())
    with pytest.raises(ValueError, match=r"rerank.models: 'bert\(twbert\)' is neither a kind .*monobert\(twbert\)"):
        bind_plan({"rerank": {"enabled": True, "models": ["bert(twbert)"]}})


def test_an_experiments_rankers_are_its_bound_graphs_nodes():
    """Issue 68: the ranker a user passes equals its node, and the experiment keeps the node (bound settings such
    as the re-ranked depth on it); a saved experiment reads back the same nodes; a name gives the same node."""
    from irglow import Dense, Lexical, MonoBERT
    from irglow.plan import bind_plan, ranker

    given = (Lexical("bm25f") + Dense("glow")) >> MonoBERT()
    exp = Experiment("demo", systems=[Lexical("bm25"), given], settings={"rerank.depth": 30})
    node = bind_plan(exp.config).graph[given.tag]
    assert exp.rankers[1] == given == node and given.depth is None and exp.rankers[1].depth == node.depth == 30
    assert ranker(given.tag, exp.config).depth == 30
    named = Experiment("demo", systems=["bm25", "monobert(bm25f+glow)"], settings={"rerank.depth": 30})
    assert named.rankers == exp.rankers and named.config["rerank"] == exp.config["rerank"]


def test_an_experiment_binds_once_and_runs_the_plan_it_bound(monkeypatch):
    """Issue 68: the plan bound at construction is the one ``run`` runs (no second binding of the configuration)."""
    import irglow.experiment as experiment
    import irglow.plan as plan_module

    exp = Experiment("demo", systems=["bm25", "bm25f"])
    assert exp.check() == list(exp.plan.tags) == ["bm25", "bm25f"] and exp.rankers == [exp.plan.graph["bm25"],
                                                                                        exp.plan.graph["bm25f"]]
    ran = []
    monkeypatch.setattr(plan_module, "bind_plan", lambda *a, **k: pytest.fail("bound a second time"))
    monkeypatch.setattr(experiment, "run_pipeline", lambda plan: ran.append(plan) or type("R", (), {"comparison": 1}))
    assert exp.run() == 1 and ran == [exp.plan]


def test_a_part_no_stage_makes_is_named_with_the_run_that_reads_it(monkeypatch):
    """Issue 68: what a node reads is checked once, by the graph, for every stage — a plugin's too."""
    from irglow.rankers import Fusion, Lexical, StageRun

    class Reader(Stage):
        name, settings_class = "reader", _switched("reader")

        def tags(self, settings):
            return ["reader"]

        def node(self, tag, settings, node_of):
            return Fusion([node_of("bm25"), node_of("nope")])

    monkeypatch.setattr(stages, "STAGES", [*stages.STAGES, Reader()])
    with pytest.raises(ValueError, match=r"^reader reads 'nope', which is not a run of this configuration; its "
                                         r"runs: bm25$"):
        Experiment("demo", systems=["bm25", StageRun("reader", "reader")])
    assert Experiment("demo", systems=["bm25"]).plan.graph.inputs() == set()  # no node reads another
    fused = Experiment("demo", systems=["bm25", Lexical("bm25") + Lexical("bm25f")])
    assert fused.plan.graph.inputs() == {"bm25", "bm25f"}


def test_a_stage_of_several_runs_without_units_of_its_own_runs_once_for_them_all(tmp_path):
    """Issue 81: the default units (one per node) share the stage's one ``run`` of a split: a plugin stage writing
    two runs ran its whole work twice, once per node."""
    from irglow.rankers import StageRun
    from irglow.stage import Context

    calls = []

    class Pair(Stage):
        name, settings_class = "pair", _switched("pair")

        def tags(self, settings):
            return ["left", "right"]

        def run(self, ctx):
            calls.append(ctx.test_split)
            return {"left": "L", "right": "R"}

    ctx = Context(None, None, None, None, tmp_path, tmp_path, None, {}, "test", settings={"enabled": True})
    stage = Pair()
    made = [u.produce() for tag in ("left", "right") for u in stage.units(StageRun("pair", tag), ctx)]
    assert [dict(m.runs) for m in made] == [{"left": "L"}, {"right": "R"}] and calls == ["test"]
    other = Context(None, None, None, None, tmp_path, tmp_path, None, {}, "dev", settings={"enabled": True})
    stage.units(StageRun("pair", "left"), other)[0].produce()
    assert calls == ["test", "dev"]  # another split's context runs it again
