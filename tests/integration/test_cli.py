import subprocess
import sys

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
    assert csv.splitlines()[0] == ",RR@10,NCG@1,RR@10 p(holm),NCG@1 p(holm)"
    assert csv.splitlines()[1].startswith("a,0.5,0.5")
    (tmp_path / "bad.run").write_text("q1 Q0 d1 1 2.0 x\nq1 Q0 d2\n")
    assert main(["eval", str(tmp_path / "bad.run"), "--qrels", str(qrels)]) == 2
    assert "bad.run:2: expected 6 columns" in capsys.readouterr().err
