"""`irglow zero-shot`: models trained once on one collection, every system run on others, one table;
a collection ir_datasets cannot get, or whose files cannot be read, is named in the notes and the
others still run."""

from __future__ import annotations

import json
from pathlib import Path
import os

import pytest


SOURCE = "demo:n_topics=12,docs_per_topic=4,n_roundups=10,n_background=10"
TARGET = "demo:seed=7,n_topics=10,docs_per_topic=4,n_roundups=10,n_background=10"
GATED = "disks45/nocr/trec-robust-2004"  # licence-gated: never downloadable, so never fetched by a test


def _broken_beir(folder):
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": "fine"}\nnot json\n')
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "fine"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return str(folder)


def _config(out, data, broken) -> dict:
    return {"seed": 13, "data_dir": str(data),
            "zero_shot": {"train": SOURCE, "train_split": "train",
                          "collections": [TARGET, {"name": GATED, "split": ""}, broken,
                                          {"name": SOURCE, "split": "test"}]},
            "index": {"threads": 1},
            "lexical": {"systems": ["bm25", "bm25f"], "depth": 50, "tune_bm25f": True},
            "eval": {"measures": ["nDCG@10", "AP"], "baseline": "bm25"},
            "output": {"dir": str(out)},
            "twbert": {"enabled": True, "rm3": False, "epochs": 1, "candidates": 10, "eval_every": 0,
                       "batch_queries": 4, "val_fraction": 0.2, "model": {"max_query_tokens": 16}},
            "glow": {"enabled": True, "variants": ["glow"], "max_steps": 2, "batch_size": 4,
                     "val_fraction": 0.2, "val_pool_depth": 5,
                     "model": {"num_layers": 1, "field_max_tokens": {"body": 16}}},
            "rerank": {"enabled": True, "models": ["nrmf"], "depth": 10,
                       "nrmf": {"epochs": 1, "val_depth": 10, "negatives": 2, "batch_queries": 4}},
            "fusion": {"enabled": True, "runs": ["bm25f+glow", "all"]}}


@pytest.mark.slow
def test_zero_shot_trains_once_and_writes_one_table(tmp_path, monkeypatch):
    from irglow.models.twbert import train as twbert_train
    from irglow.zero_shot import run_zero_shot

    monkeypatch.chdir(tmp_path)  # qrels/ is written under the working directory
    fits = []
    real_fit = twbert_train.Trainer.fit

    def counted_fit(self, *args, **kwargs):
        fits.append(self.out)
        return real_fit(self, *args, **kwargs)

    monkeypatch.setattr(twbert_train.Trainer, "fit", counted_fit)
    # the evaluated collection's judgments are unreadable while any stage works: the carried fusion weights
    # (and every run) come from the training collection alone; the evaluation reads them afterwards
    from irglow.data.demo import DemoCollection
    from irglow import pipeline

    in_stage, blocked_reads, evaluated_reads = [False], [], []
    real_qrels, real_unit = DemoCollection.qrels, pipeline.run_unit

    def guarded_qrels(self, split):
        if self.name.startswith("demo-s7-"):  # the target (the source is demo-s13-…)
            if in_stage[0]:
                blocked_reads.append(split)
                raise PermissionError(f"{self.name} / {split}: judgments unreadable while the stages run")
            evaluated_reads.append(split)
        return real_qrels(self, split)

    def unit_with_qrels_unreadable(*args, **kwargs):
        in_stage[0] = True
        try:
            return real_unit(*args, **kwargs)
        finally:
            in_stage[0] = False

    monkeypatch.setattr(DemoCollection, "qrels", guarded_qrels)
    monkeypatch.setattr(pipeline, "run_unit", unit_with_qrels_unreadable)
    out = run_zero_shot(_config(tmp_path / "zs", tmp_path / "data", _broken_beir(tmp_path / "broken")))

    # trained in one place, for both evaluated collections (the second call resumes a finished training)
    models = Path(os.environ["IRGLOW_MODELS"])  # the models folder every output folder shares
    assert {p.name for p in models.iterdir()} >= {"twbert-train", "glow-train", "nrmf-train"}
    keyed, = (models / "twbert-train").iterdir()  # the one folder keyed on this training's inputs
    assert set(fits) == {keyed}
    history = json.loads((keyed / "training.json").read_text())["state"]["history"]
    assert history[-1]["step"] > 0  # it trained, and only once: the resumed call added no steps
    assert len({h["step"] for h in history}) == len(history)

    target = "demo-seed=7,n_topics=10,docs_per_topic=4,n_roundups=10,n_background=10-test"
    source = "demo-n_topics=12,docs_per_topic=4,n_roundups=10,n_background=10-test"
    for column in (target, source):
        runs = {p.stem for p in (out / column).glob("*.run")}
        assert runs == {"bm25", "bm25f", "bm25-ngram", "twbert", "glow", "bm25f+glow", "nrmf", "all"}
        assert (out / column / "per-query.png").is_file() and (out / column / "training-curves.png").is_file()
        assert not any((out / column).glob("*-train"))  # no training beside a test collection
    table = (out / "zero-shot.md").read_text()
    header = table.splitlines()[2]
    assert target in header and source in header and "mean" in header and "> bm25" in header
    for system in ("bm25", "bm25f", "bm25-ngram", "twbert", "glow", "bm25f+glow", "nrmf", "all"):
        assert f"| {system} " in table
    assert "trec-robust-2004 not evaluated" in table and "disks45" in table
    assert "broken-test not evaluated: it could not be loaded (FormatError:" in table and "corpus.jsonl:2" in table
    assert f"{source} is a training collection" in table
    assert (out / "zero-shot.csv").is_file() and (out / "zero-shot.tex").is_file() and (out / "zero-shot.png").is_file()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["trained_on"][1] == "train" and len(manifest["unavailable"]) == 2
    assert set(manifest["collections"]) == {target, source}
    # `all` zero-shot: every run, its weights tuned on the training collection's held-out queries (each stage
    # wrote its run of them on the training corpus) and carried over: the very weights the in-domain column
    # tuned on the same queries
    assert blocked_reads == [] and "test" in evaluated_reads  # read, but only outside the stages
    every = ["bm25", "bm25f", "bm25-ngram", "twbert", "glow", "nrmf"]
    from irglow.outputs import read_results

    carried = read_results(out / target)["fusion:all"]
    in_domain = read_results(out / source)["fusion:all"]
    assert carried.method == in_domain.method == "wsum" and carried.parts == in_domain.parts == every
    assert carried.weights == in_domain.weights and carried.tuning_queries == in_domain.tuning_queries > 0
    assert carried.carried_from.startswith("demo-s13-") and carried.carried_from.endswith(" / train")
    assert in_domain.carried_from is None
    # the models' runs of those queries on the training corpus are kept once, under the training folder, for
    # every collection of the suite (the lexical ones search the training index: no corpus pass to keep)
    kept = sorted(p.parent.name.split("-")[0] for p in (models / "held-out-runs").glob("*/held-out.run"))
    assert kept == ["glow", "nrmf"]
    for page in ("results.md", "report.html"):  # the weights and where they were tuned, under the table and on the page
        assert "carried from demo-s13-" in (out / target / page).read_text()
