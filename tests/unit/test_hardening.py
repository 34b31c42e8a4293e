"""Inputs that must not silently go wrong: ties, duplicates, NaN, missing queries, odd files."""

import json
import logging
import multiprocessing
import os

import pytest

from irglow.data.beir import BeirCollection
from irglow.data.records import Qrel
from irglow.data.trec import FormatError, read_qrels, read_topics
from irglow.eval.compare import compare
from irglow.eval.measures import aggregate, parse_measures
from irglow.runs.trec import Run
from irglow.utils.atomic import atomic_dir, atomic_file


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


def test_compare_scores_missing_queries_zero_and_says_so():
    qrels = [Qrel("q1", "d1", 1), Qrel("q2", "d2", 1)]
    full = Run({"q1": [("d1", 1.0)], "q2": [("d2", 1.0)]})
    half = Run({"q1": [("d1", 1.0)]})
    cmp = compare({"full": full, "half": half}, qrels, ["RR@10"], baseline="full")
    assert cmp.means.loc["half", "RR@10"] == 0.5  # q2 counts as 0, as trec_eval -c
    assert "`half` misses 1" in cmp.to_markdown() and "`full` misses" not in cmp.to_markdown()


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
    assert "1 non-integer relevance labels rounded down" in caplog.text and "first on line 1" in caplog.text
    assert "1 repeated (query, document) judgments; the last label is kept (first on line 3)" in caplog.text


def test_latin1_file_names_file_and_line(tmp_path):
    p = tmp_path / "latin.qrels"
    p.write_bytes(b"q1 0 d1 1\nq2 0 caf\xe9 1\n")
    with pytest.raises(FormatError, match=r"latin.qrels:2: not UTF-8 \(byte 0xe9 at column 9\)"):
        read_qrels(p)


def _beir(tmp_path, docs, queries=(), qrels="query-id\tcorpus-id\tscore\n"):
    (tmp_path / "qrels").mkdir(parents=True, exist_ok=True)
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (tmp_path / "qrels" / "test.tsv").write_text(qrels)
    return BeirCollection(tmp_path)


def test_beir_fields_are_discovered_over_the_whole_corpus(tmp_path):
    docs = [{"_id": f"d{i}", "title": "t", "text": "x"} for i in range(1005)]
    docs.append({"_id": "late", "abstract": "zanzibar quokka"})
    assert _beir(tmp_path, docs).fields == ("title", "text", "abstract")


def test_beir_duplicate_and_bad_document_ids_stop_with_lines(tmp_path):
    coll = _beir(tmp_path, [{"_id": "d1", "text": "a"}, {"_id": "d2", "text": "b"}, {"_id": "d1", "text": "c"}])
    with pytest.raises(FormatError, match=r"corpus.jsonl:3: duplicate document id 'd1' \(first on line 1\)"):
        list(coll.docs_iter())
    coll = _beir(tmp_path, [{"_id": "d 2", "text": "a"}])
    with pytest.raises(FormatError, match=r"corpus.jsonl:1: document id must be non-empty without whitespace"):
        list(coll.docs_iter())


def test_beir_null_query_text_and_dangling_judgments(tmp_path, caplog):
    coll = _beir(tmp_path, [{"_id": "d1", "text": "a"}],
                 [{"_id": "q1", "text": None}, {"_id": "q2", "text": "fine"}],
                 "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\tgone\t1\nq9\td1\t1\n")
    with caplog.at_level(logging.WARNING):
        queries = coll.queries("test")
    assert [(q.query_id, q.text) for q in queries] == [("q1", ""), ("q2", "fine")]
    assert "query q1 has no text" in caplog.text
    assert "1 judged queries are not in queries.jsonl" in caplog.text
    assert "1 judgments (1 queries) name documents missing from corpus.jsonl" in caplog.text
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"_id": "q b", "text": "x"}\n')
    with pytest.raises(FormatError, match="query id must be non-empty"):
        read_topics(bad)


def test_atomic_outputs_respect_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        with atomic_file(tmp_path / "f.txt") as tmp:
            tmp.write_text("x")
        with atomic_dir(tmp_path / "d") as tmp:
            (tmp / "a").write_text("x")
    finally:
        os.umask(old)
    assert (tmp_path / "f.txt").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "d").stat().st_mode & 0o777 == 0o755


def _replace_many(path: str, tag: str) -> int:
    for i in range(40):
        with atomic_dir(path) as tmp:
            (tmp / "who").write_text(f"{tag}{i}")
    return 0


def test_atomic_dir_is_safe_under_concurrent_writers(tmp_path):
    target = str(tmp_path / "shared")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        assert pool.starmap(_replace_many, [(target, "a"), (target, "b")]) == [0, 0]
    assert (tmp_path / "shared" / "who").read_text() in {"a39", "b39"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared"]  # nothing left beside it


def test_leftovers_of_a_killed_writer_are_swept(tmp_path):
    """A process killed mid-build never runs its ``finally``: its pid-tagged temp folder is removed by
    the next writer; a live process's folder and unrelated names stay."""
    import subprocess
    import sys

    from irglow.utils.atomic import sweep_stale

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    stale = tmp_path / f".index.{dead_pid}.abcd.tmp"
    live = tmp_path / f".index.{os.getpid()}.efgh.tmp"
    other = tmp_path / ".index.notapid.tmp"
    for p in (stale, live, other):
        (p / "segment").mkdir(parents=True)
    with atomic_dir(tmp_path / "index") as tmp:
        (tmp / "done").write_text("1")
        assert tmp.name.startswith(f".index.{os.getpid()}.")
    assert not stale.exists() and live.exists() and other.exists() and (tmp_path / "index" / "done").is_file()
    assert sweep_stale(tmp_path, ".index.") == []


def test_a_version_moved_aside_by_a_killed_writer_is_put_back(tmp_path):
    """Killed (no ``finally``) between moving the old folder aside and moving the new one in: the next
    writer finds no target and puts the old version back before it starts, so a failed rewrite still
    leaves it; with the target present, a stale copy is only removed."""
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    aside = tmp_path / f".model.{int(dead.stdout)}.wxyz.old"
    half = tmp_path / f".model.{int(dead.stdout)}.abcd.tmp"
    (aside / "weights").mkdir(parents=True)
    (aside / "weights" / "w").write_text("version 1")
    half.mkdir()
    with pytest.raises(RuntimeError):
        with atomic_dir(tmp_path / "model") as tmp:
            (tmp / "w").write_text("version 2, never finished")
            raise RuntimeError("training crashed")
    assert (tmp_path / "model" / "weights" / "w").read_text() == "version 1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    (tmp_path / f".model.{int(dead.stdout)}.efgh.old").mkdir()  # a stale copy beside a target that is there
    with atomic_dir(tmp_path / "model") as tmp:
        (tmp / "w").write_text("version 2")
    assert (tmp_path / "model" / "w").read_text() == "version 2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_a_killed_writers_half_file_is_swept_by_the_next_write(tmp_path):
    """``atomic_file`` temp names carry the pid: a dead writer's is removed, a live one's and a file
    without a pid are kept."""
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".trainer.pt.{int(dead.stdout)}.abcd.tmp"
    live = tmp_path / f".trainer.pt.{os.getpid()}.efgh.tmp"
    other = tmp_path / ".trainer.pt.notapid.tmp"
    for p in (stale, live, other):
        p.write_bytes(b"half")
    with atomic_file(tmp_path / "trainer.pt") as tmp:
        assert tmp.name.startswith(f".trainer.pt.{os.getpid()}.")
        tmp.write_bytes(b"whole")
    assert (tmp_path / "trainer.pt").read_bytes() == b"whole"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["trainer.pt", live.name, other.name])


def test_atomic_dir_interrupted_mid_swap_keeps_the_previous_version(tmp_path, monkeypatch):
    """Ctrl-C between moving the old directory aside and moving the new one in leaves the old one in place."""
    import os

    from irglow.utils import atomic

    target = tmp_path / "checkpoint"
    with atomic.atomic_dir(target) as tmp:
        (tmp / "trainer.pt").write_text("epoch 1")
    real, calls = os.replace, []

    def interrupted(src, dst):
        calls.append((src, dst))
        if len(calls) == 3:  # 1: new onto the full old one (fails), 2: old aside, 3: new in → Ctrl-C here
            raise KeyboardInterrupt
        return real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        with atomic.atomic_dir(target) as tmp:
            (tmp / "trainer.pt").write_text("epoch 2")
    monkeypatch.undo()
    assert (target / "trainer.pt").read_text() == "epoch 1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint"]


def test_a_new_checkpoint_replaces_the_old_without_a_moment_of_none(tmp_path, monkeypatch):
    """A checkpoint is one file renamed over the last: at no point is there no ``trainer.pt`` (a kill then
    would lose it; a folder swap had such a moment, and a test polling for the file saw it vanish)."""
    import torch

    from irglow.models.checkpoints import load_trainer_checkpoint, save_trainer_checkpoint
    from irglow.utils import atomic

    folder = tmp_path / "checkpoint"
    layer = torch.nn.Linear(2, 1)
    save_trainer_checkpoint(folder, {"epoch": 1}, rng=False, model=layer)
    real, seen = os.replace, []

    def watched(src, dst):
        seen.append((str(dst), (folder / "trainer.pt").is_file()))
        return real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", watched)
    save_trainer_checkpoint(folder, {"epoch": 2}, rng=False, model=layer)
    monkeypatch.undo()
    assert seen == [(str(folder / "trainer.pt"), True)]
    assert json.loads(load_trainer_checkpoint(folder / "trainer.pt")["state"]) == {"epoch": 2}
    assert sorted(p.name for p in folder.iterdir()) == ["trainer.pt"]
