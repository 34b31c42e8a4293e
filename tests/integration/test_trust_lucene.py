"""Issue 21 with Lucene: indexes that are verified before they are cached, refused corpora, settings
checked before any work, the cache listing, and a quiet JVM."""

from __future__ import annotations

import copy
import logging
import subprocess
import sys

import pytest

from irglow.data.records import Qrel, Query, make_document
from irglow.index.lucene_index import IndexConfig, build_index


class Docs:
    def __init__(self, docs, fields=("title", "body"), name="docs-v1"):
        self.docs, self.fields, self.name = docs, fields, name

    def docs_iter(self):
        yield from self.docs

    def queries(self, split="test"):
        return [Query("q1", "apple")]

    def qrels(self, split="test"):
        return [Qrel("q1", "d1", 1)]


def test_an_index_lucene_did_not_fill_is_never_cached(tmp_path, monkeypatch):
    import irglow.index.lucene_index as li

    coll = Docs([make_document("d1", body="apple"), make_document("d2", body="banana")], name="dropped")
    monkeypatch.setattr(li, "_lucene_doc_count", lambda path: 0)  # as when Anserini drops a batch
    with pytest.raises(RuntimeError, match="Lucene holds 0 documents, 2 non-empty ones were exported"):
        build_index(coll, IndexConfig(threads=1), root=tmp_path)
    assert not list((tmp_path / "indexes").glob("dropped*"))
    monkeypatch.undo()
    index = build_index(coll, IndexConfig(threads=1), root=tmp_path)
    assert index.meta["indexed"] == 2


def test_an_over_long_document_id_is_refused_before_indexing(tmp_path):
    coll = Docs([make_document("d1", body="apple"), make_document("x" * 40000, body="banana")], name="long")
    with pytest.raises(ValueError, match="id of 40000 bytes; Lucene's limit for a term is 32766"):
        build_index(coll, IndexConfig(threads=1), root=tmp_path)


@pytest.mark.parametrize("coll,config,message", [
    (Docs([make_document("d1", body="a")]), IndexConfig(fields=("nosuch",)), r"fields \['nosuch'\] are not in"),
    (Docs([]), IndexConfig(), "has no documents"),
    (Docs([make_document("d1", title="")]), IndexConfig(), "none of its 1 documents has text"),
    (Docs([make_document("d1", id="a", id_field="b")], fields=("id", "id_field")), IndexConfig(), "would collide"),
    (Docs([make_document("d1", body="a")]), IndexConfig(stemmer="porterx"), "index.stemmer = 'porterx'"),
])
def test_corpora_and_settings_that_give_an_empty_or_wrong_index_are_refused(tmp_path, coll, config, message):
    with pytest.raises(ValueError, match=message):
        build_index(coll, config, root=tmp_path)


def test_a_corrupt_cached_index_is_named_and_rebuilt(tmp_path, caplog):
    coll = Docs([make_document("d1", body="apple pie"), make_document("d2", body="banana")], name="corrupt")
    index = build_index(coll, IndexConfig(threads=1), root=tmp_path)
    for f in index.path.glob("*.si"):  # a segment file lost
        f.unlink()
    with caplog.at_level(logging.WARNING):
        again = build_index(coll, IndexConfig(threads=1), root=tmp_path)
    assert f"the cached index at {index.path} cannot be read" in caplog.text
    assert again.meta["indexed"] == 2 and list(again.path.glob("*.si"))


def test_cache_list_and_prune_keep_the_latest_of_each_source(tmp_path, capsys):
    import os
    import time

    from irglow.cli import main
    from irglow.data.beir import BeirCollection

    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "apple"}\n')
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("q1\td1\t1\n")
    paths = []
    for text in ("apple", "apple pie"):  # two versions of one corpus
        (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": "%s"}\n' % text)
        paths.append(build_index(BeirCollection(folder), IndexConfig(threads=1), root=tmp_path / "data").path)
    old = time.time() - 3600
    os.utime(paths[0] / "irglow-index.json", (old, old))
    assert main(["cache", "list", "--data-dir", str(tmp_path / "data")]) == 0
    listing = capsys.readouterr().out
    assert paths[0].name in listing and paths[1].name in listing and str(folder) in listing
    assert main(["cache", "prune", "--data-dir", str(tmp_path / "data"), "--dry-run"]) == 0
    assert paths[0].exists()
    assert main(["cache", "prune", "--data-dir", str(tmp_path / "data")]) == 0
    assert not paths[0].exists() and paths[1].exists()


def _config(tmp_path) -> dict:
    return {"seed": 13, "data_dir": str(tmp_path / "data"),
            "collection": {"name": "demo:n_topics=6,docs_per_topic=3,n_roundups=5,n_background=5"},
            "index": {"threads": 1}, "lexical": {"systems": ["bm25", "bm25f"], "depth": 20},
            "eval": {"measures": ["nDCG@10"], "baseline": "bm25"}, "output": {"dir": str(tmp_path / "out")}}


@pytest.mark.parametrize("section,key,value,message", [
    ("index", "stemmer", "porterx", "index.stemmer = 'porterx'; allowed: porter, krovetz, none"),
    ("lexical", "k1", "0.9", "lexical.k1 = '0.9' must be a number"),
    ("lexical", "k1", -1, "lexical.k1 = -1 must be a finite number >= 0"),
    ("lexical", "b", 2, "lexical.b = 2 must be between 0 and 1"),
    ("lexical", "depth", 0, "lexical.depth = 0 must be > 0"),
    ("lexical", "field_weights", {"title": float("nan")}, "field weight title = nan"),
    ("lexical", "field_weights", {"title": -1}, "field weight title = -1"),
    ("lexical", "field_weights", {"title": 0.5}, "CombinedFieldQuery"),
    ("eval", "baseline", "bm26", "eval.baseline = 'bm26' is not a run this configuration produces"),
    ("rerank", "nrmf", {"epochs": 1.5}, "rerank.epochs = 1.5 must be an integer"),
])
def test_settings_are_checked_before_any_work(tmp_path, monkeypatch, section, key, value, message):
    import irglow.pipeline as pipeline

    monkeypatch.chdir(tmp_path)
    config = copy.deepcopy(_config(tmp_path))
    if section == "rerank":
        config["rerank"] = {"enabled": True, "models": ["nrmf"], key: value}
    else:
        config.setdefault(section, {})[key] = value

    def no_work(*args, **kwargs):
        raise AssertionError("work started before the settings were checked")

    monkeypatch.setattr(pipeline, "load_collection", no_work)
    with pytest.raises(ValueError) as e:
        pipeline.run_pipeline(config)
    assert message in str(e.value)


@pytest.mark.parametrize("weight,message", [("nan", "title = nan"), ("-1", "title = -1.0"), ("x", "FIELD=NUMBER")])
def test_cli_field_weights_are_checked(tmp_path, capsys, weight, message):
    from irglow.cli import main

    assert main(["search", "demo:n_topics=6,docs_per_topic=3,n_roundups=5,n_background=5", "--data-dir",
                 str(tmp_path), "--system", "bm25f", "--field-weight", f"title={weight}", "--query", "x"]) == 2
    assert message in capsys.readouterr().err


def test_the_jvm_starts_without_known_harmless_noise(tmp_path):
    out = subprocess.run([sys.executable, "-m", "irglow", "search", "demo:n_topics=6,docs_per_topic=3,n_roundups=5,"
                          "n_background=5", "--data-dir", str(tmp_path), "--query", "guide"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    for noise in ("sun.misc.Unsafe", "Please consider reporting", "Using incubator modules", "Java 22 or later",
                  "SLF4J", "AVX"):
        assert noise not in out.stderr
