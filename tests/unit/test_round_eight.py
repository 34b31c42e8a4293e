"""Issue 80 (trust round eight): a damaged cache never stops a command, one writer per output folder, every count as
trec_eval counts it — each item the tour found, tried as the user did, with the value worked out by hand.  The items
that need Java or a pipeline are in tests/integration/test_round_eight.py."""

from __future__ import annotations

import errno
import logging
import os
import resource
import signal
import sys
from pathlib import Path

import pytest

from irglow.cli import main
from irglow.config import load_config
from irglow.data.records import Qrel
from irglow.eval.measures import aggregate, parse_measures
from irglow.runs.trec import Run
from irglow.utils.atomic import atomic_write_text
from tests.files import write_beir, write_trec


def _table(capsys) -> dict[str, str]:
    """The one row of ``irglow eval --format csv``: {measure: value} (the test columns left out)."""
    header, row = capsys.readouterr().out.strip().splitlines()[:2]
    return {k: v for k, v in zip(header.split(",")[1:], row.split(",")[1:]) if " " not in k}


# -- 2: NumRet counts the documents of a query judged with negative labels only --------------------------------------
def test_numret_counts_a_query_whose_every_judgment_is_negative(tmp_path, capsys):
    """The tour's case: qrels ``0 0 x 1 / 1 0 a -1 / 2 0 b 1``, run ``0 x, 1 a, 1 c, 2 b``.  trec_eval 9 and 10
    (``-c``): NumQ 3, NumRet 1 + 2 + 1 = 4 (query 1 retrieved two documents, though none is relevant), NumRel 2,
    NumRelRet 2.  irglow said NumRet 2."""
    qrels = [Qrel("0", "x", 1), Qrel("1", "a", -1), Qrel("2", "b", 1)]
    run = Run({"0": [("x", 3.0)], "1": [("a", 2.0), ("c", 1.0)], "2": [("b", 1.0)]}, "t")
    got = aggregate(parse_measures("NumQ NumRet NumRel NumRelRet P@1"), qrels, run)
    assert got == {"NumQ": 3.0, "NumRet": 4.0, "NumRel": 2.0, "NumRet(rel=1)": 2.0, "P@1": 2 / 3}
    (tmp_path / "q.qrels").write_text("0 0 x 1\n1 0 a -1\n2 0 b 1\n")
    r = write_trec(tmp_path / "r.run", [("0", "x", 3), ("1", "a", 2), ("1", "c", 1), ("2", "b", 1)])
    assert main(["eval", r, "--qrels", str(tmp_path / "q.qrels"), "-m", "NumQ NumRet", "--format", "csv",
                 "--no-judged"]) == 0
    assert _table(capsys) == {"NumQ": "3.0", "NumRet": "4.0"}


# -- 15: a large negative label is evaluated, as trec_eval evaluates it ------------------------------------------------
def test_a_large_negative_label_is_evaluated_not_refused(tmp_path, capsys):
    """A negative label is "in the pool, not judged" whatever its size: trec_eval sizes nothing by it.  Query 1 judges
    d1 relevant and d2 -5,000,000; the run ranks d2 first: NumRel 1, P@1 0, AP 1/2 (d1 at rank 2).  The reason given
    before ("would ask for … GiB") holds for a large positive label only, which is still refused."""
    (tmp_path / "q.qrels").write_text("1 0 d1 1\n1 0 d2 -5000000\n")
    r = write_trec(tmp_path / "r.run", [("1", "d2", 2), ("1", "d1", 1)])
    assert main(["eval", r, "--qrels", str(tmp_path / "q.qrels"), "-m", "NumRel P@1 AP", "--format", "csv",
                 "--no-judged"]) == 0
    assert _table(capsys) == {"NumRel": "1.0", "P@1": "0.0", "AP": "0.5"}
    got = aggregate(parse_measures("NumRel P@1 AP infAP Judged@2"), [Qrel("1", "d1", 1), Qrel("1", "d2", -10**30)],
                    Run({"1": [("d2", 2.0), ("d1", 1.0)]}, "t"))
    assert got["NumRel"] == 1.0 and got["P@1"] == 0.0 and got["AP"] == 0.5 and got["Judged@2"] == 1.0
    (tmp_path / "huge.qrels").write_text("1 0 d1 1\n1 0 d2 -9223372036854775809\n")  # beyond int64: no overflow
    assert main(["eval", r, "--qrels", str(tmp_path / "huge.qrels"), "-m", "P@1 AP", "--format", "csv",
                 "--no-judged", "--judged-only"]) == 0
    assert _table(capsys) == {"P@1": "0.0", "AP": "0.5", "P@1'": "1.0", "AP'": "1.0"}
    (tmp_path / "big.qrels").write_text("1 0 d1 5000000\n")
    assert main(["eval", r, "--qrels", str(tmp_path / "big.qrels"), "-m", "P@1"]) == 2
    assert "beyond 1,000,000" in capsys.readouterr().err


# -- 9: "-o -" is standard output -----------------------------------------------------------------------------------
def test_dash_as_output_is_standard_output(tmp_path, capsys, monkeypatch):
    """``fuse``, ``qrels`` and ``compare`` with ``-o -`` write to standard output, never a file named ``-``, and
    their own line of what they did goes to standard error (the run on stdout stays a run)."""
    monkeypatch.chdir(tmp_path)
    a = write_trec(tmp_path / "a.run", [("1", "d1", 2), ("1", "d2", 1)])
    b = write_trec(tmp_path / "b.run", [("1", "d2", 2), ("1", "d1", 1)])
    assert main(["fuse", a, b, "-o", "-", "--tag", "f"]) == 0
    out = capsys.readouterr()
    lines = out.out.splitlines()
    # RRF ties the two (1/61 + 1/62 each): trec_eval's order, document id descending
    assert [line.split()[2] for line in lines] == ["d2", "d1"] and all(line.endswith(" f") for line in lines)
    assert "standard output" in out.err
    assert not (tmp_path / "-").exists() and not (tmp_path / "-.manifest.json").exists()

    data = write_beir(tmp_path / "c", qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\n")
    assert main(["qrels", data, "--split", "test", "-o", "-"]) == 0
    assert capsys.readouterr().out == "q1 0 d1 1\nq1 0 d2 0\n"

    (tmp_path / "q.qrels").write_text("1 0 d1 1\n")
    assert main(["compare", a, b, "--qrels", str(tmp_path / "q.qrels"), "-m", "P@1", "--format", "csv",
                 "-o", "-"]) == 0
    table = capsys.readouterr().out
    assert table.count("\n") == 3 and table.startswith(",P@1,") and table.splitlines()[1].startswith("a,1.0")
    assert not (tmp_path / "-").exists()


# -- 10: a file-size limit names the file --------------------------------------------------------------------------
def test_a_file_size_limit_names_the_file_it_stopped(tmp_path, capsys):
    """``[Errno 27] File too large`` said no path (a full disk named the folder): the file the user gave is named, and
    nothing half-written is left."""
    target = tmp_path / "big.txt"
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))
    try:
        with pytest.raises(OSError) as e:
            atomic_write_text(target, "x" * 100_000)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old)
    assert e.value.errno == errno.EFBIG and e.value.filename == str(target)
    assert not target.exists() and list(tmp_path.iterdir()) == []
    from irglow.cli import os_error

    assert str(target) in os_error(e.value)


# -- 14: a topics file with no query -------------------------------------------------------------------------------
@pytest.mark.parametrize("name,text", [("e.tsv", ""), ("e.tsv", "\n\n"), ("queries.jsonl", ""),
                                       ("t.txt", "no topic here\n")])
def test_a_topics_file_that_holds_no_queries_is_refused(tmp_path, name, text):
    """An empty topics file gave a 0-byte run and exit 0."""
    from irglow.data.trec import read_topics

    (tmp_path / name).write_text(text)
    if name == "t.txt":  # a line without a tab is malformed, not empty
        with pytest.raises(ValueError, match="expected 'qid<TAB>query text'"):
            read_topics(tmp_path / name)
        return
    with pytest.raises(ValueError, match=f"{name} holds no queries"):
        read_topics(tmp_path / name)


# -- 17: a folder named as a configuration ---------------------------------------------------------------------------
def test_a_folder_given_as_a_configuration_is_said_to_be_a_folder(tmp_path):
    (tmp_path / "cfgs").mkdir()
    (tmp_path / "cfgs" / "a.toml").write_text("")
    with pytest.raises(IsADirectoryError, match=r"is a folder, not a file: name a file in it \(a.toml\)"):
        load_config(tmp_path / "cfgs")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "manifest.json").write_text("{}")
    with pytest.raises(IsADirectoryError, match="its manifest.json, and Experiment.save writes a file"):
        load_config(tmp_path / "out")
    from irglow.experiment import Experiment

    with pytest.raises(IsADirectoryError, match="is a folder"):
        Experiment.load(tmp_path / "out")
    # irglow's own folder of configurations, named from anywhere (`irglow run --config configs`)
    with pytest.raises(IsADirectoryError, match=r"configuration configs is a folder, not a file: name a file in it "
                                                r"\(demo.toml, "):
        load_config("configs")


# -- 12: an explicit JAVA_HOME that is too old is said ----------------------------------------------------------------
def test_an_explicit_java_home_too_old_is_said_without_verbose(tmp_path, monkeypatch, caplog):
    from irglow.index import jvm

    old = tmp_path / "jdk-17"
    (old / "lib" / "server").mkdir(parents=True)
    (old / "lib" / "server" / "libjvm.so").write_bytes(b"")
    (old / "release").write_text('JAVA_VERSION="17.0.15"\n')
    other = jvm.JavaRuntime(home=tmp_path / "jdk-25", major=25, source="system", has_vector_module=True)
    monkeypatch.setenv("JAVA_HOME", str(old))
    monkeypatch.setattr(jvm, "_find_java", lambda: other)
    jvm.find_java.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger="irglow.index.jvm"):
            assert jvm.find_java() is other
    finally:
        jvm.find_java.cache_clear()
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert f"JAVA_HOME={old} is not used (Java 17; irglow needs Java 21 or newer)" in caplog.text
    assert "jdk-25 (Java 25, system)" in caplog.text


# -- 3: a re-ranking named as another ------------------------------------------------------------------------------
def test_a_variant_named_as_another_reranking_is_refused_and_one_without_a_first_stage_is_what_it_says():
    """``[rerank.variants."nrmf(tfidf)"]`` with ``first_stage = "bm25"`` made a BM25 re-ranking whose row said tfidf
    (and whose transformer put the BM25-trained model behind tfidf)."""
    from irglow.models.rerank.stage import RerankSettings

    def bound(variant: dict):
        return RerankSettings.from_config({"rerank": {"enabled": True, "models": ["nrmf(tfidf)"],
                                                      "variants": {"nrmf(tfidf)": variant}}})

    with pytest.raises(ValueError, match=r"is named as nrmf re-ranking 'tfidf' but re-ranks 'bm25'"):
        bound({"kind": "nrmf", "first_stage": "bm25"})
    with pytest.raises(ValueError, match=r"is named as nrmf re-ranking 'tfidf' but a monobert"):
        bound({"kind": "monobert", "first_stage": "tfidf"})
    assert bound({"kind": "nrmf"}).expanded["nrmf(tfidf)"].first_stage == "tfidf"  # what its name says
    assert bound({"kind": "nrmf", "first_stage": "tfidf", "epochs": 1}).expanded["nrmf(tfidf)"].first_stage == "tfidf"


# -- not counted but wanted: a wide CSV table warns nothing ------------------------------------------------------------
def test_a_csv_table_of_many_measures_prints_no_pandas_warning(tmp_path, capsys):
    import warnings

    import pandas as pd

    (tmp_path / "q.qrels").write_text("1 0 d1 1\n2 0 d2 1\n")
    a = write_trec(tmp_path / "a.run", [("1", "d1", 2), ("1", "d2", 1), ("2", "d1", 1)])
    b = write_trec(tmp_path / "b.run", [("1", "d2", 2), ("2", "d2", 1)])
    measures = "P@1 P@2 P@3 P@5 AP nDCG nDCG@2 nDCG@3 R@1 R@2 R@3 RR RR@2 NumRet NumRel Bpref Rprec Success@1"
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.PerformanceWarning)  # was 30 lines of it
        assert main(["compare", a, b, "--qrels", str(tmp_path / "q.qrels"), "-m", measures, "--format", "csv"]) == 0
    header = capsys.readouterr().out.splitlines()[0].split(",")
    assert header[1:19] == measures.split()[:13] + ["NumRet", "NumRel", "Bpref", "Rprec", "Success@1"]
    assert header[19:21] == ["P@1 delta", "P@1 ci_low"]


# -- 13: files of an earlier experiment ------------------------------------------------------------------------------
def test_a_run_written_over_takes_the_earlier_commands_manifest_with_it(tmp_path):
    """``irglow search --system tfidf -o out/bm25.run`` left ``bm25.run.manifest.json`` saying tfidf beside the
    pipeline's ``bm25.run`` written later."""
    from irglow.config import run_manifest_path, write_run_manifest

    path = tmp_path / "bm25.run"
    Run({"1": [("d1", 1.0)]}, "tfidf").write(path)
    write_run_manifest(path, {"search": {"system": "tfidf"}})
    assert run_manifest_path(path).is_file()
    Run({"1": [("d2", 1.0)]}, "bm25").write(path)  # what a pipeline does
    assert not run_manifest_path(path).exists()


def test_a_file_size_limit_on_a_corpus_encoding_is_said_as_one(tmp_path):
    """A sibling of item 10: the memory-mapped vector file of an encoding, stopped by ``ulimit -f``, said nothing of
    where (numpy's own write), or called a size limit a full disk."""
    from irglow.dense.encode import vector_file

    target = tmp_path / "embeddings.npy"
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 16, hard))
    try:
        with pytest.raises(OSError) as e:
            vector_file(target, (10_000, 384))
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old)
    assert e.value.errno == errno.EFBIG and e.value.filename == str(target)
    assert "a file-size limit stops" in str(e.value) and "no space" not in str(e.value)
