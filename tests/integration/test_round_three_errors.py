"""Issue 30, "unclear errors and noise": each input that gave a traceback, a misleading hint or nothing at all
now gives one message naming the file and line, the option, or the folder."""

from __future__ import annotations

import json
import logging
import os
import subprocess
from pathlib import Path

import pytest

from irglow.cli import main


def _beir(folder: Path, docs=None, queries=None, qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\n") -> str:
    folder.mkdir(parents=True, exist_ok=True)
    docs = docs or ['{"_id": "d1", "title": "lyme", "text": "lyme disease ticks"}',
                    '{"_id": "d2", "title": "flu", "text": "influenza season"}']
    (folder / "corpus.jsonl").write_text("\n".join(docs) + "\n")
    (folder / "queries.jsonl").write_text("\n".join(queries or ['{"_id": "q1", "text": "lyme ticks"}']) + "\n")
    (folder / "qrels").mkdir(exist_ok=True)
    (folder / "qrels" / "test.tsv").write_text(qrels)
    return str(folder)


def test_an_ad_hoc_query_with_o_writes_the_run(tmp_path, capsys):
    c = _beir(tmp_path / "c")
    assert main(["search", c, "--query", "lyme", "-o", str(tmp_path / "f.run"), "--data-dir", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    assert "d1" in out and f"→ {tmp_path / 'f.run'}" in out
    assert (tmp_path / "f.run").read_text().split()[:3] == ["q", "Q0", "d1"]


@pytest.mark.parametrize("where, docs, queries, message", [
    ("corpus.jsonl:2", ['{"_id": "d1", "text": "a"}', '{"_id": "d2", "text": "bad \\ud83d here"}'], None,
     "field 'text' of document d2 holds a lone surrogate \\ud83d at character 5"),
    ("corpus.jsonl:1", ['{"_id": "d\\ud83d", "text": "a"}'], None, "document id holds a lone surrogate"),
    ("queries.jsonl:1", None, ['{"_id": "q1", "text": "x \\udc00"}'], "query q1's text holds a lone surrogate"),
])
def test_a_lone_surrogate_names_file_and_line(tmp_path, capsys, where, docs, queries, message):
    c = _beir(tmp_path / "c", docs, queries)
    assert main(["search", c, "--split", "test", "-o", str(tmp_path / "r.run"), "--data-dir", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert where in err and message in err and "Traceback" not in err


def _trec(path: Path, rows) -> str:
    path.write_text("".join(f"{q} Q0 {d} {i + 1} {s} t\n" for i, (q, d, s) in enumerate(rows)))
    return str(path)


def test_number_options_name_the_option(tmp_path, capsys):
    a = _trec(tmp_path / "a.run", [("q1", "d1", 2.0), ("q1", "d2", 1.0)])
    b = _trec(tmp_path / "b.run", [("q1", "d2", 2.0), ("q1", "d1", 1.0)])
    (tmp_path / "q.qrels").write_text("q1 0 d1 1\n")
    with pytest.raises(SystemExit, match="--weights 'a,b': 'a' is not a number"):
        main(["fuse", a, b, "-o", str(tmp_path / "f.run"), "--method", "wsum", "--weights", "a,b"])
    with pytest.raises(SystemExit, match="--weights gives 3 weights for 2 runs"):
        main(["fuse", a, b, "-o", str(tmp_path / "f.run"), "--method", "wsum", "--weights", "1,2,3"])
    with pytest.raises(SystemExit, match="--risk-alpha 'abc': 'abc' is not a number"):
        main(["compare", a, b, "--qrels", str(tmp_path / "q.qrels"), "--risk-alpha", "abc"])


@pytest.mark.parametrize("option, value, message", [
    ("--k1", "1e39", "lexical.k1 = 1e+39 is too large: Lucene stores it as a 32-bit float"),
    ("--depth", "100000000000", "lexical.depth = 100000000000 is too large: at most 2,147,483,647"),
])
def test_lucene_ranges_are_checked_before_java(tmp_path, capsys, option, value, message):
    c = _beir(tmp_path / "c")
    assert main(["search", c, "--query", "lyme", option, value, "--data-dir", str(tmp_path / "d")]) == 2
    assert message in capsys.readouterr().err


def test_duplicates_option_the_error_suggests_exists_where_runs_are_read(tmp_path, capsys):
    a = _trec(tmp_path / "a.run", [("q1", "d1", 2.0), ("q1", "d1", 1.0), ("q1", "d2", 0.5)])
    b = _trec(tmp_path / "b.run", [("q1", "d2", 2.0), ("q1", "d1", 1.0)])
    assert main(["fuse", a, b, "-o", str(tmp_path / "f.run")]) == 2
    assert "--duplicates keep-max" in capsys.readouterr().err
    assert main(["fuse", a, b, "-o", str(tmp_path / "f.run"), "--duplicates", "keep-max"]) == 0
    from irglow.cli import build_parser

    args = build_parser().parse_args(["rerank", a, "--model", "m", "--data", "demo", "-o", "x.run",
                                      "--duplicates", "keep-max"])
    assert args.duplicates == "keep-max"


def test_cache_prune_refuses_a_negative_age(tmp_path):
    with pytest.raises(SystemExit, match="--older-than -1: give a number of days >= 0"):
        main(["cache", "prune", "--older-than", "-1", "--data-dir", str(tmp_path)])


def test_utf16_input_gets_utf16_advice(tmp_path, capsys):
    (tmp_path / "q.qrels").write_bytes("q1 0 d1 1\n".encode("utf-16"))
    a = _trec(tmp_path / "a.run", [("q1", "d1", 2.0)])
    assert main(["eval", a, "--qrels", str(tmp_path / "q.qrels")]) == 2
    err = capsys.readouterr().err
    assert "q.qrels:1: not UTF-8" in err and "it looks like UTF-16; convert it, e.g. iconv -f utf-16 -t utf-8" in err
    (tmp_path / "l.qrels").write_bytes("q1 0 d\xe91 1\n".encode("latin-1"))
    assert main(["eval", a, "--qrels", str(tmp_path / "l.qrels")]) == 2
    assert "iconv -f latin1" in capsys.readouterr().err


def test_long_queries_are_reported_once_per_batch(caplog):
    from irglow.models.twbert.model import report_budget

    with caplog.at_level(logging.WARNING):
        report_budget([("q1", 7, 9), ("q2", 5, 6), ("q3", 30, 34)], "TW-BERT weights", 32)
    assert len(caplog.records) == 1
    assert "TW-BERT weights: 3 queries are longer than 32 tokens (e.g. q1): 7 terms dropped" in caplog.text


@pytest.fixture
def small_mount(tmp_path):
    """A 3 MB tmpfs (root only; skipped elsewhere), unmounted afterwards."""
    folder = tmp_path / "mnt"
    folder.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3M", "tmpfs", str(folder)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root and mount(8) to make a small or read-only file system")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def test_a_full_disk_is_one_line_naming_the_folder_and_nothing_is_left(small_mount, capsys):
    assert main(["search", "demo", "--query", "brulzem", "--data-dir", str(small_mount)]) == 2
    err = capsys.readouterr().err
    assert f"no space left on the device holding {small_mount}/indexes while indexing demo" in err
    assert "java.io.IOException" not in err and "Traceback" not in err
    assert not any((small_mount / "indexes").iterdir())


def test_a_read_only_cache_is_searched(small_mount, tmp_path, capsys):
    c = _beir(tmp_path / "c")
    assert main(["search", c, "--query", "lyme", "--data-dir", str(small_mount)]) == 0
    capsys.readouterr()
    assert subprocess.run(["mount", "-o", "remount,ro", str(small_mount)], capture_output=True).returncode == 0
    assert main(["search", c, "--query", "lyme", "--data-dir", str(small_mount)]) == 0
    assert "d1" in capsys.readouterr().out
