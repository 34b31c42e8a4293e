"""The reproduction matrix (irglow.regressions).  The shipped matrix's demo experiment runs on every `make test` with
all its expectations, as ``irglow regressions --tags lexical`` (its ``--help`` example:
tests/docs/test_help_examples.py); the experiments on downloaded or shared collections are `make regressions`'s (the
suite needs no collection it does not generate)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from irglow.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def data(module_tmp):
    """One data folder for the module: the demo's index is built once."""
    return module_tmp / "data"


def test_an_edited_expectation_turns_the_matrix_red_with_a_readable_diff(tmp_path, data, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    spec = yaml.safe_load((ROOT / "irglow" / "configs" / "regressions.yaml").read_text())
    demo = next(e for e in spec["experiments"] if e["name"] == "demo-lexical")
    demo["expect"] = {"bm25": {"nDCG@10": 0.7400, "AP": demo["expect"]["bm25"]["AP"]}}
    spec["experiments"] = [demo, {"name": "elsewhere", "collection": str(tmp_path / "absent"), "tags": ["lexical"],
                                  "expect": {"bm25": {"nDCG@10": 0.5}}, "optional": True}]
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(spec))
    code = main(["regressions", "--config", str(tmp_path / "r.yaml"), "-o", str(tmp_path / "out"),
                 "--data-dir", str(data)])
    out = capsys.readouterr().out
    assert code == 1
    assert "✗ 0.7363 (expected 0.7400 ± 0.0001, Δ -0.0037)" in out and "✓ 0.6219" in out
    assert "elsewhere: skipped" in out and "1 of 2 figures reproduced, 1 skipped; 1 drifted" in out


def test_collections_resolve_against_the_matrix_file_and_a_missing_one_fails(tmp_path, monkeypatch, capsys):
    """Issue 30.9: run from another folder, a matrix's relative collection paths are the file's, and a required
    collection that is not there turns the matrix red (an optional one is skipped, and said so)."""
    (tmp_path / "configs").mkdir()
    corpus = tmp_path / "coll"
    corpus.mkdir()
    (corpus / "corpus.jsonl").write_text('{"_id": "d1", "title": "a", "text": "lyme disease"}\n'
                                        '{"_id": "d2", "title": "b", "text": "other words"}\n')
    (corpus / "queries.jsonl").write_text('{"_id": "q1", "text": "lyme"}\n')
    (corpus / "qrels").mkdir()
    (corpus / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    spec = {"experiments": [
        {"name": "here", "collection": "../coll", "tags": ["lexical"], "expect": {"bm25": {"nDCG@10": 1.0}}},
        {"name": "gone", "collection": "../absent", "tags": ["lexical"], "expect": {"bm25": {"nDCG@10": 0.5}}},
        {"name": "maybe", "collection": "../absent", "tags": ["lexical"], "optional": True,
         "expect": {"bm25": {"nDCG@10": 0.5}}}]}
    (tmp_path / "configs" / "m.yaml").write_text(yaml.safe_dump(spec))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code = main(["regressions", "--config", str(tmp_path / "configs" / "m.yaml"), "-o", str(tmp_path / "out"),
                 "--data-dir", str(tmp_path / "data")])
    out = capsys.readouterr().out
    assert code == 1
    assert "here / bm25" in out and "✓ 1.0000" in out
    assert "gone / bm25" in out and "✗ collection not found" in out
    assert "maybe: skipped (optional)" in out and "1 of 2 figures reproduced, 1 skipped; 1 drifted" in out


def test_published_figures_are_pyserinis_own_and_the_matrix_agrees_with_them():
    """Issue 70.4: the reproductions page sets Pyserini's published BEIR figures beside irglow's, read from the file
    the installed Pyserini ships (never copied by hand), and every ✓ it shows holds within the tolerance."""
    from irglow.regressions import load_matrix_spec, published_figures

    flat = published_figures({"source": "pyserini-2cr-beir", "dataset": "scifact",
                              "runs": {"bm25": "bm25-flat", "bm25-mf": "bm25-multifield"}})
    assert flat["bm25"]["nDCG@10"] == 0.6789 and flat["bm25"]["R@100"] == 0.9253  # Pyserini's 2CR page, by hand
    assert flat["bm25-mf"]["nDCG@10"] == 0.6647 and flat["bm25-mf"]["R@100"] == 0.9076
    with pytest.raises(ValueError, match="no 'bm25-flat' figures for 'scifacts'"):
        published_figures({"source": "pyserini-2cr-beir", "dataset": "scifacts", "runs": {"bm25": "bm25-flat"}})
    with pytest.raises(ValueError, match="published needs source"):
        published_figures({"source": "trec", "dataset": "scifact", "runs": {}})
    compared = 0
    for e in load_matrix_spec(ROOT / "irglow" / "configs" / "regressions.yaml"):
        for run, figures in (published_figures(e["published"]) if e.get("published") else {}).items():
            for measure in set(figures) & set(e["expect"][run]):
                assert abs(figures[measure] - e["expect"][run][measure]) <= e["tolerance"], (e["name"], run, measure)
                compared += 1
    assert compared >= 4


def test_an_id_with_a_local_folder_runs_the_folder_and_an_id_that_cannot_be_had_is_skipped(tmp_path, monkeypatch,
                                                                                          capsys):
    """``folder:`` is the same collection on this machine (no download); an ir_datasets id that cannot be loaded
    here is skipped when optional, with the reason, not a traceback."""
    from irglow.regressions import load_matrix_spec

    corpus = tmp_path / "coll"
    (corpus / "qrels").mkdir(parents=True)
    (corpus / "corpus.jsonl").write_text('{"_id": "d1", "title": "a", "text": "lyme disease"}\n')
    (corpus / "queries.jsonl").write_text('{"_id": "q1", "text": "lyme"}\n')
    (corpus / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    spec = {"experiments": [
        {"name": "local", "collection": "beir/not-a-collection", "folder": "coll", "tags": ["lexical"],
         "expect": {"bm25": {"nDCG@10": 1.0}}},
        {"name": "remote", "collection": "beir/not-a-collection", "folder": "absent", "tags": ["lexical"],
         "optional": True, "expect": {"bm25": {"nDCG@10": 1.0}}}]}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(spec))
    local, remote = load_matrix_spec(tmp_path / "m.yaml")
    assert local["collection"] == str(corpus) and local["id"] == "beir/not-a-collection"
    assert remote["collection"] == "beir/not-a-collection"
    monkeypatch.chdir(tmp_path)
    code = main(["regressions", "--config", str(tmp_path / "m.yaml"), "-o", str(tmp_path / "out"),
                 "--data-dir", str(tmp_path / "data")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "local / bm25" in out and "✓ 1.0000" in out
    assert "remote: skipped (optional), beir/not-a-collection cannot be loaded here" in out


def test_a_zero_shot_experiment_trains_on_its_train_collection_and_is_skipped_without_it(tmp_path, data, capsys):
    """An experiment may train on another collection (``train``, a local ``train_folder`` first): the pipeline is
    given it as collection.train, and an experiment whose training collection cannot be had is skipped, said so."""
    import json

    from irglow.regressions import load_matrix_spec

    small = "demo:n_topics=6,docs_per_topic=3,n_roundups=4,n_background=4"
    spec = {"experiments": [
        {"name": "zs", "collection": "demo", "train": small, "tags": ["zs"], "expect": {"bm25": {"nDCG@10": 0.7363}}},
        {"name": "zs-absent", "collection": "demo", "train": "absent-collection", "train_folder": str(tmp_path / "no"),
         "optional": True, "tags": ["zs"], "expect": {"bm25": {"nDCG@10": 0.7363}}}]}
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(spec))
    loaded = load_matrix_spec(tmp_path / "r.yaml")
    assert loaded[0]["train"] == small and loaded[1]["train_id"] == "absent-collection"
    code = main(["regressions", "--config", str(tmp_path / "r.yaml"), "-o", str(tmp_path / "out"),
                 "--data-dir", str(data)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "zs-absent: skipped (optional)" in out and "✓ 0.7363" in out
    manifest = json.loads((tmp_path / "out" / "zs" / "manifest.json").read_text())
    assert manifest["config"]["collection"]["train"] == small
