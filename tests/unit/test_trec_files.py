import pytest

from irglow.data.trec import FormatError, read_qrels, read_topics, write_qrels
from irglow.data.records import Qrel
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
    with pytest.raises(FormatError, match=r"q.qrels:4: relevance 'x' is not a number"):
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
