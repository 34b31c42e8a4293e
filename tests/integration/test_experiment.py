"""The experiment model (irglow.experiment, irglow.stages): stages as objects in one list, settings bound once (nothing written back into
the configuration), each multi-field system tuned for itself, one fusion, and an Experiment a notebook can call."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.pipelines import SMALL_DEMO, small_pipeline


ROOT = Path(__file__).resolve().parents[2]


def test_each_multi_field_system_is_tuned_for_itself(tmp_path):
    """31.1: BM25F's tuned weights were handed to bm25-mf (another model).  On the small demo's training queries
    the weights that suit BM25F (url and anchor ×4) hurt the multi-field sum (nDCG@10 0.8746 → 0.8238); tuned for
    itself it keeps or beats its untuned default (0.8918)."""
    from irglow.data.collection import load_collection
    from irglow.eval.measures import aggregate, parse_measures
    from irglow.index.lucene_index import IndexConfig, build_index
    from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
    from irglow.lexical.stage import LexicalSettings

    c = load_collection(SMALL_DEMO)
    index = build_index(c, IndexConfig(threads=1), root=tmp_path)
    queries, qrels = c.queries("train"), c.qrels("train")
    lexical = LexicalSettings(systems=["bm25", "bm25-mf", "bm25f"], tune_bm25f=True)
    weights = lexical.field_weights_for(index, queries, qrels)
    assert set(weights) == {"bm25-mf", "bm25f"} and weights["bm25-mf"] != weights["bm25f"]
    assert all(w >= 1 for w in weights["bm25f"].values())  # CombinedFieldQuery's constraint, kept

    def ndcg(system, w):
        run = LexicalSearcher(index, LexicalConfig(system, depth=100, field_weights=w)).search(queries)
        return aggregate(parse_measures(["nDCG@10"]), qrels, run)["nDCG@10"]

    default, borrowed, own = ndcg("bm25-mf", {}), ndcg("bm25-mf", weights["bm25f"]), ndcg("bm25-mf", weights["bm25-mf"])
    assert borrowed < default <= own
    assert ndcg("bm25f", weights["bm25f"]) >= ndcg("bm25f", {})


def test_the_pipeline_reports_each_systems_weights_and_writes_nothing_into_the_config(tmp_path, monkeypatch):
    """31.1 and 31.4: the table says whose weights are whose; the configuration dict is the same object, unchanged,
    after a run (prepare used to write output.train_dir and the tuned weights into it)."""
    from irglow.pipeline import run_pipeline

    monkeypatch.chdir(tmp_path)
    config = small_pipeline(tmp_path / "out", tmp_path / "data", systems=("bm25", "bm25-mf", "bm25f"))
    config["lexical"]["tune_bm25f"] = True
    before = copy.deepcopy(config)
    result = run_pipeline(config)
    assert config == before
    note = (tmp_path / "out" / "results.md").read_text()
    assert "Field weights: `bm25f` {" in note and "`bm25-mf` {" in note and "tuned for it on the training queries" in note
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert set(manifest["field_weights"]) == {"bm25f", "bm25-mf"}
    assert manifest["settings"]["lexical"]["k1"] == 0.9 and "fusion" not in manifest["settings"]
    assert list(result.comparison.means.index) == ["bm25", "bm25-mf", "bm25f"]


def test_lexical_k1_reaches_every_system_that_claims_it():
    """31.2: --set lexical.k1=1.2 changed bm25, bm25f and RM3 but not bm25-ngram and twbert."""
    from irglow.lexical.stage import LexicalSettings
    from irglow.models.twbert.stage import TWBertStage

    config = {"lexical": {"systems": ["bm25", "bm25-rm3", "bm25-mf", "bm25f", "tfidf"], "k1": 1.2, "b": 0.7},
              "twbert": {"enabled": True}}
    lexical = LexicalSettings.from_config(config)
    for system in ("bm25", "bm25-rm3", "bm25-mf", "bm25f"):
        cfg = lexical.config(system, {})
        assert (cfg.k1, cfg.b) == (1.2, 0.7)
    stage = TWBertStage()
    assert stage.settings_class.from_config(config).train.model.k1 == 1.2
    assert stage.bm25_parameters(stage.settings_class.from_config(config)) == {"k1": 1.2, "b": 0.7}
    # a model section with its own values keeps them, and the caption says so
    config["twbert"]["model"] = {"k1": 2.0}
    assert stage.bm25_parameters(stage.settings_class.from_config(config)) == {"k1": 2.0, "b": 0.7}


def test_a_system_with_its_own_bm25_parameters_is_named_in_the_caption(tmp_path):
    from types import SimpleNamespace

    from irglow.lexical.stage import LexicalSettings
    from irglow.outputs import settings_note
    from irglow.plan import bind_plan

    config = {"lexical": {"systems": ["bm25"]}, "twbert": {"enabled": True, "rm3": False, "model": {"k1": 1.5}}}
    prepared = SimpleNamespace(lexical=LexicalSettings.from_config(config), field_weights={})
    note = settings_note(bind_plan(config), prepared, ["bm25", "bm25-ngram", "twbert"])
    assert "`bm25-ngram`, `twbert` score BM25 with k1 1.5, b 0.4 ([twbert.model]), not [lexical]'s k1 0.9" in note
    config["twbert"]["model"] = {}
    assert settings_note(bind_plan(config), prepared, ["bm25", "bm25-ngram", "twbert"]) == ""


def test_bm25_defaults_are_defined_once():
    """31.2: the default 0.9 was written out in 11 places; issue 54: the depth 1000 and the seed 13 too."""
    found = []
    for path in [*ROOT.glob("irglow/**/*.py"), *ROOT.glob("bench/*.py")]:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            # k1=0.9, k1: float = 0.9, "k1", 0.9, default=0.9 … and the same for b = 0.4
            if re.search(r"(\bk1\b|\bb\b)\"?\s*[,:=]\s*(float\s*=\s*)?0\.[94]\b|default=0\.[94]\b", line):
                found.append(f"{path.relative_to(ROOT)}:{n}")
            if re.search(r"\bdepth\b[^=\n]*=\s*1000\b|\bseed\b[^=\n]*=\s*13\b|\bor 13\b", line):
                found.append(f"{path.relative_to(ROOT)}:{n}")
    assert found == []
    defaults = (ROOT / "irglow" / "defaults.py").read_text()
    assert "BM25_K1 = 0.9" in defaults and "BM25_B = 0.4" in defaults
    assert "DEPTH = 1000" in defaults and "SEED = 13" in defaults


@pytest.mark.parametrize("section, value, moved", [("glow", {"enabled": True, "fuse_with": ["bm25f"]}, "glow.fuse_with"),
                                                   ("rerank", {"enabled": True, "fuse": True}, "rerank.fuse")])
def test_the_old_fusion_settings_point_to_the_one_fusion(tmp_path, section, value, moved):
    """31.3: three fusions (GLOW's fuse_with, the re-rankers' fuse, [fusion]) are one [fusion] stage."""
    from irglow.plan import check_config

    config = small_pipeline(tmp_path / "o", tmp_path / "d", **{section: value})
    with pytest.raises(ValueError, match=f"{re.escape(moved)} moved to the one fusion stage: write \\[fusion\\] runs"):
        check_config(config)


def test_stages_are_one_list_of_objects_and_importing_it_loads_no_torch():
    """31.5: stages were found by string (getattr(module, f"{name}_stage")); the model CLIs kept a second list."""
    code = ("import sys, irglow.stages as s; print([x.name for x in s.STAGES]); "
            "print(any(m in sys.modules for m in ('torch', 'transformers', 'faiss')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "['lexical', 'ql', 'twbert', 'glow', 'rerank', 'fusion']" and out[1] == "False"
    stages_source = (ROOT / "irglow" / "stages.py").read_text() + (ROOT / "irglow" / "pipeline.py").read_text()
    assert "getattr(" not in stages_source and "removesuffix" not in stages_source and "import_module" not in \
        stages_source
    from irglow.cli import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices  # noqa: SLF001
    assert {"twbert", "glow", "monobert", "nrmf", "rerank"} <= set(commands)


def test_the_lexical_qld_system_equals_pyserini_qld_and_is_tuned_in_a_fusion(tmp_path, monkeypatch):
    """Issue 61: query likelihood as a [lexical] system (``qld``, Pyserini's name) ranks as Pyserini's ``set_qld``
    searcher (same documents, scores to 4 decimals, as Pyserini rounds), and has a lexical run's rights: a fusion
    with it tunes its weight on the training queries.  The docs' example stage (``[ql]``, irglow/lexical/ql.py)
    takes ``[lexical] mu`` and writes the same run: one query-likelihood path, one μ, whichever door."""
    from irglow.data.collection import load_collection
    from irglow.index.lucene_index import IndexConfig, build_index
    from irglow.outputs import read_results
    from irglow.pipeline import run_pipeline
    from irglow.runs.trec import Run

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="RM3 is offered for bm25, bm25-mf"):
        run_pipeline(small_pipeline(tmp_path / "out", tmp_path / "data", systems=("qld-rm3",)))
    config = small_pipeline(tmp_path / "out", tmp_path / "data", systems=("bm25", "qld"), depth=20,
                            fusion={"enabled": True, "runs": ["bm25+qld"]}, ql={"enabled": True})
    config["lexical"]["mu"] = 500.0
    run_pipeline(config)
    ours = Run.read(tmp_path / "out" / "qld.run")
    assert Run.read(tmp_path / "out" / "ql.run").ranking == ours.ranking
    searcher = build_index(load_collection(SMALL_DEMO), IndexConfig(threads=1), root=tmp_path / "data").searcher()
    searcher.set_qld(500.0)
    for q in load_collection(SMALL_DEMO).queries("test"):
        theirs = [(h.docid, round(h.score, 4)) for h in searcher.search(q.text, 20)]
        mine = [(d, round(s, 4)) for d, s in ours.ranking.get(q.query_id, [])]
        assert sorted(s for _, s in mine) == pytest.approx(sorted(s for _, s in theirs), abs=2e-4)
        scores = [s for _, s in theirs]
        unique = {d: s for d, s in theirs if scores.count(s) == 1}
        assert {d: s for d, s in mine if d in unique} == pytest.approx(unique, abs=2e-4)
    fused = read_results(tmp_path / "out")["fusion:bm25+qld"]
    assert fused.method == "wsum" and fused.tuning_set == "training" and fused.tuning_queries > 0


@pytest.mark.slow
def test_experiment_example_runs_and_is_cached_like_irglow_run(tmp_path, monkeypatch):
    """The README's Experiment example, on the demo collection (TW-BERT trained for one short epoch)."""
    from irglow import Experiment

    monkeypatch.chdir(tmp_path)
    exp = Experiment(SMALL_DEMO, systems=["bm25", "bm25f", "twbert"], measures="nDCG@10 R@100", baseline="bm25",
                     settings={"twbert.epochs": 1, "twbert.candidates": 10, "twbert.rm3": False,
                               "index.threads": 1, "lexical.depth": 50}, out=tmp_path / "exp")
    assert exp.check() == ["bm25", "bm25f", "twbert"]  # only what was asked: no bm25-ngram
    cmp = exp.run()
    assert list(cmp.table().index) == ["bm25", "bm25f", "twbert"] and list(cmp.means.columns) == ["nDCG@10", "R@100"]
    per_query = cmp.per_query("nDCG@10")
    assert list(per_query.columns) == ["bm25", "bm25f", "twbert"] and len(per_query) == cmp.n_queries
    assert per_query.mean().round(10).to_dict() == cmp.means["nDCG@10"].round(10).to_dict()
    pairs = cmp.pairs()
    assert list(pairs.index) == ["bm25", "bm25f", "twbert"] and pairs.shape == (3, 3)
    again = Experiment.load(exp.save(tmp_path / "exp.yaml"))
    assert again.config == exp.config
    assert again.run().means.equals(cmp.means)
    stages = json.loads((tmp_path / "exp" / "manifest.json").read_text())["stages"]
    assert set(stages.values()) == {"reused"}


def test_experiment_names_an_unknown_system():
    from irglow import Experiment

    with pytest.raises(ValueError, match="'bm26' is not a run irglow can make"):
        Experiment("demo", systems=["bm25", "bm26"])


@pytest.mark.slow
def test_rerankers_rerank_the_first_stage_they_are_given_and_learn_from_it(tmp_path, monkeypatch):
    """Issue 33.2: each re-ranker re-ranks its own first stage — ``[rerank] first_stage`` for all, a variant's
    own ``first_stage`` — and learns from it: NRM-F over BM25 and NRM-F over TW-BERT side by side, the latter's
    hard negatives and validation candidates from TW-BERT's run of the training queries.  Each model is its own
    cached unit: changing one re-runs only that one."""
    from irglow.models.checkpoints import read_training
    from irglow.pipeline import run_pipeline
    from irglow.runs.trec import Run

    monkeypatch.chdir(tmp_path)
    config = small_pipeline(
        tmp_path / "out", tmp_path / "data", systems=("bm25",), depth=30,
        twbert={"enabled": True, "rm3": False, "epochs": 1, "candidates": 10, "eval_every": 0},
        rerank={"enabled": True, "models": ["nrmf", "nrmf-tw"], "depth": 10,
                "nrmf": {"epochs": 1, "val_depth": 10, "negatives": 2, "batch_queries": 4},
                "variants": {"nrmf-tw": {"kind": "nrmf", "first_stage": "twbert"}}})
    run_pipeline(config)
    out = tmp_path / "out"
    for first, reranked in (("twbert", "nrmf-tw"), ("bm25", "nrmf")):
        base, rr = Run.read(out / f"{first}.run"), Run.read(out / f"{reranked}.run")
        for q, docs in base.ranking.items():
            assert {d for d, _ in rr.ranking[q][:10]} == {d for d, _ in docs[:10]}
    assert Run.read(out / "nrmf.run").ranking != Run.read(out / "nrmf-tw.run").ranking
    # TW-BERT's run of the training queries is made when the re-ranker trains (Stage.run_of), not written beside
    # the test runs (issue 68.2); the model records that it learned from it
    assert not (out / "training").exists()
    from irglow.outputs import read_results

    results = read_results(out)
    assert {n: results[f"rerank:{n}"].first_stage for n in ("nrmf", "nrmf-tw")} == {"nrmf": "bm25", "nrmf-tw": "twbert"}
    assert read_training(results["rerank:nrmf-tw"].model)["first_stage"] == "twbert"
    assert read_training(results["rerank:nrmf"].model)["first_stage"] == "bm25"
    assert "training/twbert" not in (out / "results.md").read_text()
    config["rerank"]["variants"]["nrmf-tw"]["lr"] = 0.002
    # the same model over another first stage: trains nothing, re-ranks TW-BERT's top 10 with nrmf's weights
    config["rerank"]["models"].append("nrmf-on-tw")
    config["rerank"]["variants"]["nrmf-on-tw"] = {"kind": "nrmf", "first_stage": "twbert", "model_of": "nrmf"}
    run_pipeline(config)
    stages = json.loads((out / "manifest.json").read_text())["stages"]
    assert stages["rerank:nrmf"] == "reused" and stages["rerank:nrmf-tw"] == "ran" and stages["rerank:nrmf-on-tw"] == "ran"
    results = read_results(out)
    assert results["rerank:nrmf-on-tw"].model == results["rerank:nrmf"].model
    assert results["rerank:nrmf-on-tw"].first_stage == "twbert"
    on_tw, twbert = Run.read(out / "nrmf-on-tw.run"), Run.read(out / "twbert.run")
    for q, docs in twbert.ranking.items():
        assert {d for d, _ in on_tw.ranking[q][:10]} == {d for d, _ in docs[:10]}
    config["rerank"]["variants"]["nrmf-on-tw"]["model_of"] = "nrmf-tw"
    with pytest.raises(ValueError, match="model_of = 'nrmf-tw' must name a re-ranker"):
        run_pipeline({**config, "rerank": {**config["rerank"], "variants": {
            **config["rerank"]["variants"], "nrmf-tw": {"kind": "nrmf", "model_of": "nrmf"}}}})


def test_a_first_stage_the_plan_does_not_make_is_named_any_other_is_taken(tmp_path):
    from irglow.plan import check_config

    config = small_pipeline(tmp_path / "o", tmp_path / "d", systems=("bm25",),
                            rerank={"enabled": True, "models": ["nrmf"], "first_stage": "bm25f"})
    with pytest.raises(ValueError, match=r"rerank.first_stage = 'bm25f' is not a run of this configuration; its runs: "
                                         r"bm25$"):
        check_config(config)
    config["glow"] = {"enabled": True, "variants": ["glow"]}  # a dense run, whose stage writes no training run
    config["rerank"]["first_stage"] = "glow"
    assert check_config(config) == ["bm25", "glow", "nrmf"]


def test_the_all_runs_fusion_fuses_every_tunable_run_at_the_end(tmp_path, monkeypatch):
    """Issue 33.3 (the code path): fusion.runs = ["all"] — every lexical run and every model run with a held-out
    run, weights by coordinate ascent on the queries all of them held out; a row named `all`."""
    from irglow.pipeline import run_pipeline

    monkeypatch.chdir(tmp_path)
    config = small_pipeline(
        tmp_path / "out", tmp_path / "data", systems=("bm25", "bm25f"), depth=30,
        twbert={"enabled": True, "rm3": False, "epochs": 1, "candidates": 10, "eval_every": 0},
        rerank={"enabled": True, "models": ["nrmf"], "depth": 10,
                "nrmf": {"epochs": 1, "val_depth": 10, "negatives": 2, "batch_queries": 4}},
        fusion={"enabled": True, "runs": ["bm25f+twbert", "all"]})
    cmp = run_pipeline(config).comparison
    assert list(cmp.means.index)[-1] == "all" and "bm25f+twbert" in cmp.means.index
    from irglow.outputs import read_results

    fused = read_results(tmp_path / "out")["fusion:all"]
    assert fused.method == "wsum" and len(fused.weights) == 5  # bm25, bm25f, bm25-ngram, twbert, nrmf
    assert sum(fused.weights) == pytest.approx(1.0, abs=1e-4)
    assert re.search(r"- all: wsum fusion, weights bm25 [\d.]+, bm25f [\d.]+, bm25-ngram [\d.]+, twbert [\d.]+, "
                     r"nrmf [\d.]+ \(tuned on", (tmp_path / "out" / "results.md").read_text())


def test_a_hybrid_object_fuses_with_its_own_method_or_fixed_weights(tmp_path, monkeypatch):
    """Fusion objects through the pipeline: fixed weights are used as given (nothing tuned: equal to fusing the two
    runs by hand), a fusion's own method overrides [fusion]'s (wsum by default)."""
    from irglow import Experiment, Fusion, Lexical
    from irglow.runs.fusion import fuse
    from irglow.runs.trec import Run

    monkeypatch.setenv("IRGLOW_DATA", str(tmp_path / "data"))
    bm25 = Lexical("bm25")
    exp = Experiment(SMALL_DEMO, systems=[bm25, Fusion([bm25, Lexical("bm25f")], weights=[0.25, 0.75]),
                                          Fusion([bm25, Lexical("tfidf")], method="rrf")], out=tmp_path / "exp",
                     settings={"lexical.depth": 50})
    cmp = exp.run()
    assert list(cmp.means.index) == ["bm25", "bm25+bm25f", "bm25+tfidf"]
    out = tmp_path / "exp"
    by_hand = fuse([Run.read(out / "bm25.run"), Run.read(out / "bm25f.run")], "wsum", "min-max", [0.25, 0.75],
                   depth=50, tag="bm25+bm25f")
    assert Run.read(out / "bm25+bm25f.run").ranking == by_hand.ranking
    from irglow.outputs import read_results

    results = read_results(out)
    assert results["fusion:bm25+bm25f"].why == "fixed weights"
    rrf = results["fusion:bm25+tfidf"]  # [fusion]: wsum
    assert rrf.method == "rrf" and rrf.weights == [1.0, 1.0]  # issue 59.16: rrf tunes nothing (was 0/1)
    assert Run.read(out / "bm25+tfidf.run").ranking == fuse([Run.read(out / "bm25.run"), Run.read(out / "tfidf.run")],
                                                            "rrf", depth=50, tag="bm25+tfidf").ranking


@pytest.mark.parametrize("second", [{"weights": [0, 1]}, {"method": "rrf"}, {}])
def test_two_fusions_of_the_same_runs_with_other_settings_are_refused(second):
    """Issue 59.5: the second of two fusions of one tag was dropped without a word; the same fusion twice is one."""
    from irglow import Experiment, Fusion, Lexical

    b, f = Lexical("bm25"), Lexical("bm25f")
    with pytest.raises(ValueError, match=r"two fusions of bm25\+bm25f with different settings .*\{'weights': \[1, 0\]\}"):
        Experiment("demo:n_topics=20", systems=[b, Fusion([b, f], weights=[1, 0]), Fusion([b, f], **second), f])
    same = Experiment("demo:n_topics=20", systems=[b, Fusion([b, f], method="rrf"), Fusion([b, f], method="rrf")])
    assert same.config["fusion"]["runs"] == [{"runs": ["bm25", "bm25f"], "method": "rrf"}]


def test_an_experiments_config_keeps_its_output_settings_and_its_seed_argument_wins(tmp_path):
    """Issue 59.10: [output] was replaced wholesale (page = false lost) and seed= ignored under a config's seed."""
    from irglow import Experiment

    exp = Experiment("demo:n_topics=20", config={"seed": 5, "output": {"page": False, "dir": "elsewhere"}},
                     out=tmp_path / "o", seed=7)
    assert exp.config["output"] == {"page": False, "dir": str(tmp_path / "o")} and exp.config["seed"] == 7
    assert Experiment("demo:n_topics=20", config={"seed": 5}).config["seed"] == 5
    assert Experiment("demo:n_topics=20").config["seed"] == 13


def test_a_model_trained_for_one_output_folder_is_found_by_another(tmp_path, monkeypatch, caplog):
    """Trained models are kept by content in the models folder every output folder shares ($IRGLOW_MODELS): the
    same experiment run into a second folder trains nothing, writes the same runs and names the same model."""
    import logging

    from irglow import Experiment, Lexical, TWBert
    from irglow.models.training import TrainingLoop
    from tests.integration.pipelines import model_folder

    monkeypatch.chdir(tmp_path)
    epochs = []
    real_epoch = TrainingLoop._epoch

    def counted_epoch(self, *args, **kwargs):
        epochs.append(self.out)
        return real_epoch(self, *args, **kwargs)

    monkeypatch.setattr(TrainingLoop, "_epoch", counted_epoch)
    settings = {"twbert.epochs": 1, "twbert.candidates": 10, "index.threads": 1, "lexical.depth": 50}
    Experiment(SMALL_DEMO, systems=[Lexical("bm25"), TWBert()], settings=settings, out=tmp_path / "a").run()
    trained = len(epochs)
    assert trained >= 1
    with caplog.at_level(logging.INFO, logger="irglow.models.training"), \
            caplog.at_level(logging.INFO, logger="irglow.models.twbert.stage"):
        Experiment(SMALL_DEMO, systems=[Lexical("bm25"), TWBert()], settings=settings, out=tmp_path / "b").run()
    assert len(epochs) == trained  # found trained: not one more epoch
    assert "found trained" in caplog.text and "resuming" not in caplog.text
    assert model_folder(tmp_path / "a", "twbert") == model_folder(tmp_path / "b", "twbert")
    assert model_folder(tmp_path / "a", "twbert").parent.parent == tmp_path / "models"  # shared, in neither folder
    assert not list((tmp_path / "b").glob("*-train"))
    assert (tmp_path / "a" / "twbert.run").read_bytes() == (tmp_path / "b" / "twbert.run").read_bytes()


def test_an_experiment_runs_what_its_systems_need_whatever_its_config_switches_on(tmp_path, monkeypatch):
    """Issue 81.3: config= supplies settings; its [...] enabled switches and run lists say what `irglow run` compares,
    not what an Experiment given other systems runs."""
    from irglow import Dense, Experiment, Lexical, MonoBERT, TWBert

    monkeypatch.chdir(tmp_path)
    exp = Experiment(SMALL_DEMO, config="configs/demo.toml", systems=[Lexical("bm25"), Lexical("bm25f")],
                     settings={"index.threads": 1}, out=tmp_path / "out")
    assert exp.check() == ["bm25", "bm25f"]
    exp.run()
    assert sorted(p.name for p in (tmp_path / "out").glob("*.run")) == ["bm25.run", "bm25f.run"]
    assert not (tmp_path / "out" / "tuning").exists()  # no fusion, no training: nothing else was made
    # the file's settings are kept (its k1), its switches are not
    from irglow.config import load_config

    assert exp.config["lexical"]["k1"] == load_config("configs/demo.toml")["lexical"]["k1"]
    hybrid = Experiment(SMALL_DEMO, config="configs/demo.toml",
                        systems=[TWBert(), (Lexical("bm25f") + Dense("glow")) >> MonoBERT()])
    assert sorted(hybrid.check()) == ["bm25f", "bm25f+glow", "glow", "monobert(bm25f+glow)", "twbert"]
    again = Experiment.load(hybrid.save(tmp_path / "hybrid.yaml"))
    assert again.rankers == hybrid.rankers and again.check() == hybrid.check()
