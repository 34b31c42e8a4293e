import subprocess
import sys

import pytest

from irglow.cli import main
from irglow.runs.trec import Run


def test_help_is_fast_and_lists_stages():
    out = subprocess.run([sys.executable, "-m", "irglow", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    for stage in ("index", "search", "stats", "eval", "compare"):
        assert stage in out.stdout


def test_compare_cli_with_bad_run_line(tmp_path, capsys):
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 d1 1\nq2 0 d2 1\n")
    Run({"q1": [("d1", 2.0)], "q2": [("d9", 1.0)]}, "a").write(tmp_path / "a.run")
    Run({"q1": [("d9", 2.0)], "q2": [("d2", 1.0)]}, "b").write(tmp_path / "b.run")
    assert main(["compare", str(tmp_path / "a.run"), str(tmp_path / "b.run"), "--qrels", str(qrels),
                 "-m", "RR@10 NCG@1", "--format", "csv"]) == 0
    csv = capsys.readouterr().out
    header = csv.splitlines()[0].split(",")
    assert header[:3] == ["", "RR@10", "NCG@1"]
    for column in ("RR@10 delta", "RR@10 ci_low", "RR@10 ci_high", "RR@10 p", "RR@10 p(holm)", "RR@10 wins",
                   "RR@10 ties", "RR@10 losses", "Judged@10", "URisk(α=1)", "TRisk(α=5)"):
        assert column in header
    assert csv.splitlines()[1].startswith("a,0.5,0.5")
    (tmp_path / "bad.run").write_text("q1 Q0 d1 1 2.0 x\nq1 Q0 d2\n")
    assert main(["eval", str(tmp_path / "bad.run"), "--qrels", str(qrels)]) == 2
    assert "bad.run:2: expected 6 columns" in capsys.readouterr().err


def test_compare_keeps_runs_with_the_same_file_name_apart(tmp_path, capsys):
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 d1 1\n")
    for sub, doc in (("x", "d1"), ("y", "d9")):
        (tmp_path / sub).mkdir()
        Run({"q1": [(doc, 1.0)]}, sub).write(tmp_path / sub / "run.run")
    assert main(["compare", str(tmp_path / "x" / "run.run"), str(tmp_path / "y" / "run.run"), "--qrels", str(qrels),
                 "-m", "RR@10", "--format", "csv"]) == 0
    rows = [r for r in capsys.readouterr().out.splitlines()[1:] if r]
    assert [r.split(",")[:2] for r in rows] == [[str(tmp_path / "x" / "run"), "1.0"], [str(tmp_path / "y" / "run"), "0.0"]]


def test_search_refuses_empty_query_bad_tag_and_unwritable_output_before_searching(tmp_path):
    import pytest

    with pytest.raises(SystemExit, match="--query is empty"):
        main(["search", "demo", "--query", ""])
    with pytest.raises(SystemExit, match="cannot be written to a TREC file"):
        main(["search", "demo", "--tag", "my run"])
    (tmp_path / "file").write_text("x")
    with pytest.raises(SystemExit, match="is a file, not a folder"):
        main(["search", "demo", "-o", str(tmp_path / "file" / "out.run")])


def test_fuse_cli_fixed_and_tuned_weights(tmp_path, capsys):
    (tmp_path / "a.run").write_text("q1 Q0 d1 1 3.0 a\nq1 Q0 d2 2 2.0 a\nq1 Q0 d3 3 1.0 a\n")
    (tmp_path / "b.run").write_text("q1 Q0 d2 1 0.9 b\nq1 Q0 d4 2 0.5 b\n")
    (tmp_path / "train.qrels").write_text("q1 0 d4 1\n")
    runs = [str(tmp_path / "a.run"), str(tmp_path / "b.run")]
    assert main(["fuse", *runs, "-o", str(tmp_path / "rrf.run")]) == 0
    assert [l.split()[2] for l in (tmp_path / "rrf.run").read_text().splitlines()] == ["d2", "d1", "d4", "d3"]
    assert main(["fuse", *runs, "--method", "wsum", "--weights", "0.5,0.5", "-o", str(tmp_path / "mm.run")]) == 0
    assert (tmp_path / "mm.run").read_text().splitlines()[0].split()[2:5] == ["d2", "1", "0.75"]
    # weights tuned on "training" runs (here the same files): B alone puts d4 highest (see test_fusion)
    assert main(["fuse", *runs, "--method", "wsum", "--tune-runs", *runs, "--tune-qrels", str(tmp_path / "train.qrels"),
                 "--measure", "RR@10", "--step", "0.5", "-o", str(tmp_path / "tuned.run")]) == 0
    assert "a 0, b 1 (weights tuned on" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="one training-query run per RUN"):
        main(["fuse", *runs, "--tune-runs", runs[0], "--tune-qrels", "x", "-o", str(tmp_path / "t.run")])
