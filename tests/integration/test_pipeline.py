"""The pipeline (irglow.pipeline) over its stage cache: a killed pipeline resumes to byte-identical runs; models
train on other or several collections; and between two runs into one folder (a query's text, a training judgment,
the corpus with its size and mtime kept, a setting edited) exactly the stages that read what changed run again,
every table equal to a run into an empty folder."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

from tests.integration.pipelines import beir_from_demo, model_folder, small_pipeline


def _config(folder, out, data, b=0.4) -> dict:
    return {"seed": 13, "data_dir": str(data),
            "collection": {"name": str(folder), "train_split": "train", "test_split": "test"},
            "index": {"threads": 1}, "lexical": {"systems": ["bm25", "bm25f"], "depth": 30, "b": b},
            "eval": {"measures": ["nDCG@10", "AP"], "baseline": "bm25"}, "output": {"dir": str(out)},
            "rerank": {"enabled": True, "models": ["nrmf"], "depth": 10,
                       "nrmf": {"epochs": 1, "val_depth": 10, "negatives": 2, "batch_queries": 4,
                                "model": {"embedding_dim": 8, "filters": 8, "dim": 8, "hidden": 8,
                                          "hash_buckets": 1000}}}}


def _stages(out) -> dict:
    return json.loads((out / "manifest.json").read_text())["stages"]




def _same_as_fresh(tmp_path, folder, config_b, out, n) -> None:
    from irglow.pipeline import run_pipeline

    fresh = tmp_path / f"fresh{n}"
    run_pipeline(_config(folder, fresh, tmp_path / f"data{n}", b=config_b))
    assert _outputs(out) == _outputs(fresh)


def _outputs(out) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.glob("*.run")) + [out / "results.csv"]}


def _runs(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.run"))}


def _pipeline_resume_config(out, data) -> dict:
    return small_pipeline(out, data, rerank={"enabled": True, "models": ["nrmf"], "depth": 10,
                                             "nrmf": {"epochs": 2, "val_depth": 10, "negatives": 2,
                                                      "batch_queries": 4}})


@pytest.mark.slow
def test_exactly_the_dependent_stages_rerun(tmp_path, monkeypatch):
    from irglow.pipeline import run_pipeline

    monkeypatch.chdir(tmp_path)
    folder, out, data = tmp_path / "c", tmp_path / "out", tmp_path / "data"
    beir_from_demo(folder)
    run_pipeline(_config(folder, out, data))
    assert set(_stages(out).values()) == {"ran"}
    run_pipeline(_config(folder, out, data))
    assert set(_stages(out).values()) == {"reused"}

    # a test query's text: every stage searches the test queries
    test_qid = (folder / "qrels" / "test.tsv").read_text().splitlines()[1].split("\t")[0]
    lines = [json.loads(x) for x in (folder / "queries.jsonl").read_text().splitlines()]
    for q in lines:
        if q["_id"] == test_qid:
            q["text"] = q["text"].split()[0]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in lines))
    run_pipeline(_config(folder, out, data))
    assert _stages(out) == {"lexical:bm25": "ran", "lexical:bm25f": "ran", "rerank:nrmf": "ran"}
    _same_as_fresh(tmp_path, folder, 0.4, out, 1)

    # a training judgment: only the stage that trains on it
    train = (folder / "qrels" / "train.tsv").read_text().splitlines()
    (folder / "qrels" / "train.tsv").write_text("\n".join(train[:-1]) + "\n")
    run_pipeline(_config(folder, out, data))
    assert _stages(out) == {"lexical:bm25": "reused", "lexical:bm25f": "reused", "rerank:nrmf": "ran"}
    inputs = json.loads((model_folder(out, "nrmf") / "inputs.json").read_text())["inputs"]["source"]
    from irglow.data.beir import BeirCollection
    from irglow.utils.digest import qrels_digest

    assert inputs["qrels"] == qrels_digest(BeirCollection(folder).qrels("train"))  # retrained on the new qrels
    _same_as_fresh(tmp_path, folder, 0.4, out, 2)

    # the corpus, same size and mtime (cp -p, rsync -a, tar)
    corpus = folder / "corpus.jsonl"
    stat = corpus.stat()
    text = corpus.read_text()
    word = json.loads(text.splitlines()[0])["title"].split()[0]
    corpus.write_text(text.replace(word, word[::-1]))
    os.utime(corpus, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert corpus.stat().st_size == stat.st_size
    run_pipeline(_config(folder, out, data))
    assert set(_stages(out).values()) == {"ran"}
    _same_as_fresh(tmp_path, folder, 0.4, out, 3)

    # a setting: the lexical stages and the re-ranker fed by bm25
    run_pipeline(_config(folder, out, data, b=0.75))
    assert set(_stages(out).values()) == {"ran"}
    _same_as_fresh(tmp_path, folder, 0.75, out, 4)


@pytest.mark.slow
def test_killed_pipeline_resumes_to_byte_identical_runs(tmp_path, monkeypatch):
    import irglow.lexical.searchers as searchers
    import irglow.models.rerank.rerank as rerank_stage
    from irglow.pipeline import run_pipeline

    monkeypatch.chdir(tmp_path)  # the pipeline writes qrels/ under the working directory
    data = tmp_path / "data"
    whole = run_pipeline(_pipeline_resume_config(tmp_path / "whole", data)).out
    assert set(_runs(whole)) == {"bm25.run", "bm25f.run", "nrmf.run"}

    real_rerank = rerank_stage.rerank

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(rerank_stage, "rerank", killed)
    out = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        run_pipeline(_pipeline_resume_config(out, data))
    assert set(_runs(out)) == {"bm25.run", "bm25f.run"}  # the lexical stages finished before the kill

    monkeypatch.setattr(rerank_stage, "rerank", real_rerank)

    class NoSearch:  # the restart must not search again
        def __init__(self, *args, **kwargs):
            raise AssertionError("a finished lexical stage ran again")

    monkeypatch.setattr(searchers, "LexicalSearcher", NoSearch)
    run_pipeline(_pipeline_resume_config(out, data))
    assert _runs(out) == _runs(whole)
    stages = json.loads((out / "manifest.json").read_text())["stages"]
    assert stages == {"lexical:bm25": "reused", "lexical:bm25f": "reused", "rerank:nrmf": "ran"}

    changed = _pipeline_resume_config(out, data)
    changed["rerank"]["depth"] = 5
    run_pipeline(changed)
    stages = json.loads((out / "manifest.json").read_text())["stages"]
    assert stages == {"lexical:bm25": "reused", "lexical:bm25f": "reused", "rerank:nrmf": "ran"}
    assert _runs(out)["bm25.run"] == _runs(whole)["bm25.run"] and _runs(out)["nrmf.run"] != _runs(whole)["nrmf.run"]

    again = copy.deepcopy(changed)
    run_pipeline(again)
    assert json.loads((out / "manifest.json").read_text())["stages"]["rerank:nrmf"] == "reused"


def test_models_can_train_on_another_collection(tmp_path, monkeypatch):
    """collection.train: the evaluated collection's training split is never read; the trainer's recorded
    inputs name the other collection's index (what `make bench-twbert TRAIN=a TEST=b` relies on)."""
    from irglow.pipeline import run_pipeline

    monkeypatch.chdir(tmp_path)
    config = _pipeline_resume_config(tmp_path / "zs", tmp_path / "data")
    config["collection"]["train"] = "demo:n_topics=14,docs_per_topic=4,n_roundups=10,n_background=10"
    config["rerank"]["nrmf"]["epochs"] = 1
    out = run_pipeline(config).out
    inputs = json.loads((model_folder(out, "nrmf") / "inputs.json").read_text())["inputs"]["source"]
    assert inputs["index"].startswith("demo-s13-t14-") and (out / "nrmf.run").is_file()


@pytest.mark.slow
def test_models_can_train_on_several_collections_at_once(tmp_path, monkeypatch):
    """collection.train = ["a@train", "b@train"]: every trainer gets one union of the sources (ids prefixed by
    source), so its batches and held-out queries come from both; the evaluated collection is another one."""
    from irglow.data.collection import load_collection
    from irglow.models.checkpoints import read_training
    from irglow.pipeline import run_pipeline

    monkeypatch.chdir(tmp_path)
    a = "demo:n_topics=14,docs_per_topic=4,n_roundups=10,n_background=10"
    b = "demo:seed=7,n_topics=10,docs_per_topic=4,n_roundups=10,n_background=10"
    config = _pipeline_resume_config(tmp_path / "multi", tmp_path / "data")
    config["collection"]["train"] = [f"{a}@train", f"{b}@train"]
    config["rerank"]["nrmf"].update(epochs=1, val_fraction=0.3)
    config["twbert"] = {"enabled": True, "rm3": False, "epochs": 1, "candidates": 10, "eval_every": 0,
                        "val_fraction": 0.3}
    out = run_pipeline(config).out
    judged = {f"{k}/{r.query_id}" for k, spec in enumerate((a, b)) for r in load_collection(spec).qrels("train")
              if r.relevance > 0}
    for model in ("nrmf", "twbert"):
        keyed = model_folder(out, model)
        assert json.loads((keyed / "inputs.json").read_text())["inputs"]["source"]["index"].startswith("union-")
        info = read_training(keyed / "best")
        held_out = set(info["val_query_ids"])
        assert held_out <= judged and {q.split("/")[0] for q in held_out} == {"0", "1"}
        assert info["train_queries"] + info["val_queries"] == len(judged)
    assert {p.stem for p in out.glob("*.run")} == {"bm25", "bm25f", "nrmf", "bm25-ngram", "twbert"}


def test_configured_field_weight_on_a_missing_field_is_refused(tmp_path):
    """Issue 50: lexical.field_weights = {titel = 2} was dropped silently (the run weighted no title); now it is
    refused, naming the field and the index's fields, before any run is written."""
    from tests.integration.pipelines import small_pipeline
    from irglow.pipeline import run_pipeline

    config = small_pipeline(tmp_path / "out", tmp_path / "data")
    config["lexical"]["field_weights"] = {"titel": 2.0, "body": 1.0}
    with pytest.raises(ValueError, match=r"names \['titel'\].*its fields: \['title'"):
        run_pipeline(config)
    assert not list((tmp_path / "out").glob("*.run"))


def test_twbert_cross_validation_reads_no_judgment_of_the_evaluated_split(tmp_path, monkeypatch):
    """Issue 53: the whole pipeline with ``twbert.folds = 2``.  TW-BERT is given the training split's judgments
    alone; its folds and the choice of length happen before any judgment of the test split is read; and what
    the folds held out are training queries."""
    from irglow.data.collection import load_collection
    from irglow.data.demo import DemoCollection
    from irglow.models.checkpoints import read_training
    from irglow.models.twbert import train as twbert_train
    from irglow.pipeline import run_pipeline
    from tests.integration.pipelines import small_pipeline

    events: list[str] = []
    qrels, train = DemoCollection.qrels, twbert_train.Trainer.train

    def read(self, split="test"):
        events.append(f"qrels:{split}")
        return qrels(self, split)

    def watched(self, index, stats, queries, judged, resume=True):
        events.append("training")
        given.update(r.query_id for r in judged)
        kept = train(self, index, stats, queries, judged, resume)
        events.append("trained")
        return kept

    given: set[str] = set()
    monkeypatch.setattr(DemoCollection, "qrels", read)
    monkeypatch.setattr(twbert_train.Trainer, "train", watched)
    from irglow.models.twbert.model import TWBert

    loaded, load = [], TWBert.load
    monkeypatch.setattr(TWBert, "load", classmethod(lambda cls, path: loaded.append(Path(path)) or load(path)))
    config = small_pipeline(tmp_path / "out", tmp_path / "data", systems=("bm25",), twbert={
        "enabled": True, "rm3": False, "candidates": 10, "eval_every": 2, "folds": 2, "fold_steps": 2,
        "model": {"max_query_tokens": 32}}, fusion={"enabled": True, "runs": ["bm25+twbert"]})
    out = run_pipeline(config).out
    assert events.count("training") == 1 and "qrels:test" in events
    assert "qrels:test" not in events[: events.index("trained")]
    keyed = model_folder(out, "twbert")
    held = set().union(*(read_training(keyed / "folds" / f"fold-{i}" / "best")["val_query_ids"] for i in (1, 2)))
    test_ids = {r.query_id for r in load_collection(config["collection"]["name"]).qrels("test")}
    assert held and held <= given and test_ids and not given & test_ids
    # the fusion is tuned out of fold: each training query's twbert run is its fold model's, not the final model's
    from irglow.runs.trec import Run

    from irglow.models.twbert.search import twbert_search, weigh_queries
    from irglow.preparation import prepare

    assert [p.parent.name for p in loaded if p.parent.name.startswith("fold-")] == ["fold-1", "fold-2"]

    tuning = Run.read(out / "tuning" / "twbert.run")
    assert set(tuning.ranking) == held
    index = prepare(config).source.index
    for i in (1, 2):
        fold_dir = keyed / "folds" / f"fold-{i}" / "best"
        queries = [q for q in load_collection(config["collection"]["name"]).queries("train")
                   if q.query_id in set(read_training(fold_dir)["val_query_ids"])]
        fold_model = TWBert.load(fold_dir)
        expected = twbert_search(fold_model, index, queries, depth=50, tag="twbert",
                                 weighted=weigh_queries(fold_model, index, queries))
        assert all([d for d, _ in tuning.ranking[q.query_id]] == [d for d, _ in expected.ranking[q.query_id]]
                   for q in queries)
    from irglow.outputs import read_results

    fused = read_results(out)["fusion:bm25+twbert"]
    assert fused.method == "wsum" and fused.tuning_queries > 0  # tuned, not the RRF of a model with no held-out run


def test_the_results_page_is_written_unless_output_page_is_false(tmp_path):
    """``[output] page = false`` (the regression matrix's default): tables, plots and manifest, no report.html —
    and a page an earlier run left there is removed, not shown as this run's."""
    from irglow.pipeline import run_pipeline

    config = small_pipeline(tmp_path / "out", tmp_path / "data", systems=("bm25",))
    run_pipeline(config)
    assert (tmp_path / "out" / "report.html").is_file()
    run_pipeline({**config, "output": {**config["output"], "page": False}})
    assert not (tmp_path / "out" / "report.html").exists()
    assert {"results.md", "results.csv", "manifest.json"} <= {p.name for p in (tmp_path / "out").iterdir()}
