"""The JVM's ahead-of-time cache: what a command's start spends loading, verifying and linking Lucene's and
Anserini's classes, paid once per machine instead of once per process.

Java 25's AOT cache (JEPs 483, 514 and 515) holds the classes a training run loaded, parsed and linked, and the
method profiles it gathered.  irglow records one per Java runtime, class path and JVM options, in
``$IRGLOW_CACHE/java/aot-<key>.aot``, from a short workload on an index it has just built
(:func:`ensure`, called by :func:`irglow.index.lucene_index.build_index`; a few seconds, once per key), and
every later JVM starts with it (:func:`jvm_options`).  The JVM checks a cache against its own class path and
options and ignores one that does not match, so a stale cache costs time, never a different result.

Two rules of the JVM shape this module.  A cache is written only when the JVM exits through ``System.exit``,
which a JVM under pyjnius never does: recording runs in its own process (:mod:`irglow.lexical.jvm_warmup`).
And a cache refuses a class path holding a non-empty folder: irglow's Java helper and pyjnius's own classes
travel as jars, and the recording process leaves out the folder pyjnius appends (its classes are in the jar).

Off with ``IRGLOW_JVM_AOT=0``; Java 21–24 run without a cache.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no recording (a JVM there starts as before)
    fcntl = None

log = logging.getLogger(__name__)

MIN_JAVA = 25  # -XX:AOTCacheOutput (JEP 514) records and creates a cache in one run
SWITCH = "IRGLOW_JVM_AOT"  # "0": no cache used or recorded
RECORDING = "IRGLOW_JVM_AOT_RECORD"  # set only in the recording process: the file the JVM writes at exit
UNUSED_DAYS = 30  # a cache no JVM started from for this long belongs to another Java or irglow: removed
WORKLOAD = 3  # the version of irglow.lexical.jvm_warmup's workload: a changed workload records anew
_LAUNCHER = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK", "ROLE_WORLD_SIZE",
             "MASTER_ADDR", "MASTER_PORT")
FAILED = "the start-up cache's workload failed:"  # how the recording process reports its own failure
# JVM options that do not change what a cache holds: where crash logs go, the heap's size, the cache itself,
# and the class path (keyed on its own, without the folder pyjnius appends)
_UNKEYED = ("-XX:ErrorFile=", "-Xmx", "-XX:AOTCache", "-Djava.class.path=",
            "-XX:TieredStopAtLevel=")  # a JVM compiling with C1 alone starts from the same cache (checked)


def enabled(major: int) -> bool:
    return major >= MIN_JAVA and os.environ.get(SWITCH, "1") != "0"


def recording() -> str | None:
    """The cache file this process records, or ``None`` (every process but :func:`record`'s)."""
    return os.environ.get(RECORDING) or None


def jar_of(folder: Path, target: Path) -> Path:
    """The ``.class`` files under ``folder`` as a jar at ``target`` (written once, atomically): the class path a
    cache accepts.  A jar needs no manifest to be on a class path."""
    if target.is_file():
        return target
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as jar:
        for path in sorted(folder.rglob("*.class")):
            jar.write(path, path.relative_to(folder).as_posix())
    os.replace(tmp, target)
    return target


def pyjnius_jar(root: Path) -> Path:
    """pyjnius's own Java classes (``jnius/src``) as a jar under ``root``, named by their content."""
    import importlib.util

    spec = importlib.util.find_spec("jnius")  # located, not imported: importing jnius starts the JVM
    src = Path(list(spec.submodule_search_locations)[0]) / "src"
    classes = sorted(src.rglob("*.class"))
    digest = hashlib.sha256(b"".join(p.relative_to(src).as_posix().encode() + p.read_bytes() for p in classes))
    return jar_of(src, root / f"pyjnius-{digest.hexdigest()[:12]}.jar")


def cache_file(root: Path, home: Path, class_path: list[str], options: list[str]) -> Path:
    """Where the cache for this runtime, class path and options lives: keyed on the runtime's ``release`` file,
    each jar's path, size and modification time, and the options that shape the cache."""
    release = home / "release"
    parts = [f"workload {WORKLOAD}", str(home), release.read_text(errors="replace") if release.is_file() else ""]
    for entry in class_path:
        path = Path(entry)
        if path.is_file():
            stat = path.stat()
            parts.append(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}")
    parts += [o for o in options if not o.startswith(_UNKEYED)]
    return root / f"aot-{hashlib.sha256(chr(0).join(parts).encode()).hexdigest()[:16]}.aot"


def jvm_options(root: Path, home: Path, class_path: list[str], options: list[str]) -> list[str]:
    """The option that records (in :func:`record`'s process) or uses (where one was recorded) the cache."""
    out = recording()
    if out:
        return [f"-XX:AOTCacheOutput={out}"]
    path = cache_file(root, home, class_path, options)
    if not path.is_file():
        return []
    try:
        os.utime(path)  # its last use: caches of an older Java or irglow unused for UNUSED_DAYS are removed
    except OSError:  # a read-only cache is still used
        pass
    return [f"-XX:AOTCache={path}"]


def prune(root: Path, keep: Path, days: float = UNUSED_DAYS) -> list[Path]:
    """Remove the caches under ``root`` (and their ``.failed`` notes and locks) that no process has started from for ``days``
    (another Java's, an older irglow's: some 40 MB each), all but ``keep``; returns what was removed."""
    removed = []
    for other in root.glob("aot-*.aot*"):
        if other.name.startswith(keep.name) or not other.name.endswith((".aot", ".aot.failed", ".aot.lock")):
            continue
        try:
            if time.time() - other.stat().st_mtime > days * 86400:
                other.unlink()
                removed.append(other)
        except OSError:
            continue
    return removed


def ensure(index: Path, runtime, layout: tuple[Path, list[str], list[str]] | None) -> Path | None:
    """Record the cache of the running JVM (its :class:`~irglow.index.jvm.JavaRuntime`; the cache folder, class path
    and options it started with, :func:`irglow.index.jvm.layout`) with a workload on ``index``, unless it exists,
    another process is recording it, or caches are off.  Once per key; a failure is logged and changes nothing
    else."""
    if runtime is None or layout is None or fcntl is None or not enabled(runtime.major) or recording():
        return None
    root, class_path, options = layout
    target = cache_file(root, runtime.home, class_path, options)
    if target.is_file():
        return target
    try:  # one recorder per key (an xdist worker, a rank): the lock goes with its holder, even a killed one
        lock = open(lock_file(target), "a")
    except OSError:  # a read-only cache
        return None
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return None  # another process is recording it
        return target if target.is_file() else record(index, target)


def lock_file(target: Path) -> Path:
    """The file whose ``flock`` the process recording ``target`` holds: another process may wait on it."""
    return target.with_name(target.name + ".lock")


def record(index: Path, target: Path) -> Path | None:
    """Run the workload in a process of its own that records the cache into ``target`` at exit (atomically).  A
    failure is written beside it (``.failed``, with the reason) and not tried again for the same key."""
    failed = target.with_name(target.name + ".failed")
    if failed.is_file():
        return None
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    # one process of its own, even when this one is a torchrun rank (it must not join that job's process group)
    env = {k: v for k, v in os.environ.items() if k not in _LAUNCHER and not k.startswith("TORCHELASTIC_")}
    env[RECORDING] = str(tmp)
    env["IRGLOW_DATA"] = str(Path(index).resolve().parents[1])  # its JVM's crash logs: the index's data folder's
    package_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    log.info("recording the JVM's start-up cache into %s (once per Java and Anserini)", target)
    reason = ""
    try:
        done = subprocess.run([sys.executable, "-m", "irglow.lexical.jvm_warmup", str(index)], env=env,
                              capture_output=True, text=True, timeout=600)
        if done.returncode == 0 and tmp.is_file():
            os.replace(tmp, target)
            for gone in prune(target.parent, target):
                log.info("removed the JVM's start-up cache %s (unused for %d days)", gone.name, UNUSED_DAYS)
            return target
        lines = done.stderr.strip().splitlines()
        reason = next((line for line in lines if line.startswith(FAILED)), None) or "\n".join(lines[-5:]) or \
            f"exit status {done.returncode}"
    except (OSError, subprocess.SubprocessError) as e:
        reason = str(e)
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + ".config")):
            leftover.unlink(missing_ok=True)
    log.warning("could not record the JVM's start-up cache (commands start slower, results are the same; the reason "
                "is in %s): %s", failed, reason.splitlines()[0][:300] if reason else "")
    try:
        failed.write_text(reason + "\n", encoding="utf-8")
    except OSError:
        pass
    return None
