"""The index cache (irglow.index.cache, irglow.index.lucene_index.data_dir): listing, pruning, read-only caches."""

from __future__ import annotations

import subprocess

import pytest

from irglow.cli import main
from irglow.index.lucene_index import IndexConfig, build_index
from tests.files import write_beir


def test_cache_prune_refuses_a_negative_age(tmp_path):
    with pytest.raises(SystemExit, match="--older-than -1: give a number of days >= 0"):
        main(["cache", "prune", "--older-than", "-1", "--data-dir", str(tmp_path)])


def test_a_read_only_cache_is_searched(small_mount, tmp_path, capsys):
    c = write_beir(tmp_path / "c")
    assert main(["search", c, "--query", "lyme", "--data-dir", str(small_mount)]) == 0
    capsys.readouterr()
    assert subprocess.run(["mount", "-o", "remount,ro", str(small_mount)], capture_output=True).returncode == 0
    assert main(["search", c, "--query", "lyme", "--data-dir", str(small_mount)]) == 0
    assert "d1" in capsys.readouterr().out


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


def test_two_demo_specs_are_two_sources_not_versions_of_one(tmp_path):
    """Issue 59.16: cache prune listed another demo spec's index as a newer version of this one."""
    from irglow.data.collection import load_collection
    from irglow.index.cache import cached_indexes, prunable

    for spec in ("demo:n_topics=4,docs_per_topic=2,n_roundups=2,n_background=2", "demo:n_topics=3,n_background=1"):
        build_index(load_collection(spec), IndexConfig(threads=1), root=tmp_path / "data")
    indexes = cached_indexes(tmp_path / "data")
    assert len(indexes) == 2 and len({c.source for c in indexes}) == 2 and prunable(indexes) == []


def test_kept_models_encodings_and_runs_are_listed_and_pruned_by_age_never_while_written(tmp_path, monkeypatch, capsys):
    """$IRGLOW_MODELS keeps by content, so nothing replaces an old model: `irglow cache` lists what it keeps and
    prunes what no run used for --older-than days, leaving what a process is writing."""
    import os
    import time

    from irglow.cli import main
    from irglow.models.source import keyed_train_dir
    from irglow.utils.atomic import output_lock

    models = tmp_path / "models"
    monkeypatch.setenv("IRGLOW_MODELS", str(models))
    old, used, busy = (keyed_train_dir(models / "glow-train", {"lr": lr}) for lr in (1, 2, 3))
    encoding = models / "encodings" / "glow-0123456789abcdef.embeddings"
    encoding.mkdir(parents=True)
    (encoding / "embeddings.npy").write_bytes(b"\0" * 2048)
    month_ago = time.time() - 30 * 86400
    for path in (old / "inputs.json", busy / "inputs.json", encoding):
        os.utime(path, (month_ago, month_ago))
    assert keyed_train_dir(models / "glow-train", {"lr": 2}) == used  # used again: its last use is now
    assert main(["cache", "list", "--data-dir", str(tmp_path / "data")]) == 0
    listed = capsys.readouterr().out
    assert listed.count("glow") >= 4 and "encoding" in listed and "model" in listed
    with output_lock(busy):  # a process trains it now
        assert main(["cache", "prune", "--older-than", "7", "--data-dir", str(tmp_path / "data")]) == 0
    assert not old.exists() and not encoding.exists() and used.is_dir() and busy.is_dir()
    assert "removed 0 indexes and 2 kept models, encodings and runs" in capsys.readouterr().out
