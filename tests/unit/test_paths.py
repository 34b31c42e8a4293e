"""Outputs that never overwrite inputs (irglow.utils.paths)."""

from __future__ import annotations

import os

import pytest

from irglow.cli import main


def refused(argv, match):
    before = {p: p.read_bytes() for p in argv_files(argv)}
    with pytest.raises(SystemExit, match=match):
        main(argv)
    assert {p: p.read_bytes() for p in before} == before  # nothing was written over


def argv_files(argv):
    from pathlib import Path

    return [Path(a) for a in argv if Path(a).is_file()]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "a.run").write_text(RUN)
    (tmp_path / "b.run").write_text(RUN.replace("2.0", "0.5"))
    (tmp_path / "q.qrels").write_text(QRELS)
    beir = tmp_path / "C"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text('{"_id": "d1", "title": "t", "text": "a"}\n')
    (beir / "queries.jsonl").write_text('{"_id": "1", "text": "a"}\n')
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n")
    return tmp_path


RUN = "1 Q0 d1 1 2.0 r\n2 Q0 d9 1 1.0 r\n"


QRELS = "1 0 d1 1\n2 0 d9 1\n"


def test_report_refuses_to_write_into_the_collection_folder(files):
    refused(["report", str(files / "a.run"), "--data", str(files / "C"), "-o", str(files / "C/qrels/test.tsv")],
            "inside the collection folder")


def test_outputs_equal_to_an_input_through_dotdot_symlinks_and_hard_links_are_refused(files):
    a = files / "a.run"
    os.symlink(a, files / "soft.run")
    os.link(a, files / "hard.run")
    for out in (files / "sub" / ".." / "a.run", files / "soft.run", files / "hard.run"):
        (files / "sub").mkdir(exist_ok=True)
        refused(["fuse", str(a), str(files / "b.run"), "-o", str(out)], "input")
        refused(["compare", str(a), str(files / "b.run"), "--qrels", str(files / "q.qrels"), "-o", str(out)],
                "input")
        refused(["compare", str(a), str(files / "b.run"), "--qrels", str(files / "q.qrels"), "--plot", str(out)],
                "input")
    refused(["compare", str(a), str(files / "b.run"), "--qrels", str(files / "q.qrels"), "-o",
             str(files / "q.qrels")], "input")


def test_an_unwritable_output_is_said_before_the_table(files, capsys):
    with pytest.raises(SystemExit, match="cannot create its folder"):
        main(["compare", str(files / "a.run"), str(files / "b.run"), "--qrels", str(files / "q.qrels"), "-o",
              "/proc/irglow-no-such/t.md"])
    assert capsys.readouterr().out == ""  # no table was printed first


def test_runs_sharing_no_query_with_the_qrels_are_an_error(files, capsys):
    (files / "other.run").write_text("5 Q0 d1 1 2.0 r\n")
    code = main(["compare", str(files / "a.run"), str(files / "other.run"), "--qrels", str(files / "q.qrels")])
    assert code == 2
    assert "`other` shares 0 of its 1 query ids" in capsys.readouterr().err


def test_a_reader_that_leaves_early_gets_no_traceback(files):
    """``irglow compare … | head -2``: the pipe closes before the table is written; exit quietly (141, as Unix
    tools killed by SIGPIPE), nothing on stderr."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "irglow", "eval", str(files / "a.run"), "--qrels",
                             str(files / "q.qrels")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before irglow prints
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in err and "BrokenPipe" not in err
