"""Issue 80 (trust round eight), the items that need Java, an index or a pipeline: tables damaged at their own size,
the JVM's start-up cache damaged or unrecordable, one writer per output folder."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
import pytest

from irglow.data.records import Qrel, Query, make_document
from irglow.index.lucene_index import IndexConfig, LuceneIndex, build_index
from irglow.index.stats import CollectionStats
from irglow.lexical.searchers import run_lexical


class Docs:
    def __init__(self, docs, name):
        self.docs, self.fields, self.name = docs, ("title", "body"), name

    def docs_iter(self):
        yield from self.docs

    def queries(self, split="test"):
        return [Query("q1", "apple"), Query("q2", "banana")]

    def qrels(self, split="test"):
        return [Qrel("q1", "d58", 1)]


def _flip_same_size(path: Path, a: bytes, b: bytes) -> None:
    """Swap two equally long byte strings in a file: its size stays, its content does not."""
    raw = path.read_bytes()
    assert len(a) == len(b) and raw.count(a) == 1 and raw.count(b) == 1
    path.write_bytes(raw.replace(a, b"\0" * len(a)).replace(b, a).replace(b"\0" * len(a), b))


# -- 4: an id table damaged at its own size ----------------------------------------------------------------------------
def test_an_id_table_damaged_at_equal_size_is_found_and_written_again(tmp_path, caplog):
    """Two ids swapped in ``ids.utf8`` kept every size and end point: the run said d58 for d59, exit 0.  The digest
    recorded at build is checked when a process first opens the table: it is written again from the index."""
    coll = Docs([make_document("d58", body="apple apple"), make_document("d59", body="banana")], "swap")
    index = build_index(coll, IndexConfig(threads=1), root=tmp_path)
    table = index.path / "irglow-ids" / "ids.utf8"
    assert table.read_bytes() == b"d58d59"
    _flip_same_size(table, b"d58", b"d59")
    with caplog.at_level(logging.WARNING):
        again = LuceneIndex.open(index.path)
        run = run_lexical(again, coll.queries(), "bm25", k1=0.9, b=0.4)
    assert "ids.utf8 differs from the digest recorded when the table was built" in caplog.text
    assert [d for d, _ in run.ranking["q1"]] == ["d58"] and [d for d, _ in run.ranking["q2"]] == ["d59"]
    assert table.read_bytes() == b"d58d59"


def test_a_statistics_column_damaged_at_equal_size_is_exported_again(tmp_path, caplog):
    """The per-document lengths every model reads (``len_body``), damaged at their own size, were read as they were;
    the export's digests find them and the statistics are exported again."""
    coll = Docs([make_document("d1", body="apple apple apple"), make_document("d2", body="banana")], "lengths")
    index = build_index(coll, IndexConfig(threads=1), root=tmp_path)
    stats = CollectionStats.load(index)
    column = stats.path / "docs" / "len_body.npy"
    expected = np.load(column).tolist()
    assert expected == [3, 1]
    values = np.load(column)
    values[:] = values[::-1]
    np.save(column, values)  # same size, two lengths swapped
    with caplog.at_level(logging.WARNING):
        again = CollectionStats.load(index)
    assert "len_body.npy differs from the digest recorded when it was exported" in caplog.text
    assert np.asarray(again.docs["len_body"]).tolist() == expected


def test_a_document_store_table_damaged_at_equal_size_is_scanned_again(tmp_path, monkeypatch, caplog):
    """The store's offsets, two swapped at the same size, read one document's line for another's (the id check then
    called a present document missing): the recorded digests find it and the corpus is scanned again."""
    from irglow.data.beir import BeirCollection
    from irglow.data.docstore import docs_store
    from tests.files import write_beir

    monkeypatch.setenv("IRGLOW_DATA", str(tmp_path / "data"))
    folder = Path(write_beir(tmp_path / "c"))
    assert [d.doc_id for d in docs_store(BeirCollection(folder)).get_many(["d1", "d2"])] == ["d1", "d2"]
    (offsets,) = (tmp_path / "data").rglob("offsets.npy")
    values = np.load(offsets)
    values[:] = values[::-1]
    np.save(offsets, values)
    with caplog.at_level(logging.WARNING):
        docs = docs_store(BeirCollection(folder)).get_many(["d1", "d2"])
    assert "differs from the digest recorded when it was built; the corpus is scanned again" in caplog.text
    assert [d.doc_id for d in docs] == ["d1", "d2"]


# -- 5 and 8: the JVM's start-up cache, damaged, unrecordable, left behind ----------------------------------------------
_SEARCH = """
import sys
from irglow.data.records import Query, make_document
from irglow.index.lucene_index import IndexConfig, build_index
from irglow.index import jvm
from irglow.lexical.searchers import run_lexical

class Docs:
    name, fields = "aot-docs", ("title", "body")
    def docs_iter(self):
        yield make_document("d1", body="apple pie")
        yield make_document("d2", body="banana bread")

index = build_index(Docs(), IndexConfig(threads=1), root=sys.argv[1])
print(jvm.start_cache(), [d for d, _ in run_lexical(index, [Query("q", "apple")], "bm25").ranking["q"]])
"""


@pytest.mark.slow
def test_a_damaged_start_up_cache_never_stops_a_command(tmp_path):
    """A zeroed region in ``aot-*.aot`` made every Java command abort with SIGSEGV (exit 134) until someone deleted
    the file.  Its recorded size and digest are checked before a JVM is handed it: the command runs without it, says
    once that it was set aside, and records it again; the next command starts from the new one."""
    import subprocess
    import sys

    from irglow.index import jvm, jvm_aot

    if not jvm_aot.enabled(jvm.find_java().major):
        pytest.skip(f"Java {jvm.find_java().major} has no start-up cache")
    env = {**os.environ, "IRGLOW_CACHE": str(tmp_path / "cache"), "IRGLOW_DATA": str(tmp_path / "data")}
    env.pop(jvm_aot.RECORDING, None)

    def command():
        return subprocess.run([sys.executable, "-c", _SEARCH, str(tmp_path / "data")], capture_output=True,
                              text=True, env=env, timeout=600)

    first = command()  # builds the index and records the cache
    assert first.returncode == 0, first.stderr[-3000:]
    (cache,) = (tmp_path / "cache" / "java").glob("aot-*.aot")
    assert json.loads(jvm_aot.sum_file(cache).read_text())["size"] == cache.stat().st_size
    with open(cache, "r+b") as f:  # a zeroed region in the middle of it
        f.seek(cache.stat().st_size // 2)
        f.write(b"\0" * 65536)
    second = command()
    assert second.returncode == 0, second.stderr[-3000:]
    assert second.stdout.strip().endswith("['d1']") and second.stdout.startswith("None ")  # started without it
    assert second.stderr.count("is not used: its content differs from the digest recorded with it") == 1
    assert cache.is_file() and not list(cache.parent.glob("*.damaged"))  # recorded again, the damaged one gone
    third = command()
    assert third.returncode == 0 and third.stdout.startswith(f"{cache} "), third.stderr[-3000:]
    assert "is not used" not in third.stderr
    # a sibling: a damaged jar of irglow's own (the bulk helper, pyjnius's classes) would stop every JVM's start
    for jar in (tmp_path / "cache" / "java").glob("*.jar"):
        raw = bytearray(jar.read_bytes())
        raw[len(raw) // 3:len(raw) // 3 + 64] = b"\0" * 64
        jar.write_bytes(bytes(raw))
    fourth = command()
    assert fourth.returncode == 0 and fourth.stdout.strip().endswith("['d1']"), fourth.stderr[-3000:]
    assert "is damaged (its entries fail their checksums); it is written again" in fourth.stderr


def test_a_failed_recording_keeps_both_streams_and_a_killed_recorder_leaves_nothing(tmp_path, monkeypatch, caplog):
    """The JVM writes ``[error][aot] …`` to standard output: the reason kept was a progress bar from stderr.  And a
    killed recorder's ``.aot-<key>.aot.<pid>.config`` (44 MB) was never removed."""
    import subprocess

    from irglow.index import jvm_aot

    dead = subprocess.Popen(["true"])
    dead.wait()
    leftovers = [tmp_path / f".aot-0123abcd.aot.{dead.pid}", tmp_path / f".aot-0123abcd.aot.{dead.pid}.config"]
    for f in leftovers:
        f.write_bytes(b"x" * 1024)
    mine = tmp_path / f".aot-0123abcd.aot.{os.getpid()}.config"  # a recorder still running (this process)
    mine.write_bytes(b"x")

    def fake_run(cmd, env, **kwargs):
        assert kwargs["stderr"] == subprocess.STDOUT
        return subprocess.CompletedProcess(cmd, 1, "terms: 100%|██████| 3/3\n[0.412s][error][aot] An error has "
                                                   "occurred while writing the shared archive file.\nexit\n", None)

    monkeypatch.setattr(jvm_aot.subprocess, "run", fake_run)
    with caplog.at_level(logging.WARNING, logger="irglow.index.jvm_aot"):
        assert jvm_aot.record(tmp_path / "data" / "indexes" / "x", tmp_path / "aot-y.aot") is None
    note = json.loads((tmp_path / "aot-y.aot.failed").read_text())
    assert note["reason"] == "[0.412s][error][aot] An error has occurred while writing the shared archive file."
    assert "[error][aot]" in caplog.text
    assert not any(f.exists() for f in leftovers) and mine.exists()


def test_a_read_only_cache_that_holds_a_recorded_start_up_cache_is_used(tmp_path, monkeypatch):
    """A shared, read-only ``$IRGLOW_CACHE/java`` holding the jars and a recorded cache: its jars are used (the
    cache's key names them), so its cache is too; before, a writable folder elsewhere was used and the cache never."""
    from irglow.index import jvm, jvm_aot

    runtime = jvm.find_java()
    shared = tmp_path / "java"
    shared.mkdir()
    bulk = jvm.compile_bulk_helper(runtime, shared)
    pyjnius = jvm_aot.pyjnius_jar(shared) if jvm_aot.enabled(runtime.major) else None
    shared.chmod(0o555)
    monkeypatch.setattr(jvm.os, "access", lambda p, mode: False if Path(p) == shared else os.access(p, mode))
    try:
        assert jvm.java_cache_folder(runtime, shared) == shared
        assert jvm.compile_bulk_helper(runtime, shared) == bulk and (pyjnius is None or
                                                                     jvm_aot.pyjnius_jar(shared) == pyjnius)
        if bulk is not None:
            bulk_path = Path(bulk)
            shared.chmod(0o755)
            bulk_path.unlink()
            shared.chmod(0o555)
            assert jvm.java_cache_folder(runtime, shared) != shared  # a jar it lacks: a writable folder
    finally:
        shared.chmod(0o755)


# -- 7: one writer per output folder -------------------------------------------------------------------------------------
_HOLD = """
import sys
from irglow.utils.atomic import output_lock
with output_lock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_a_second_run_into_a_folder_waits_for_the_first_saying_for_whom(tmp_path):
    """Two ``irglow run`` of different configurations into one folder both exited 0, and the later one's sweep
    deleted the earlier one's run after it had printed its table.  A run holds the folder for its whole duration: a
    second one waits, naming the holder, writes nothing meanwhile, and runs once the first is done."""
    import subprocess
    import sys

    from tests.integration.pipelines import small_pipeline

    out = tmp_path / "out"
    config = small_pipeline(out, tmp_path / "data", systems=("bm25", "tfidf"))
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    assert holder.stdout.readline().strip() == "held"
    (tmp_path / "c.json").write_text(json.dumps(config))
    code = ("import json, sys; from irglow.pipeline import run_pipeline; "
            "run_pipeline(json.load(open(sys.argv[1])))")
    second = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "c.json")], stderr=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    line = second.stderr.readline()  # the first thing it says: whom it waits for
    assert line.startswith(f"another irglow run is writing {out}/ (pid {holder.pid}: ") and "waiting" in line
    assert not list(out.glob("*.run"))  # nothing written while the other holds the folder
    holder.stdin.write("done\n")
    holder.stdin.flush()
    assert holder.wait(timeout=60) == 0
    _, err = second.communicate(timeout=600)
    assert second.returncode == 0, err[-3000:]
    assert sorted(p.name for p in out.glob("*.run")) == ["bm25.run", "tfidf.run"]
    assert not (out / ".irglow-writer.lock").read_text()  # released: no holder named


def test_an_empty_output_dir_is_refused():
    from irglow.plan import bind_plan
    from tests.integration.pipelines import small_pipeline

    with pytest.raises(ValueError, match="output.dir is empty"):
        bind_plan(small_pipeline("", "/tmp/unused"))


# -- 6: a killed encoding worker -------------------------------------------------------------------------------------------
class _Items(list):
    """Strings with a document store sequence's batch read (``take``): what workers prepare from."""

    def take(self, positions):
        return [self[i] for i in positions]


def _prepare_or_die(batch):
    import signal

    import torch

    if "die" in batch:  # what the out-of-memory killer does to a worker
        os.kill(os.getpid(), signal.SIGKILL)
    return torch.ones(len(batch), 4)


def _killer_recipe():
    return _prepare_or_die


def test_a_killed_encoding_worker_is_one_line_saying_which_how_and_what_to_lower(tmp_path, capsys):
    """Was a 45-frame traceback from PyTorch's DataLoader.  One line: which worker, the signal, that a rerun resumes,
    and what to lower; the command line prints it as one line (it is an ``OSError``)."""
    from irglow.cli import os_error
    from irglow.dense.encode import EncodingWorkerDied, TwoStep, encode

    items = _Items(["aa", "bb", "cc", "dd", "die", "ee"])
    encoder = TwoStep(_prepare_or_die, lambda x: x, recipe=_killer_recipe)
    with pytest.raises(EncodingWorkerDied) as e:
        encode(items, encoder, batch_size=1, out_path=tmp_path / "v.npy", workers=1)
    message = os_error(e.value)
    assert message.startswith("encoding worker 1 of 1 (pid ") and "was killed by SIGKILL" in message
    assert "a rerun resumes" in message and "[glow] encode_workers" in message and "\n" not in message
    assert isinstance(e.value, OSError) and e.value.__cause__ is None


# -- 11: ivfpq on too small a corpus ---------------------------------------------------------------------------------------
def test_ivfpq_on_too_small_a_corpus_is_refused_before_any_training(tmp_path, monkeypatch):
    """Was refused by faiss after training and encoding (1 min 53 s on 1,042 documents): the corpus's size is known
    once it is indexed, before the model trains."""
    from irglow.models.glow.stage import GlowStage
    from irglow.pipeline import run_pipeline
    from tests.integration.pipelines import small_pipeline

    def no_training(*args, **kwargs):
        raise AssertionError("trained before the faiss kind was checked")

    monkeypatch.setattr(GlowStage, "train", no_training)
    config = small_pipeline(tmp_path / "out", tmp_path / "data", systems=("bm25",),
                            glow={"enabled": True, "variants": ["glow"], "faiss": "ivfpq"})
    with pytest.raises(ValueError, match=r"ivfpq trains 256 codes per sub-vector on at least 9,984 vectors; this "
                                         r"corpus has \d+: use flat or ivf"):
        run_pipeline(config)


def test_plots_of_an_earlier_experiment_do_not_stay_beside_a_new_one(tmp_path):
    """A one-run result beside the earlier two-run experiment's ``per-query.png`` (and ``pairs.png``)."""
    from irglow.pipeline import run_pipeline
    from tests.integration.pipelines import small_pipeline

    out = tmp_path / "out"
    run_pipeline(small_pipeline(out, tmp_path / "data", systems=("bm25", "tfidf")))
    assert (out / "per-query.png").is_file()
    (out / "pairs.png").write_bytes(b"an earlier heatmap")
    run_pipeline(small_pipeline(out, tmp_path / "data", systems=("bm25",)))
    assert not (out / "per-query.png").exists() and not (out / "pairs.png").exists()
    assert (out / "results.png").is_file()


def test_a_trainer_into_a_folder_another_command_writes_waits_for_it(tmp_path, monkeypatch):
    """A sibling of one writer per folder: two ``… train --out DIR`` into one folder interleaved their checkpoints.
    The train commands hold their ``--out`` as a run holds its folder."""
    import io
    import subprocess
    import sys
    import threading
    from argparse import Namespace

    from irglow.commands.common import writes_folder

    out = tmp_path / "model"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    assert holder.stdout.readline().strip() == "held"
    said, ran = threading.Event(), threading.Event()

    class Stderr(io.StringIO):
        def write(self, text):
            if "waiting for it to finish" in text:
                said.set()
            return super().write(text)

    monkeypatch.setattr(sys, "stderr", Stderr())

    @writes_folder("out")
    def train(args):
        ran.set()
        return 0

    worker = threading.Thread(target=train, args=(Namespace(out=out),))
    worker.start()
    assert said.wait(timeout=300)  # it said whom it waits for (the bound only stops a broken lock from hanging) …
    assert not ran.is_set()  # … and did not start
    holder.stdin.write("done\n")
    holder.stdin.flush()
    assert holder.wait(timeout=60) == 0
    worker.join()
    assert ran.is_set()
    assert f"another irglow run is writing {out}/ (pid {holder.pid}: " in sys.stderr.getvalue()


def test_search_writes_its_run_to_standard_output_and_refuses_a_topics_file_without_queries(tmp_path, capsys,
                                                                                             monkeypatch):
    """``irglow search … -o -``: the run on standard output, no file named ``-``, the command's line on stderr (item
    9); an empty topics file stopped nothing and gave a 0-byte run (item 14)."""
    from irglow.cli import main
    from tests.files import write_beir

    monkeypatch.chdir(tmp_path)
    data = write_beir(tmp_path / "c")
    (tmp_path / "t.tsv").write_text("q1\tlyme ticks\n")
    assert main(["search", data, "--topics", "t.tsv", "-o", "-", "--data-dir", str(tmp_path / "d")]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines()[0].startswith("q1 Q0 d1 1 ") and "1 queries → standard output" in out.err
    assert not (tmp_path / "-").exists() and not (tmp_path / "-.manifest.json").exists()
    (tmp_path / "e.tsv").write_text("")
    assert main(["search", data, "--topics", "e.tsv", "-o", "e.run", "--data-dir", str(tmp_path / "d")]) == 2
    assert "e.tsv holds no queries" in capsys.readouterr().err and not (tmp_path / "e.run").exists()
