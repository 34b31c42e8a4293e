"""The command line (irglow.cli): each command end to end, and errors that name the option, the file and line."""

import subprocess
import sys

import pytest

from irglow.cli import main
from irglow.runs.trec import Run
from tests.files import write_beir, write_trec


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
    # -m repeated adds measures (the last one alone was kept); the first replaces the default list
    assert main(["eval", str(tmp_path / "a.run"), "--qrels", str(qrels), "-m", "RR@10", "-m", "NCG@1 P@1",
                 "--format", "csv", "--no-judged"]) == 0
    header = capsys.readouterr().out.splitlines()[0].split(",")
    assert header[:4] == ["", "RR@10", "NCG@1", "P@1"]
    (tmp_path / "bad.run").write_text("q1 Q0 d1 1 2.0 x\nq1 Q0 d2\n")
    assert main(["eval", str(tmp_path / "bad.run"), "--qrels", str(qrels)]) == 2
    assert "bad.run:2: expected 6 columns" in capsys.readouterr().err


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
    assert main(["fuse", *runs, "--method", "rrf", "-o", str(tmp_path / "rrf.run")]) == 0
    assert [l.split()[2] for l in (tmp_path / "rrf.run").read_text().splitlines()] == ["d2", "d1", "d4", "d3"]
    assert main(["fuse", *runs, "--method", "wsum", "--weights", "0.5,0.5", "-o", str(tmp_path / "mm.run")]) == 0
    assert (tmp_path / "mm.run").read_text().splitlines()[0].split()[2:5] == ["d2", "1", "0.75"]
    # the defaults are [fusion]'s declared ones: a min-max weighted sum, here with weights 1 each
    assert main(["fuse", *runs, "-o", str(tmp_path / "default.run")]) == 0
    assert [line.split()[2:5] for line in (tmp_path / "default.run").read_text().splitlines()] == [
        ["d2", "1", "1.5"], ["d1", "2", "1.0"], ["d4", "3", "0.0"], ["d3", "4", "0.0"]]
    # weights tuned on "training" runs (here the same files): B alone puts d4 highest (see test_fusion)
    assert main(["fuse", *runs, "--method", "wsum", "--tune-runs", *runs, "--tune-qrels", str(tmp_path / "train.qrels"),
                 "--measure", "RR@10", "--step", "0.5", "-o", str(tmp_path / "tuned.run")]) == 0
    assert "a 0, b 1 (weights tuned on" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="one training-query run per RUN"):
        main(["fuse", *runs, "--tune-runs", runs[0], "--tune-qrels", "x", "-o", str(tmp_path / "t.run")])


def test_an_ad_hoc_query_with_o_writes_the_run(tmp_path, capsys):
    c = write_beir(tmp_path / "c")
    assert main(["search", c, "--query", "lyme", "-o", str(tmp_path / "f.run"), "--data-dir", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    assert "d1" in out and f"→ {tmp_path / 'f.run'}" in out
    assert (tmp_path / "f.run").read_text().split()[:3] == ["q", "Q0", "d1"]


def test_a_commands_record_is_kept_beside_its_run_not_over_the_folders_manifest(tmp_path):
    """Issue 59.11: ``-o DIR/x.run`` replaced DIR/manifest.json, a pipeline's record that transformer() reads."""
    import json

    c = write_beir(tmp_path / "c")
    (tmp_path / "manifest.json").write_text('{"settings": "a pipeline\'s"}')
    assert main(["search", c, "--query", "lyme", "-o", str(tmp_path / "f.run"), "--data-dir", str(tmp_path / "d")]) == 0
    assert main(["fuse", str(tmp_path / "f.run"), str(tmp_path / "f.run"), "--method", "rrf", "-o",
                 str(tmp_path / "g.run")]) == 0
    assert json.loads((tmp_path / "manifest.json").read_text()) == {"settings": "a pipeline's"}
    assert not (tmp_path / "manifests").exists()
    for run, command in (("f.run", "search"), ("g.run", "fuse")):
        record = json.loads((tmp_path / f"{run}.manifest.json").read_text())
        assert record["run"] == str(tmp_path / run) and command in record["config"]


@pytest.mark.parametrize("where, docs, queries, message", [
    ("corpus.jsonl:2", ['{"_id": "d1", "text": "a"}', '{"_id": "d2", "text": "bad \\ud83d here"}'], None,
     "field 'text' of document d2 holds a lone surrogate \\ud83d at character 5"),
    ("corpus.jsonl:1", ['{"_id": "d\\ud83d", "text": "a"}'], None, "document id holds a lone surrogate"),
    ("queries.jsonl:1", None, ['{"_id": "q1", "text": "x \\udc00"}'], "query q1's text holds a lone surrogate"),
])
def test_a_lone_surrogate_names_file_and_line(tmp_path, capsys, where, docs, queries, message):
    c = write_beir(tmp_path / "c", docs, queries)
    assert main(["search", c, "--split", "test", "-o", str(tmp_path / "r.run"), "--data-dir", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert where in err and message in err and "Traceback" not in err


def test_number_options_name_the_option(tmp_path, capsys):
    a = write_trec(tmp_path / "a.run", [("q1", "d1", 2.0), ("q1", "d2", 1.0)])
    b = write_trec(tmp_path / "b.run", [("q1", "d2", 2.0), ("q1", "d1", 1.0)])
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
    c = write_beir(tmp_path / "c")
    assert main(["search", c, "--query", "lyme", option, value, "--data-dir", str(tmp_path / "d")]) == 2
    assert message in capsys.readouterr().err


def test_duplicates_option_the_error_suggests_exists_where_runs_are_read(tmp_path, capsys):
    a = write_trec(tmp_path / "a.run", [("q1", "d1", 2.0), ("q1", "d1", 1.0), ("q1", "d2", 0.5)])
    b = write_trec(tmp_path / "b.run", [("q1", "d2", 2.0), ("q1", "d1", 1.0)])
    assert main(["fuse", a, b, "-o", str(tmp_path / "f.run")]) == 2
    assert "--duplicates keep-max" in capsys.readouterr().err
    assert main(["fuse", a, b, "-o", str(tmp_path / "f.run"), "--duplicates", "keep-max"]) == 0
    from irglow.cli import build_parser

    args = build_parser().parse_args(["rerank", a, "--model", "m", "--data", "demo", "-o", "x.run",
                                      "--duplicates", "keep-max"])
    assert args.duplicates == "keep-max"


def test_utf16_input_gets_utf16_advice(tmp_path, capsys):
    (tmp_path / "q.qrels").write_bytes("q1 0 d1 1\n".encode("utf-16"))
    a = write_trec(tmp_path / "a.run", [("q1", "d1", 2.0)])
    assert main(["eval", a, "--qrels", str(tmp_path / "q.qrels")]) == 2
    err = capsys.readouterr().err
    assert "q.qrels:1: not UTF-8" in err and "it looks like UTF-16; convert it, e.g. iconv -f utf-16 -t utf-8" in err
    (tmp_path / "l.qrels").write_bytes("q1 0 d\xe91 1\n".encode("latin-1"))
    assert main(["eval", a, "--qrels", str(tmp_path / "l.qrels")]) == 2
    assert "iconv -f latin1" in capsys.readouterr().err


@pytest.mark.parametrize("weight,message", [("nan", "title = nan"), ("-1", "title = -1.0"), ("x", "FIELD=NUMBER")])
def test_cli_field_weights_are_checked(tmp_path, capsys, weight, message):
    from irglow.cli import main

    assert main(["search", "demo:n_topics=6,docs_per_topic=3,n_roundups=5,n_background=5", "--data-dir",
                 str(tmp_path), "--system", "bm25f", "--field-weight", f"title={weight}", "--query", "x"]) == 2
    assert message in capsys.readouterr().err


def test_issue_50_silent_cases_and_tracebacks_become_one_line_errors(tmp_path, capsys):
    """fuse --weights 0,0 is refused as a fusion table's weights are; -o naming a folder is refused before any work; a
    truncated .gz run or qrels names the file and the line it ends at; a measure list holding a number and
    P(rel=0)@5 are one-line errors."""
    import gzip

    (tmp_path / "a.run").write_text("q1 Q0 d1 1 3.0 a\nq1 Q0 d2 2 2.0 a\n")
    (tmp_path / "q.qrels").write_text("q1 0 d1 1\n")
    runs = [str(tmp_path / "a.run"), str(tmp_path / "a.run")]
    with pytest.raises(SystemExit, match="every run weight 0"):
        main(["fuse", *runs, "--weights", "0,0", "-o", str(tmp_path / "f.run")])
    (tmp_path / "folder").mkdir()
    with pytest.raises(SystemExit, match="it is a folder"):
        main(["fuse", *runs, "-o", str(tmp_path / "folder")])
    with pytest.raises(SystemExit, match="it is a folder"):
        main(["compare", runs[0], "--qrels", str(tmp_path / "q.qrels"), "-o", str(tmp_path / "folder")])
    data = gzip.compress("".join(f"q1 Q0 d{i} 1 {i} a\n" for i in range(3000)).encode())
    (tmp_path / "t.run.gz").write_bytes(data[:len(data) // 2])
    qrels = gzip.compress("".join(f"q1 0 d{i} 1\n" for i in range(3000)).encode())
    (tmp_path / "t.qrels.gz").write_bytes(qrels[:len(qrels) // 2])
    capsys.readouterr()
    assert main(["eval", str(tmp_path / "t.run.gz"), "--qrels", str(tmp_path / "q.qrels")]) == 2
    assert main(["eval", runs[0], "--qrels", str(tmp_path / "t.qrels.gz")]) == 2
    assert main(["eval", runs[0], "--qrels", str(tmp_path / "q.qrels"), "-m", "P(rel=0)@5"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and "t.run.gz:" in err[0] and "t.qrels.gz:" in err[1] and "truncated" in err[0] + err[1]
    assert "rel must be a whole number >= 1" in err[2]
    from irglow.eval.measures import parse_measures
    with pytest.raises(ValueError, match="10 is not a measure"):
        parse_measures(["AP", 10])


def test_pairs_all_with_too_few_queries_says_why_there_is_no_heatmap(tmp_path, capsys):
    (tmp_path / "a.run").write_text("1 Q0 a 1 3 r\n2 Q0 b 1 3 r\n")
    (tmp_path / "b.run").write_text("1 Q0 b 1 3 r\n2 Q0 a 1 3 r\n")
    (tmp_path / "q.qrels").write_text("1 0 a 1\n2 0 a 1\n")
    assert main(["compare", str(tmp_path / "a.run"), str(tmp_path / "b.run"), "--qrels", str(tmp_path / "q.qrels"),
                 "--pairs", "all"]) == 0
    err = capsys.readouterr().err
    assert "no Tukey HSD table and no heatmap: 2 queries are fewer than 6" in err and "heatmap: None" not in err
