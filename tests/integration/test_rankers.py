"""Issue 54: rankers are objects that compose and nest.  One Experiment over every kind — lexical, QL, TW-BERT, a
dense encoder, re-rankings (over QL, over a fusion holding another re-ranking) and fusions — runs through the
pipeline (a re-ranking of a fusion waits for it), and ``irglow.pyterrier.transformer`` builds PyTerrier
pipelines from the same objects that rank as the run files the pipeline wrote."""

from __future__ import annotations

import json

import pytest

from irglow.runs.trec import Run
from tests.integration.pipelines import SMALL_DEMO
from tests.integration.torchrun import tiny_bert


@pytest.fixture(scope="module")
def experiment(module_tmp):
    from irglow import NRMF, QL, Dense, Experiment, Fusion, Lexical, MonoBERT, Rerank, TWBert

    tmp = module_tmp
    bert = tiny_bert(tmp / "bert")
    tiny = {"epochs": 1, "val_depth": 10, "negatives": 2, "batch_queries": 4}
    nrmf = NRMF(**tiny, model={"embedding_dim": 8, "filters": 8, "dim": 8, "hidden": 8, "hash_buckets": 1000})
    over_ql = Rerank(QL(), nrmf)
    mix = Lexical("bm25") + over_ql + Dense("glow")
    mono = MonoBERT(max_steps=2, val_depth=5)
    rankers = [Lexical("bm25"), QL(), TWBert(), Dense("glow"), over_ql, TWBert() + QL(), mix, Rerank(mix, mono),
               Rerank(QL(), mono), Rerank(over_ql, nrmf),  # issue 61: monobert(ql), nrmf(nrmf(ql))
               # issue 61: fusions as tuned parts of fusions, one tuned (twbert+ql), one reciprocal-rank (bm25+bm25f)
               Fusion([TWBert() + QL(), Dense("glow")]),
               Fusion([Fusion([Lexical("bm25"), Lexical("bm25f")], method="rrf"), TWBert()]),
               Rerank(TWBert(), nrmf)]  # issue 68.2: learns from TW-BERT's run of the training queries, made on demand
    exp = Experiment(SMALL_DEMO, systems=rankers, out=tmp / "out", settings={
        "data_dir": str(tmp / "data"), "lexical.depth": 30, "rerank.depth": 10, "output.clusters": 0,
        "twbert.epochs": 1, "twbert.candidates": 10, "twbert.batch_queries": 4, "twbert.model.base_model": bert,
        "glow.max_steps": 2, "glow.batch_size": 4, "glow.model.base_model": bert,
        "rerank.monobert.model.base_model": bert, "rerank.monobert.model.default_field_tokens": 16})
    return exp, exp.run(), tmp / "out"


def test_every_kind_nested_runs_through_the_pipeline(experiment):
    from irglow import Lexical, TWBert
    from irglow.models.checkpoints import read_training
    from irglow.outputs import read_results

    exp, cmp, out = experiment
    assert exp.systems == ["bm25", "ql", "twbert", "glow", "nrmf(ql)", "twbert+ql", "bm25+nrmf(ql)+glow",
                           "monobert(bm25+nrmf(ql)+glow)", "monobert(ql)", "nrmf(nrmf(ql))", "(twbert+ql)+glow",
                           "(bm25+bm25f)+twbert", "nrmf(twbert)"]
    assert list(cmp.means.index) == exp.systems
    stages = json.loads((out / "manifest.json").read_text())["stages"]
    order = list(stages)  # the re-ranking of the fusion ran once the fusion existed, after the re-ranking it holds
    assert order.index("rerank:nrmf(ql)") < order.index("fusion:bm25+nrmf(ql)+glow") \
        < order.index("rerank:monobert(bm25+nrmf(ql)+glow)")
    results = read_results(out)
    assert read_training(results["rerank:nrmf(ql)"].model)["first_stage"] == "ql"  # QL's run of the training queries
    # TW-BERT's, which its stage makes when the re-ranker asks (Stage.run_of): no stage writes a training run
    assert read_training(results["rerank:nrmf(twbert)"].model)["first_stage"] == "twbert"
    assert not (out / "training").exists()
    # results are asked for by node: the manifest says which unit made each run (issue 68.5)
    from irglow.pyterrier import RunFolder

    units = json.loads((out / "manifest.json").read_text())["results"]
    # a unit per node (named by its stage and run), and only the nodes asked for: TWBert() is twbert's run, not
    # bm25-ngram's too
    assert {"fusion:twbert+ql", "twbert", "rerank:nrmf(ql)"} <= set(units) and "twbert:bm25-ngram" not in units
    folder = RunFolder(out)
    assert folder.result(folder.ranker("nrmf(ql)")) == results["rerank:nrmf(ql)"]
    assert folder.result(TWBert()) == results["twbert"] and folder.result(Lexical("bm25")) is None
    # issue 80.3: a ranker named as a run the folder made, but another ranker, is not given that run's model
    from dataclasses import replace

    from irglow import Rerank

    liar = replace(Rerank(Lexical("bm25"), folder.ranker("nrmf(ql)").model), name="nrmf(ql)")
    with pytest.raises(ValueError, match=r"made no .*: its run 'nrmf\(ql\)' is "):
        folder.result(liar)
    # a fusion's: none
    assert read_training(results["rerank:monobert(bm25+nrmf(ql)+glow)"].model)["first_stage"] == "bm25"
    # QL is tuned like any ranker (its run of the judged training queries), not left to reciprocal rank
    for tag in ("twbert+ql", "bm25+nrmf(ql)+glow", "(twbert+ql)+glow", "(bm25+bm25f)+twbert"):
        info = results[f"fusion:{tag}"]
        assert info.method == "wsum" and info.tuning_queries > 0 and info.tuning_set == "held-out training", info
    # a tuned fusion inside another gives it its cross-fitted run of the queries TW-BERT held out (no query fused
    # with weights its own judgments chose: tests/unit/test_fusion.py); a reciprocal-rank one searches any query
    # as its Lucene parts do, so it writes none
    held = Run.read(out / "tuning" / "twbert+ql.run")
    assert set(held.ranking) == set(Run.read(out / "tuning" / "twbert.run").ranking)
    assert results["fusion:(twbert+ql)+glow"].tuning_queries <= len(held.ranking)
    assert not (out / "tuning" / "bm25+bm25f.run").exists() and results["fusion:bm25+bm25f"].method == "rrf"
    # `irglow run` on the experiment saved as a file makes the same runs: every unit found made, under its key
    from irglow.cli import main

    before = {p.name: p.read_bytes() for p in out.glob("*.run")}
    assert main(["run", "--config", str(exp.save(out.parent / "every-kind.yaml"))]) == 0
    assert set(json.loads((out / "manifest.json").read_text())["stages"].values()) == {"reused"}
    assert {p.name: p.read_bytes() for p in out.glob("*.run")} == before


def _shape(ranker) -> tuple:
    return type(ranker).__name__, ranker.tag, tuple(_shape(p) for p in ranker.parts)


def test_binding_the_experiment_yields_its_ranker_tree_with_object_edges(experiment):
    """Issue 61.1: the plan's graph is the experiment's rankers, rebuilt by each stage from its bound settings
    (a node of each kind as the user wrote it, parts and all), and a part is the graph's own node, not a copy:
    the scheduler follows those objects."""
    from irglow.config import SealedConfig
    from irglow.plan import bind_plan

    exp, _, _ = experiment
    graph = bind_plan(SealedConfig(exp.config)).graph
    assert list(graph) == list(dict.fromkeys([*graph]))  # one node per run
    for ranker in exp.rankers:
        assert _shape(graph[ranker.tag]) == _shape(ranker)
    assert graph["monobert(bm25+nrmf(ql)+glow)"].first is graph["bm25+nrmf(ql)+glow"]
    assert graph["bm25+nrmf(ql)+glow"].rankers[1] is graph["nrmf(ql)"]
    assert graph["nrmf(nrmf(ql))"].first is graph["nrmf(ql)"] and graph["nrmf(ql)"].first is graph["ql"]
    assert graph["(twbert+ql)+glow"].rankers[0] is graph["twbert+ql"]


def test_pyterrier_pipelines_built_from_the_same_rankers_rank_as_the_runs(experiment):
    pytest.importorskip("pyterrier", reason="the PyTerrier extra is not installed")
    import pandas as pd

    from irglow.data.collection import load_collection
    from irglow.pyterrier import frame_to_run, transformer

    exp, _, out = experiment
    topics = pd.DataFrame([(q.query_id, q.text) for q in load_collection(SMALL_DEMO).queries("test")],
                          columns=["qid", "query"])
    for ranker in exp.rankers:
        built = frame_to_run(transformer(ranker, out).transform(topics))
        written = Run.read(out / f"{ranker.tag}.run")
        depth = 10 if ranker.tag.startswith(("nrmf(", "monobert(")) else 30  # a re-ranking: its re-ranked block
        assert set(built.ranking) == set(written.ranking), ranker.tag
        for qid, ranked in written.ranking.items():
            ours = built.ranking[qid][:depth]
            assert [d for d, _ in ours] == [d for d, _ in ranked[:depth]], (ranker.tag, qid)
            assert [s for _, s in ours] == pytest.approx([s for _, s in ranked[:depth]], rel=1e-5, abs=1e-6)
    assert transformer("twbert+ql", out).transform(topics).equals(transformer(exp.rankers[5], out).transform(topics))
    with pytest.raises(ValueError, match="bm25\\+ql: the run in .* made no such fusion"):
        transformer("bm25+ql", out)
    from irglow import QL, Fusion, TWBert

    for other in ({"weights": [0, 1]}, {"method": "rrf"}):  # issue 59.6: the folder's tuned fusion is another one
        with pytest.raises(ValueError, match=r"twbert\+ql: the run in .* fused it with the \[fusion\] defaults \(wsum"):
            transformer(Fusion([TWBert(), QL()], **other), out)


def test_a_reranking_of_a_reranking_runs(tmp_path):
    """Issue 59.16: nrmf(nrmf(bm25f)) was refused as 'not a run of this configuration' though re-rankings nest."""
    from irglow import NRMF, Experiment, Lexical, Rerank

    tiny = {"epochs": 1, "val_depth": 10, "negatives": 2, "batch_queries": 4}
    nrmf = NRMF(**tiny, model={"embedding_dim": 8, "filters": 8, "dim": 8, "hidden": 8, "hash_buckets": 1000})
    inner = Rerank(Lexical("bm25f"), nrmf)
    exp = Experiment(SMALL_DEMO, systems=[Lexical("bm25"), Rerank(inner, nrmf)], out=tmp_path / "out", settings={
        "data_dir": str(tmp_path / "data"), "lexical.depth": 30, "rerank.depth": 10, "output.clusters": 0})
    assert exp.systems == ["bm25", "nrmf(nrmf(bm25f))"]
    exp.run()
    first, outer = (Run.read(tmp_path / "out" / f"{t}.run") for t in ("nrmf(bm25f)", "nrmf(nrmf(bm25f))"))
    for qid, ranked in first.ranking.items():  # the outer model re-orders the inner one's top 10, keeps the rest
        ours = [d for d, _ in outer.ranking[qid]]
        assert set(ours[:10]) == {d for d, _ in ranked[:10]} and ours[10:] == [d for d, _ in ranked[10:]]
    from irglow.plan import check_config

    with pytest.raises(ValueError, match="runs made of each other .*: a → b → a"):
        # (a configuration's runs: an Experiment given config= takes its settings, its systems say what runs)
        check_config({"rerank": {"enabled": True, "models": ["a", "b"], "variants": {
            "a": {"kind": "nrmf", "first_stage": "b"}, "b": {"kind": "nrmf", "first_stage": "a"}}}})
