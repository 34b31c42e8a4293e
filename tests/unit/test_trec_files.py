import gzip
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irglow.cli import main
from irglow.data.records import Qrel
from irglow.data.trec import FormatError, read_qrels, read_topics, write_qrels
from irglow.eval.measures import aggregate, parse_measures
from irglow.runs.trec import Run


def test_run_roundtrip_sorted_and_tagged(tmp_path):
    run = Run({"q1": [("d2", 3.0), ("d1", 1.5)], "q2": [("d9", 0.25)]}, tag="mine")
    path = run.write(tmp_path / "a.run")
    assert path.read_text().splitlines()[0] == "q1 Q0 d2 1 3.0 mine"
    back = Run.read(path)
    assert back.ranking == run.ranking and back.tag == "mine"
    assert not list(tmp_path.glob(".*tmp"))  # no temp file left behind


def test_malformed_run_line_names_file_and_line(tmp_path):
    p = tmp_path / "bad.run"
    p.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 notanumber t\n")
    with pytest.raises(FormatError) as e:
        Run.read(p)
    assert str(e.value).startswith(f"{p}:2:") and e.value.line_no == 2
    p.write_text("q1 Q0 d1 1 2.0\n")
    with pytest.raises(FormatError, match=r"bad.run:1: expected 6 columns"):
        Run.read(p)


def test_malformed_qrels_line_names_file_and_line(tmp_path):
    p = tmp_path / "q.qrels"
    p.write_text("q1 0 d1 1\n\nq1 0 d2 0\nq2 0 d3 x\n")
    with pytest.raises(FormatError, match=r"q.qrels:4: relevance .x. is not a plain integer"):
        read_qrels(p)
    p.write_text("q1 0 d1 1 extra junk\n")
    with pytest.raises(FormatError, match=r"q.qrels:1: expected 4 columns"):
        read_qrels(p)


def test_qrels_trec_and_beir_formats(tmp_path):
    trec = write_qrels([Qrel("q1", "d1", 2), Qrel("q1", "d2", 0)], tmp_path / "x.qrels")
    assert read_qrels(trec) == [Qrel("q1", "d1", 2), Qrel("q1", "d2", 0)]
    beir = tmp_path / "test.tsv"
    beir.write_text("query-id\tcorpus-id\tscore\nq7\td3\t1\n")
    assert read_qrels(beir) == [Qrel("q7", "d3", 1)]


def test_topics_tsv_sgml_jsonl(tmp_path):
    tsv = tmp_path / "cacm" / "topics.tsv"  # a path pyserini would misread
    tsv.parent.mkdir()
    tsv.write_text("1\tlyme disease treatment\n2\tcafé société ünïcode\n")
    assert [q.text for q in read_topics(tsv)] == ["lyme disease treatment", "café société ünïcode"]
    sgml = tmp_path / "t.txt"
    sgml.write_text("<top>\n<num> Number: 301\n<title> international organized crime\n"
                    "<desc> Description:\nIdentify organizations\n<narr> Narrative:\nx\n</top>\n")
    assert read_topics(sgml)[0].query_id == "301"
    assert read_topics(sgml)[0].text == "international organized crime"
    assert read_topics(sgml, field="desc")[0].text == "Identify organizations"
    bad = tmp_path / "bad.tsv"
    bad.write_text("1\tok\nno tab here\n")
    with pytest.raises(FormatError, match="bad.tsv:2"):
        read_topics(bad)


# 5 — duplicate query ids
@pytest.mark.parametrize("name,text,line", [
    ("q.tsv", "1\tfirst\n2\tsecond\n1\tthird\n", 3),
    ("queries.jsonl", '{"_id": "1", "text": "a"}\n{"_id": "1", "text": "b"}\n', 2),
])
def test_duplicate_query_ids_stop_with_both_lines(tmp_path, name, text, line):
    (tmp_path / name).write_text(text)
    with pytest.raises(FormatError, match=rf"{name}:{line}: duplicate query id '1' \(first on line 1\)"):
        read_topics(tmp_path / name)


def test_duplicate_trec_topic_numbers_stop(tmp_path):
    (tmp_path / "t.txt").write_text("<top><num> 301 <title> a </top>\n<top><num> 301 <title> b </top>\n")
    with pytest.raises(FormatError, match="duplicate topic number '301'"):
        read_topics(tmp_path / "t.txt")


# 6 — lossless scores
def test_written_run_reads_back_with_the_same_scores_and_order(tmp_path):
    import random

    rng = random.Random(7)
    # scores that six decimals would tie (a 0.05/0.95 fusion of deep runs produces such pairs)
    ranking = {f"q{i}": [(f"d{j}", 0.5 + rng.random() * 1e-7) for j in range(200)] for i in range(3)}
    ranking["q0"] += [("e1", 1e-300), ("e2", -0.0), ("e3", 123456789.123456789), ("e4", float("inf"))]
    run = Run(ranking, "t")
    back = Run.read(run.write(tmp_path / "a.run"))
    assert back.ranking == run.ranking


def test_gzipped_runs_and_qrels_are_read_transparently(tmp_path, capsys):
    with gzip.open(tmp_path / "q.qrels.gz", "wt") as f:
        f.write("q1 0 d1 1\nq2 0 d2 1\n")
    run = Run({"q1": [("d1", 2.0)], "q2": [("d9", 1.0)]}, "a")
    with gzip.open(tmp_path / "sys.run.gz", "wt") as f:
        f.write(run.write(tmp_path / "plain.run").read_text())
    assert Run.read(tmp_path / "sys.run.gz").ranking == run.ranking
    assert read_qrels(tmp_path / "q.qrels.gz") == [Qrel("q1", "d1", 1), Qrel("q2", "d2", 1)]
    assert main(["eval", str(tmp_path / "sys.run.gz"), "--qrels", str(tmp_path / "q.qrels.gz"), "-m", "RR@10",
                 "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("sys,0.5")


def test_duplicate_lines_can_be_kept_from_the_cli(tmp_path, capsys):
    (tmp_path / "q.qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "d.run").write_text("q1 Q0 d1 1 1.0 t\nq1 Q0 d1 2 3.0 t\n")
    assert main(["eval", str(tmp_path / "d.run"), "--qrels", str(tmp_path / "q.qrels")]) == 2
    assert "--duplicates keep-max" in capsys.readouterr().err
    assert main(["eval", str(tmp_path / "d.run"), "--qrels", str(tmp_path / "q.qrels"), "--duplicates", "keep-max",
                 "-m", "RR@10", "--format", "csv"]) == 0


def test_columnar_reader_equals_the_strict_one(tmp_path):
    """The fast path for evaluation (Arrow + numpy) ranks exactly as Run.read, ties and unsorted files included,
    and hands anything unusual to the strict reader."""
    import irglow.runs.columns as columns
    from irglow.runs.columns import RankedRun, read_ranked

    text = ("q2 Q0 b 1 1.5 t\nq1 Q0 a 1 2.0 t\nq1 Q0 c 2 2.0 t\nq1 Q0 b 3 3.0 t\nq2 Q0 a 2 1.5 t\n"
            "q1 Q0 d 4 -1.0 t\nq2 Q0 z 3 0.25 t\n")
    (tmp_path / "r.run").write_text(text)
    strict = RankedRun.from_run(Run.read(tmp_path / "r.run"))
    assert columns._fast(tmp_path / "r.run") is not None
    fast = read_ranked(tmp_path / "r.run")
    assert fast.ranked == strict.ranked and fast.tag == "t"
    assert list(fast.ranked["q1"]) == ["b", "c", "a", "d"]  # 3.0, then the 2.0 tie by id descending
    (tmp_path / "tabs.run").write_text(text.replace(" ", "\t"))
    assert columns._fast(tmp_path / "tabs.run") is None and read_ranked(tmp_path / "tabs.run").ranked == strict.ranked
    (tmp_path / "dup.run").write_text(text + "q1 Q0 a 9 0.1 t\n")
    with pytest.raises(FormatError, match="dup.run:8: duplicate document a"):
        read_ranked(tmp_path / "dup.run")
    (tmp_path / "nan.run").write_text(text + "q1 Q0 e 9 nan t\n")
    with pytest.raises(FormatError, match="nan.run:8: score is NaN"):
        read_ranked(tmp_path / "nan.run")
    with gzip.open(tmp_path / "r.run.gz", "wt") as f:
        f.write(text)
    assert read_ranked(tmp_path / "r.run.gz").ranked == strict.ranked


def test_ties_follow_trec_eval_order_everywhere(tmp_path):
    # trec_eval: score descending, ties by document id descending, so b comes before a
    run = Run({"q": [("a", 1.0), ("b", 1.0), ("c", 0.5)]})
    assert [d for d, _ in run.ranking["q"]] == ["b", "a", "c"]
    lines = run.write(tmp_path / "t.run").read_text().splitlines()
    assert [(ln.split()[2], ln.split()[3]) for ln in lines] == [("b", "1"), ("a", "2"), ("c", "3")]
    qrels = [Qrel("q", "b", 1)]
    got = aggregate(parse_measures("NCG@1 R@1 nDCG@1 P@1"), qrels, run)
    assert got == {"NCG@1": 1.0, "R@1": 1.0, "nDCG@1": 1.0, "P@1": 1.0}
    # and the other way round: the relevant document loses the tie
    got = aggregate(parse_measures("NCG@1 nDCG@1"), [Qrel("q", "a", 1)], run)
    assert got == {"NCG@1": 0.0, "nDCG@1": 0.0}


def test_duplicate_run_lines_stop_or_keep_the_highest(tmp_path, caplog):
    p = tmp_path / "dup.run"
    p.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq1 Q0 d1 3 3.0 t\n")
    with pytest.raises(FormatError, match=r"dup.run:3: duplicate document d1 for query q1 \(first on line 1\)"):
        Run.read(p)
    with caplog.at_level(logging.WARNING):
        run = Run.read(p, duplicates="keep-max")
    assert run.ranking["q1"] == [("d1", 3.0), ("d2", 1.0)]
    assert "1 duplicate" in caplog.text


def test_nan_scores_stop_and_empty_runs_warn(tmp_path, caplog):
    p = tmp_path / "nan.run"
    p.write_text("q1 Q0 d1 1 nan t\n")
    with pytest.raises(FormatError, match="nan.run:1: score is NaN"):
        Run.read(p)
    empty = tmp_path / "empty.run"
    empty.write_text("")
    with caplog.at_level(logging.WARNING):
        assert len(Run.read(empty)) == 0
    assert "empty run" in caplog.text


def test_ids_and_tags_that_break_trec_files_are_refused(tmp_path):
    for ranking, tag, what in (({"q": [("", 1.0)]}, "t", "document id"), ({"q": [("d 2", 1.0)]}, "t", "document id"),
                               ({"q": [("d3\nnl", 1.0)]}, "t", "document id"), ({"q b": [("d", 1.0)]}, "t", "query id"),
                               ({"q": [("d", 1.0)]}, "my run", "run tag")):
        with pytest.raises(ValueError, match=what):
            Run(ranking, tag).write(tmp_path / "x.run")
    assert not (tmp_path / "x.run").exists()


def test_qrels_odd_but_readable_files_are_read_and_reported(tmp_path, caplog):
    headerless = tmp_path / "test.tsv"
    headerless.write_text("q1\td1\t1\nq1\td2\t0\n")
    assert read_qrels(headerless) == [Qrel("q1", "d1", 1), Qrel("q1", "d2", 0)]
    bom = tmp_path / "bom.tsv"
    bom.write_bytes("\ufeffquery-id\tcorpus-id\tscore\nq1\td1\t2\n".encode("utf-8"))
    assert read_qrels(bom) == [Qrel("q1", "d1", 2)]
    odd = tmp_path / "odd.qrels"
    odd.write_text("q1 0 d1 1.7\nq1 0 d2 1\nq1 0 d2 2\n")
    with caplog.at_level(logging.WARNING):
        assert read_qrels(odd) == [Qrel("q1", "d1", 1), Qrel("q1", "d2", 2)]
    assert "1 decimal relevance labels rounded toward zero" in caplog.text and "first on line 1" in caplog.text
    assert "1 repeated (query, document) judgments; the last label is kept (first on line 3)" in caplog.text


def test_latin1_file_names_file_and_line(tmp_path):
    p = tmp_path / "latin.qrels"
    p.write_bytes(b"q1 0 d1 1\nq2 0 caf\xe9 1\n")
    with pytest.raises(FormatError, match=r"latin.qrels:2: not UTF-8 \(byte 0xe9 at column 9\)"):
        read_qrels(p)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab1.-") + [" ", "\t", "\r", "\v", "\f", "\x1c", "\x1f", "\xa0",
                                                          "\u2003", "é"]), max_size=30))
def test_the_reader_splits_every_line_as_trec_eval_does(line):
    """Run.read's fast path (str.split on ASCII lines without the separators \\x1c-\\x1f) splits as trec_eval's
    isspace does, which :func:`split_fields` implements."""
    from irglow.data.trec import split_fields
    from irglow.runs.trec import run_fields

    assert run_fields(line) == split_fields(line)


def test_query_files_end_lines_at_newlines_only(tmp_path):
    """Issue 59.16: str.splitlines split a query at a raw U+2028 inside a JSON string (refused), and numbered every
    later line wrongly."""
    p = tmp_path / "q.jsonl"
    p.write_text('{"_id": "q1", "text": "a\u2028b"}\n{"_id": "q2", "text": "c\x85d"}\n{"_id": 3.0}\n', encoding="utf-8")
    with pytest.raises(FormatError, match=r"q.jsonl:3: query id must be a string"):
        read_topics(p)
    p.write_text('{"_id": "q1", "text": "a\u2028b"}\r\n{"_id": "q2", "text": "c"}\n', encoding="utf-8")
    assert [(q.query_id, q.text) for q in read_topics(p)] == [("q1", "a\u2028b"), ("q2", "c")]
    t = tmp_path / "q.tsv"
    t.write_text("1\tx\u2028y\n2\tz\n\n3 no tab\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"q.tsv:4: expected 'qid<TAB>query text'"):
        read_topics(t)


def test_compare_with_repeated_measures_gives_one_column_each(tmp_path, capsys):
    (tmp_path / "q.qrels").write_text("1 0 d1 1\n1 0 d2 0\n")
    for name in ("a", "b"):
        (tmp_path / f"{name}.run").write_text("1 Q0 d1 1 3 r\n1 Q0 d2 2 2 r\n")
    assert main(["compare", str(tmp_path / "a.run"), str(tmp_path / "b.run"), "--qrels", str(tmp_path / "q.qrels"),
                 "-m", "nDCG@10 NDCG@10 RR@10 MRR@10"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("|  "))
    assert [c.strip() for c in header.strip("|").split("|")][1:3] == ["nDCG@10", "RR@10"] and "MRR" not in header
