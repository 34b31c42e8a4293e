"""Comparison tables (irglow.eval.compare): runs kept apart, missing queries, LaTeX, quiet SciPy, parallel evaluation."""

from __future__ import annotations

import logging

import pytest

from irglow.cli import main
from irglow.data.records import Qrel
from irglow.data.trec import read_qrels
from irglow.eval.compare import compare
from irglow.runs.trec import Run


# 4 — one naming rule for eval and compare
@pytest.mark.parametrize("command", ["eval", "compare"])
def test_runs_with_the_same_file_name_are_kept_apart(tmp_path, capsys, command):
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 d1 1\n")
    for sub, doc in (("a", "d1"), ("b", "d9")):
        (tmp_path / sub).mkdir()
        Run({"q1": [(doc, 1.0)]}, sub).write(tmp_path / sub / "sys.run")
    assert main([command, str(tmp_path / "a" / "sys.run"), str(tmp_path / "b" / "sys.run"), "--qrels", str(qrels),
                 "-m", "RR@10", "--format", "csv"]) == 0
    rows = [r for r in capsys.readouterr().out.splitlines()[1:] if r]
    assert [r.split(",")[:2] for r in rows] == [[str(tmp_path / "a" / "sys"), "1.0"], [str(tmp_path / "b" / "sys"), "0.0"]]


# 10 — query ids shared with the qrels
def test_zero_padded_query_ids_are_named(caplog):
    from irglow.eval.compare import compare

    qrels = [Qrel(str(i), "d1", 1) for i in range(1, 6)]
    padded = Run({f"0{i}": [("d1", 1.0)] for i in range(1, 6)}, "padded")
    # sharing no query is an error (issue 37 item 9: an all-zero row is no result), still naming the cause
    with pytest.raises(ValueError, match="shares 0 of its 5 query ids.*leading zeros"):
        compare({"padded": padded}, qrels, ["RR@10"])
    other = Run({f"x{i}": [("d1", 1.0)] for i in range(1, 6)}, "other")
    with pytest.raises(ValueError, match="another split"):
        compare({"other": other}, qrels, ["RR@10"])
    few = Run({"01": [("d1", 1.0)], "02": [("d1", 1.0)], "1": [("d1", 1.0)]}, "few")  # shares some: a warning
    with caplog.at_level(logging.WARNING):
        assert "leading zeros" in compare({"few": few}, qrels, ["RR@10"]).caption()
    fine = Run({str(i): [("d1", 1.0)] for i in range(1, 4)}, "fine")
    assert "Warning" not in compare({"fine": fine}, qrels, ["RR@10"]).caption()


def test_compare_refuses_to_overwrite_an_input(tmp_path):
    (tmp_path / "q.qrels").write_text("q1 0 d1 1\n")
    Run({"q1": [("d1", 1.0)]}).write(tmp_path / "a.run")
    before = (tmp_path / "a.run").read_bytes()
    for target in ("a.run", "q.qrels"):
        with pytest.raises(SystemExit, match="one of the inputs"):
            main(["compare", str(tmp_path / "a.run"), "--qrels", str(tmp_path / "q.qrels"), "-o", str(tmp_path / target)])
    assert (tmp_path / "a.run").read_bytes() == before


def test_latex_table_escapes_run_names():
    from irglow.eval.compare import compare

    qrels = [Qrel("q1", "d1", 1)]
    runs = {"bm25_title": Run({"q1": [("d1", 1.0)]}), "a&b%": Run({"q1": [("d2", 1.0)]})}
    tex = compare(runs, qrels, ["RR@10"], baseline="bm25_title").to_latex()
    assert r"bm25\_title" in tex and r"a\&b\%" in tex and "bm25_title " not in tex.split("%")[0]


def test_scipy_warnings_stay_out_of_the_terminal(recwarn):
    from irglow.eval.compare import compare

    qrels = [Qrel("q1", "d1", 1), Qrel("q2", "d2", 1)]
    runs = {"a": Run({"q1": [("d1", 1.0)], "q2": [("d2", 1.0)]}), "b": Run({"q1": [("d9", 1.0)], "q2": [("d9", 1.0)]})}
    compare(runs, qrels, ["RR@10"], baseline="a")
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_parallel_evaluation_reports_a_bad_line_and_equals_the_serial_one(tmp_path, capsys):
    from irglow.eval.compare import evaluate_files

    (tmp_path / "q.qrels").write_text("q1 0 d1 1\nq2 0 d2 1\n")
    for name, docs in (("a", ["d1", "d2"]), ("b", ["d2", "d1"]), ("c", ["d9", "d1"])):
        Run({q: [(d, 2.0 - i) for i, d in enumerate(docs)] for q in ("q1", "q2")}, name).write(tmp_path / f"{name}.run")
    paths = [tmp_path / f"{n}.run" for n in "abc"]
    qrels = read_qrels(tmp_path / "q.qrels")
    parallel = evaluate_files(paths, qrels, ["RR@10", "AP"], workers=2)
    serial = evaluate_files(paths, qrels, ["RR@10", "AP"], workers=1)
    assert [e.values for e in parallel] == [e.values for e in serial]
    assert parallel[0].values["RR@10"] == {"q1": 1.0, "q2": 0.5}
    (tmp_path / "b.run").write_text("q1 Q0 d1 1 2.0 b\nq1 Q0 d2 x 1.0 b\n")
    assert main(["compare", *map(str, paths), "--qrels", str(tmp_path / "q.qrels")]) == 2
    assert "b.run:2: rank must be an integer" in capsys.readouterr().err


def test_compare_scores_missing_queries_zero_and_says_so():
    qrels = [Qrel("q1", "d1", 1), Qrel("q2", "d2", 1)]
    full = Run({"q1": [("d1", 1.0)], "q2": [("d2", 1.0)]})
    half = Run({"q1": [("d1", 1.0)]})
    cmp = compare({"full": full, "half": half}, qrels, ["RR@10"], baseline="full")
    assert cmp.means.loc["half", "RR@10"] == 0.5  # q2 counts as 0, as trec_eval -c
    assert "`half` misses 1" in cmp.to_markdown() and "`full` misses" not in cmp.to_markdown()


def _three_runs(tmp_path):
    """Three runs over 12 queries (enough for significance marks and CIs) and their qrels."""
    import random

    rng = random.Random(5)
    qrels = tmp_path / "q.qrels"
    qrels.write_text("".join(f"q{i} 0 d{j} {rng.randint(0, 2)}\n" for i in range(12) for j in range(6)))
    paths = []
    for name in ("bm25", "bm25f", "a-dense-run-with-a-long-name"):
        ranking = {f"q{i}": [(f"d{j}", rng.random()) for j in range(6)] for i in range(12)}
        Run(ranking, name).write(tmp_path / f"{name}.run")
        paths.append(str(tmp_path / f"{name}.run"))
    return paths, str(qrels)


def test_compare_fits_a_100_column_terminal(tmp_path, capsys, monkeypatch):
    """With --ci and --pairs all the markdown is ~250 columns wide; a terminal of 100 gets every value: Δ [CI]
    stacked under each run, the measures in blocks that fit, the prose wrapped (the -o file keeps one table)."""
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.chdir(tmp_path)
    runs, qrels = _three_runs(tmp_path)
    assert main(["compare", *runs, "--qrels", qrels, "--ci", "--pairs", "all", "-o", str(tmp_path / "t.md")]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    main_table = out.split("12 queries.")[0]
    blocks = sum(line.startswith("|:-") for line in main_table.splitlines())
    assert blocks > 1 and main_table.count("| Δ [CI]") == 2 * blocks  # two runs against the baseline, per block
    for measure in ("nDCG@10", "RR@10", "R@100", "R@1000", "AP", "NCG@10", "Judged@10", "group"):
        assert f"| {measure}" in out
    assert max(len(line) for line in (tmp_path / "t.md").read_text().splitlines()) > 100  # the file: one table


def test_the_pairs_heatmap_is_written_where_the_help_says(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runs, qrels = _three_runs(tmp_path)
    assert main(["compare", *runs, "--qrels", qrels, "--pairs", "all"]) == 0
    assert (tmp_path / "pairs.png").is_file() and "pairs heatmap: pairs.png" in capsys.readouterr().err
    (tmp_path / "out").mkdir()
    assert main(["compare", *runs, "--qrels", qrels, "--pairs", "all", "-o", "out/table.md"]) == 0
    assert (tmp_path / "out" / "table-pairs.png").is_file()


def test_the_baseline_a_glob_chose_is_said_or_asked_for(tmp_path, capsys):
    runs, qrels = _three_runs(tmp_path)
    with pytest.raises(SystemExit, match="the runs include bm25 but the first run is 'bm25f'; .* --baseline bm25"):
        main(["compare", runs[1], runs[0], "--qrels", qrels])
    assert main(["compare", runs[1], runs[2], "--qrels", qrels]) == 0
    assert "baseline: bm25f (the first run; --baseline to choose another)" in capsys.readouterr().err
    assert main(["compare", runs[1], runs[0], "--qrels", qrels, "--baseline", "bm25"]) == 0
