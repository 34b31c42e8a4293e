"""Issue 67 (trust round seven): every run one name, every input one reading, every cache one meaning — each item
the tour found, tried as the user did, with the value it must give worked out by hand."""

from __future__ import annotations

import io
import json
import os
import re
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from irglow.cli import build_parser, main
from irglow.data.trec import FormatError, read_qrels
from irglow.runs.columns import read_ranked
from irglow.runs.keys import RunKey
from irglow.runs.trec import check_run_name
from irglow.runs.trec import Run
from tests.files import write_trec


@pytest.fixture
def judged(tmp_path):
    """Query 1 judges d1 relevant; query 2 judges d3 and d4 relevant (3 relevant documents in all)."""
    (tmp_path / "q.qrels").write_text("1 0 d1 1\n2 0 d3 1\n2 0 d4 1\n")
    return tmp_path / "q.qrels"


def _table(capsys) -> dict[str, str]:
    """The one row of ``irglow eval --format csv``: {measure: value} (the test columns left out)."""
    header, row = capsys.readouterr().out.strip().splitlines()[:2]
    return {k: v for k, v in zip(header.split(",")[1:], row.split(",")[1:]) if " " not in k}


# -- 3, and the hang: a path is read once (a pipe, "-" for stdin, a FIFO) or refused ------------------------------
def _fifo(tmp_path: Path, name: str, text: str) -> str:
    """A named FIFO with one writer that writes ``text`` once and goes (what `<(cat x.run)` and mkfifo give)."""
    path = tmp_path / name
    os.mkfifo(path)
    writer = threading.Thread(target=lambda: path.write_text(text), daemon=True)
    writer.start()
    return str(path)


def test_a_run_from_a_fifo_or_a_pipe_is_read_once_and_scored(tmp_path, judged, capsys):
    """Was 0.0 with "is an empty run" (the gzip sniff read the pipe, then the path was opened again), and a FIFO hung
    on its second open.  Query 1's top document is relevant, query 2 is missed: P@1 (1 + 0) / 2 = 0.5; NumRel 3."""
    fifo = _fifo(tmp_path, "x.run", "1 Q0 d1 1 3 r\n1 Q0 d2 2 2 r\n")
    assert main(["eval", fifo, "--qrels", str(judged), "-m", "P@1 NumRel NumQ", "--format", "csv", "--no-judged"]) == 0
    assert _table(capsys) == {"P@1": "0.5", "NumRel": "3.0", "NumQ": "2.0"}
    qrels_fifo = _fifo(tmp_path, "q.fifo", judged.read_text())
    assert main(["eval", write_trec(tmp_path / "y.run", [("1", "d1", 3.0)]), "--qrels", qrels_fifo, "-m", "P@1",
                 "--format", "csv", "--no-judged"]) == 0
    assert _table(capsys) == {"P@1": "0.5"}


def test_dash_reads_standard_input_as_trec_eval_does(tmp_path, judged, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"1 Q0 d1 1 3 r\n2 Q0 d3 1 1 r\n")))
    assert main(["eval", "-", "--qrels", str(judged), "-m", "P@1", "--format", "csv", "--no-judged"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].startswith("stdin,1.0,")


def test_fuse_of_a_pipe_fuses_both_runs(tmp_path):
    """Was: ``fuse <(…) y.run`` fused y alone.  RRF (k 60) of d1 (rank 1 in the pipe) and d9 (rank 1 in the file):
    both 1/61, tied, ordered by id descending."""
    pipe = _fifo(tmp_path, "a.run", "q Q0 d1 1 3 a\n")
    file = write_trec(tmp_path / "b.run", [("q", "d9", 5.0)])
    assert main(["fuse", pipe, file, "--method", "rrf", "-o", str(tmp_path / "f.run")]) == 0
    assert Run.read(tmp_path / "f.run").ranking["q"] == [("d9", 1 / 61), ("d1", 1 / 61)]


def test_a_folder_as_a_run_or_qrels_is_one_error_line(tmp_path, judged, capsys):
    run = write_trec(tmp_path / "a.run", [("1", "d1", 1.0)])
    for argv in (["eval", str(tmp_path), "--qrels", str(judged)], ["eval", run, "--qrels", str(tmp_path)],
                 ["fuse", str(tmp_path), run, "-o", str(tmp_path / "f.run")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"error: {tmp_path}: is a folder, not a file" in err and "Traceback" not in err, argv


# -- 5: NumRel as trec_eval -c ---------------------------------------------------------------------------------
def test_numrel_counts_the_missed_queries_relevant_documents_as_trec_eval_c(tmp_path, judged, capsys):
    """Judged queries 1 and 2, a run of query 1 only: NumQ 2 and NumRel 1 + 2 = 3 (trec_eval 9.0.8 and 10, -c),
    NumRelRet 1.  Was NumRel 1."""
    run = write_trec(tmp_path / "a.run", [("1", "d1", 3.0), ("1", "d2", 2.0)])
    assert main(["eval", run, "--qrels", str(judged), "-m", "NumQ NumRel NumRelRet", "--format", "csv",
                 "--no-judged"]) == 0
    assert _table(capsys) == {"NumQ": "2.0", "NumRel": "3.0", "NumRet(rel=1)": "1.0"}


# -- 8 and a traceback: labels trec_eval's arrays cannot hold -------------------------------------------------
@pytest.mark.parametrize("label", ["1000000001", "3000000000", str(2 ** 63)])  # a negative one is evaluated (round 8)
def test_a_label_trec_eval_would_mis_size_is_refused_naming_file_and_line(tmp_path, label, capsys):
    """Was NumRel 0 beside P@1 1 (1e9: pytrec_eval asks for 8 GB), or an OverflowError (2^63)."""
    (tmp_path / "q.qrels").write_text(f"1 0 d0 1\n1 0 d1 {label}\n")
    run = write_trec(tmp_path / "a.run", [("1", "d1", 1.0)])
    assert main(["eval", run, "--qrels", str(tmp_path / "q.qrels")]) == 2
    err = capsys.readouterr().err
    assert f"q.qrels:2: relevance {int(label)} is beyond 1,000,000" in err and "Traceback" not in err


def test_labels_from_python_are_bounded_too():
    from irglow.data.records import Qrel
    from irglow.eval.measures import per_query, parse_measures

    with pytest.raises(ValueError, match="query q, document d: relevance 2000000000 is beyond"):
        per_query(parse_measures("P@1"), [Qrel("q", "d", 2_000_000_000)], Run({"q": [("d", 1.0)]}))


# -- misleading: what the readers take ---------------------------------------------------------------------------
def test_an_empty_field_is_refused_by_every_reader_and_fields_after_the_tag_are_ignored(tmp_path):
    """``1 Q0 d1  3 r`` is five fields to trec_eval and the strict reader; the columnar reader scored it.  Fields
    after the tag trec_eval ignores (get_trec_results.c), so do both readers."""
    (tmp_path / "e.run").write_text("1 Q0 d0 1 4 r\n1 Q0 d1  3 r\n")
    for read in (Run.read, read_ranked):
        with pytest.raises(FormatError, match=r"e.run:2: expected 6 columns .* got 5"):
            read(tmp_path / "e.run")
    (tmp_path / "x.run").write_text("1 Q0 d1 1 3 r extra words\n1 Q0 d2 2 2 r\n")
    assert read_ranked(tmp_path / "x.run").top(5).ranking == Run.read(tmp_path / "x.run").ranking == \
        {"1": [("d1", 3.0), ("d2", 2.0)]}


def test_an_empty_run_is_an_error_not_an_all_zero_row(tmp_path, judged, capsys):
    """A split whose every query had no searchable term gives empty runs: trec_eval stops ("No queries with both
    results and relevance info"), and so does the table, instead of a row of zeros and exit 0."""
    (tmp_path / "empty.run").write_text("")
    assert main(["eval", str(tmp_path / "empty.run"), "--qrels", str(judged)]) == 2
    assert "run `empty` ranks no document for any query" in capsys.readouterr().err


def test_one_run_is_not_said_to_be_corrected_over_zero_comparisons(tmp_path, judged):
    from irglow.eval.compare import compare

    qrels = read_qrels(judged)
    one = compare({"a": Run({"1": [("d1", 1.0)], "2": [("d3", 1.0)]})}, qrels, "P@1", baseline="a")
    assert "comparison" not in one.caption() and "corrected" not in one.caption()
    two = compare({"a": Run({"1": [("d1", 1.0)]}), "b": Run({"1": [("d2", 1.0)]})}, qrels, "P@1", baseline="a")
    assert "one comparison per measure (nothing to correct)" in two.test_description()


def test_every_command_error_has_the_command_prefix(tmp_path):
    run = write_trec(tmp_path / "a.run", [("1", "d1", 1.0)])
    with pytest.raises(SystemExit, match=r"^irglow eval: error: give --qrels FILE"):
        main(["eval", run])
    with pytest.raises(SystemExit, match=r"^irglow fuse: error: give two runs or more"):
        main(["fuse", run, "-o", str(tmp_path / "f.run")])


# -- a traceback and a segfault: the permutations bounded, the bootstrap's memory too ---------------------------------
def test_permutations_beyond_a_million_are_refused_before_any_work(tmp_path, judged, capsys):
    from irglow.eval.compare import compare

    run = write_trec(tmp_path / "a.run", [("1", "d1", 1.0)])
    with pytest.raises(SystemExit) as stop:
        main(["compare", run, run, "--qrels", str(judged), "--permutations", "1000000000"])
    assert stop.value.code == 2
    assert "--permutations = 1000000000 must be an integer >= 1 and <= 1,000,000" in capsys.readouterr().err
    with pytest.raises(ValueError, match="permutations = 1000000000 must be"):
        compare({"a": Run.read(run)}, read_qrels(judged), "P@1", permutations=10 ** 9)


def test_the_bootstrap_holds_a_block_of_means_at_a_time_and_gives_the_same_values(monkeypatch):
    from irglow.eval import significance as sig

    diffs = np.random.default_rng(3).normal(size=(12, 7))
    whole = sig.bootstrap(diffs, 500, seed=4)
    monkeypatch.setattr(sig, "BOOTSTRAP_FLOATS", 1000)  # two columns a block
    blocks = sig.bootstrap(diffs, 500, seed=4)
    for a, b in zip(whole, blocks):  # the same resamples (a matrix product's rounding aside)
        assert np.allclose(a, b, rtol=0, atol=1e-12)


# -- tracebacks: read-only places ---------------------------------------------------------------------------------
def test_an_unwritable_place_is_one_line_naming_the_file_not_its_temporary(tmp_path, judged, capsys, monkeypatch):
    """A read-only mount answers the temporary file's creation with EROFS: the message names the output."""
    import errno
    import tempfile

    def refused(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", os.path.join(kwargs.get("dir", "."), ".x.123.tmp"))

    monkeypatch.setattr(tempfile, "mkstemp", refused)
    assert main(["qrels", "demo:n_topics=3,docs_per_topic=2,n_roundups=0,n_background=0", "-o",
                 str(tmp_path / "out.qrels")]) == 2
    err = capsys.readouterr().err
    assert f"irglow qrels: error: {tmp_path / 'out.qrels'}: Read-only file system: irglow cannot write there" in err
    assert ".tmp" not in err and "Traceback" not in err


# -- misleading: a demo setting given twice -----------------------------------------------------------------------
def test_a_demo_setting_given_twice_is_refused():
    from irglow.data.collection import load_collection

    with pytest.raises(ValueError, match="n_topics is given twice in 'demo:n_topics=3,n_topics=30'"):
        load_collection("demo:n_topics=3,n_topics=30")


def test_search_offers_qld_and_registered_systems():
    parser = build_parser()
    assert parser.parse_args(["search", "demo", "--system", "qld", "--mu", "500"]).system == "qld"
    with pytest.raises(SystemExit):
        parser.parse_args(["search", "demo", "--system", "bm42"])


# -- 1 and the outside write: run names --------------------------------------------------------------------------
def _with_rerank_named(name: str) -> dict:
    return {"collection": {"name": "demo"}, "lexical": {"systems": ["bm25", "bm25f", "tfidf"]},
            "rerank": {"enabled": True, "models": [name], "variants": {name: {"kind": "nrmf", "first_stage": "tfidf"}}}}


@pytest.mark.parametrize("config,both", [
    (_with_rerank_named("bm25f"), "by [lexical] and by [rerank]"),
    ({"collection": {"name": "demo"}, "glow": {"enabled": True, "variants": ["glow"]},
      "rerank": {"enabled": True, "models": ["glow"], "variants": {"glow": {"kind": "monobert"}}}},
     "by [glow] and by [rerank]"),
    ({"collection": {"name": "demo"}, "lexical": {"systems": ["bm25", "tfidf"]},
      "rerank": {"enabled": True, "models": ["monobert"]}, "fusion": {"enabled": True, "runs": ["bm25+tfidf"]},
      "eval": {"runs": ["monobert"]}}, None),
])
def test_a_tag_two_stages_write_is_refused_at_binding(config, both):
    """Was: a re-ranking named bm25f overwrote the lexical bm25f.run; the table showed NRM-F-over-tfidf numbers as
    bm25f, exit 0, and check_config listed bm25f twice."""
    from irglow.plan import check_config

    if both is None:  # distinct tags bind
        assert len(set(check_config(config))) == len(check_config(config))
        return
    with pytest.raises(ValueError, match=rf"run '\w+' is made {re.escape(both)}"):
        check_config(config)


def test_a_reranking_named_like_a_lexical_run_is_refused_from_python_too():
    from irglow import Experiment, Lexical, NRMF, Rerank

    with pytest.raises(ValueError, match=r"run 'bm25f' is made by \[lexical\] and by \[rerank\]"):
        Experiment("demo", systems=[Lexical("bm25f"), Rerank(Lexical("tfidf"), NRMF(), name="bm25f")])


NAMES = st.one_of(st.text(max_size=12), st.sampled_from(["../other/results", "a b", ".hidden", "x/y", "x\\y", "..",
                                                         "monobert-tfidf", "é-run", "a\tb", "n" * 201, "ok(bm25)"]))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(NAMES)
def test_every_run_name_a_user_gives_goes_through_one_check(name):
    """A re-ranking's name, given in a configuration or through ``Rerank(…, name=…)``: bound only if
    :func:`check_run_name` takes it, and then its run file lies inside the output folder, named by it alone."""
    from irglow import Experiment, Lexical, NRMF, Rerank
    from irglow.plan import check_config

    try:
        check_run_name(name)
        fine = True
    except ValueError:
        fine = False
    bound = []
    for make in (lambda: check_config(_with_rerank_named(name)),
                 lambda: Experiment("demo", systems=[Rerank(Lexical("tfidf"), NRMF(), name=name)]).check()):
        try:
            bound.append(name in make())
        except ValueError:
            bound.append(False)
    if name in ("bm25", "bm25f", "tfidf", "bm25-mf", ""):  # taken (or empty: the model's kind names it)
        return
    assert bound == [fine, fine], name
    if fine:
        out = Path("/out")
        path = RunKey(name).path(out)
        assert path.parent == out and path.name == f"{name}.run"


# -- misleading: a fusion of re-rankings says it is cut -----------------------------------------------------------
def test_a_fusion_of_rerankings_says_it_fuses_their_blocks():
    from irglow.outputs import cut_fusions_note
    from irglow.plan import bind_plan

    plan = bind_plan({"collection": {"name": "demo"}, "lexical": {"systems": ["bm25"]},
                      "rerank": {"enabled": True, "models": ["monobert", "nrmf"], "depth": 20},
                      "fusion": {"enabled": True, "runs": ["monobert+nrmf", "bm25+monobert"]}})
    assert cut_fusions_note(plan, list(plan.tags)) == (
        "`monobert+nrmf` fuses the re-ranked block of `monobert` (top 20), `nrmf` (top 20) only, not the first stage "
        "below it; it ranks at most 40 documents per query.\n"
        "`bm25+monobert` fuses the re-ranked block of `monobert` (top 20) only, not the first stage below it.\n")


# -- misleading: a saved experiment keeps its fusions' own settings ------------------------------------------------
def test_a_saved_experiment_and_a_run_folder_keep_a_fusions_own_method_and_weights(tmp_path):
    from irglow import Experiment, Fusion, Lexical
    from irglow.plan import ranker

    rrf = Fusion([Lexical("bm25"), Lexical("tfidf")], method="rrf")
    fixed = Fusion([Lexical("bm25"), Lexical("bm25f")], weights=[0.3, 0.7])
    exp = Experiment("demo", systems=[Lexical("bm25"), rrf, fixed], out=tmp_path / "out")
    loaded = Experiment.load(exp.save(tmp_path / "e.yaml"))
    assert loaded.rankers == exp.rankers
    assert ranker("bm25+tfidf", exp.config) == rrf and ranker("bm25+bm25f", exp.config) == fixed


# -- g: an earlier experiment's runs in the same folder --------------------------------------------------------
def test_runs_of_units_this_run_did_not_make_are_swept_and_a_changed_one_is_left(tmp_path, caplog):
    from irglow.stage_cache import StageCache
    from irglow.utils.digest import file_digest

    out = tmp_path / "out"
    (out / ".stages").mkdir(parents=True)
    for name in ("bm25", "old", "edited"):
        Run({"q": [("d", 1.0)]}, name).write(out / f"{name}.run")
        (out / ".stages" / f"lexical-{name}.json").write_text(json.dumps(
            {"stage": f"lexical:{name}", "key": "k", "runs": [[name, "test", file_digest(out / f"{name}.run")]]}))
    (out / "edited.run").write_text("q Q0 d 1 2.0 mine\n")
    cache = StageCache(out, {})
    cache.report["lexical:bm25"] = "ran"
    assert cache.sweep() == [out / "old.run"]
    assert sorted(p.name for p in out.glob("*.run")) == ["bm25.run", "edited.run"]
    assert sorted(p.name for p in (out / ".stages").glob("*.json")) == ["lexical-bm25.json"]
    assert "edited.run: left in place" in caplog.text


# -- 7: the id table and the document store's tables checked on open -----------------------------------------------
def test_a_cut_id_table_is_named_and_written_again(tmp_path, caplog):
    """Was: ``truncate -s -1 ids.utf8`` → the next search wrote d5 for d59, exit 0."""
    from irglow.index.id_table import FOLDER, DamagedTable, IdTable

    ids = [f"d{i}" for i in range(60)]
    table = IdTable.write(tmp_path / FOLDER, ids)
    assert table[59] == "d59"
    data = tmp_path / FOLDER / "ids.utf8"
    data.write_bytes(data.read_bytes()[:-1])
    with pytest.raises(DamagedTable, match=rf"{data} is 169 bytes; its offsets say 170: the table is damaged"):
        IdTable(tmp_path / FOLDER)
    again = IdTable.of(tmp_path, lambda: iter(ids))
    assert list(again) == ids and "the id table is written again" in caplog.text
    offsets = tmp_path / FOLDER / "hashes.npy"
    offsets.write_bytes(offsets.read_bytes()[:-8])
    with pytest.raises(DamagedTable, match="hashes.npy unreadable"):
        IdTable(tmp_path / FOLDER)


def test_damaged_document_store_tables_are_scanned_again(tmp_path, caplog):
    from irglow.data.beir import BeirCollection
    from irglow.data.docstore import docs_store
    from tests.files import write_beir

    folder = write_beir(tmp_path / "c")
    collection = BeirCollection(folder)
    collection.irglow_data_dir = tmp_path / "data"
    assert docs_store(collection)["d2"].fields["text"] == ("influenza season",)
    tables = next((tmp_path / "data").rglob("offsets.npy")).parent
    np.save(tables / "lines.npy", np.zeros(1, np.int64))  # one entry for two documents
    again = BeirCollection(folder)  # a new process's collection: its store opens the kept tables
    again.irglow_data_dir = tmp_path / "data"
    assert docs_store(again)["d2"].fields["text"] == ("influenza season",)
    assert "document store tables" in caplog.text and "damaged" in caplog.text


# -- 6: another package's code in the key ------------------------------------------------------------------------
def test_a_plugin_modules_code_moves_its_key_and_irglows_own_have_none(tmp_path, monkeypatch):
    from irglow.utils.plugins import module_code

    (tmp_path / "my_plugin.py").write_text("K = 0.7\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = module_code("my_plugin")
    (tmp_path / "my_plugin.py").write_text("K = 0.1\n")
    assert module_code("my_plugin")["source"] != before["source"]
    assert module_code("irglow.lexical.systems") is None


def test_a_kinds_own_table_names_its_kind():
    """``[rerank.monobert] kind = "nrmf"`` was dropped unseen (the table's name won)."""
    from irglow.plan import check_config

    with pytest.raises(ValueError, match=r"rerank.monobert.kind = 'nrmf': \[rerank.monobert\] holds monobert's"):
        check_config({"collection": {"name": "demo"},
                      "rerank": {"enabled": True, "models": ["monobert"], "monobert": {"kind": "nrmf"}}})


def test_the_statistics_of_a_read_only_index_go_to_the_cache(tmp_path, monkeypatch):
    """``irglow report --data …`` beside an index in a read-only place stopped with a traceback writing its
    statistics; they go under $IRGLOW_CACHE/stats/<index folder> (its name carries the corpus digest)."""
    from types import SimpleNamespace

    from irglow.index import stats

    index = SimpleNamespace(path=tmp_path / "indexes" / "demo-abc-def")
    index.path.mkdir(parents=True)
    monkeypatch.setenv("IRGLOW_CACHE", str(tmp_path / "cache"))
    assert stats.stats_dir(index) == index.path / stats.STATS_DIR
    monkeypatch.setattr(stats.os, "access", lambda path, mode: False)
    assert stats.stats_dir(index) == tmp_path / "cache" / "stats" / "demo-abc-def"
    (index.path / stats.STATS_DIR).mkdir()
    (index.path / stats.STATS_DIR / "meta.json").write_text("{}")  # exported before the place became read-only
    assert stats.stats_dir(index) == index.path / stats.STATS_DIR


def test_the_inputs_ranks_compare_move_with_the_corpus_the_queries_and_the_qrels(tmp_path):
    """Issue 67.2 (the torchrun test changes the corpus; here each input alone)."""
    from irglow.data.beir import BeirCollection
    from irglow.data.collection import input_digests
    from tests.files import write_beir

    def digests(name, **changes):
        folder = write_beir(tmp_path / name, **changes)
        collection = BeirCollection(folder)
        collection.irglow_data_dir = tmp_path / "data"
        return input_digests(collection, ["test"])

    base = digests("a")
    assert set(base) == {"collection", "queries:test", "qrels:test"}
    other_corpus = digests("a2", docs=['{"_id": "d1", "title": "lyme", "text": "lyme disease ticks"}'])
    other_queries = digests("a3", queries=['{"_id": "q1", "text": "lyme disease"}'])
    other_qrels = digests("a4", qrels="query-id\tcorpus-id\tscore\nq1\td2\t1\n")
    assert other_corpus["collection"] != base["collection"]
    assert other_queries["queries:test"] != base["queries:test"] and other_queries["qrels:test"] == base["qrels:test"]
    assert other_qrels["qrels:test"] != base["qrels:test"]
