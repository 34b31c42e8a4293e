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

A cache the JVM is handed must be the one recorded: a damaged one (a flipped or zeroed region) makes every JVM
abort with SIGSEGV.  So its size and SHA-256 are recorded beside it (``.sum``) before it is put in place, and
checked before a JVM starts from it (hashed once per file state: the ``.sum`` keeps the state it was checked in); one
that differs is set aside, said once, and recorded again by the next command that opens an index.

Off with ``IRGLOW_JVM_AOT=0``; Java 21–24 run without a cache.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

from irglow.utils.atomic import atomic_write_text
from irglow.utils.digest import file_digest

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
        if intact_jar(target):
            return target
        log.warning("%s is damaged (its entries fail their checksums); it is written again", target)
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as jar:
        for path in sorted(folder.rglob("*.class")):
            jar.write(path, path.relative_to(folder).as_posix())
    os.replace(tmp, target)
    return target


_sound_jars: set[tuple] = set()


def intact_jar(path: Path) -> bool:
    """Whether a jar irglow wrote reads back whole (every entry's CRC; a few hundred KB, checked once per process and
    file state): a damaged one would stop every JVM at its start with a class-loading error."""
    try:
        st = path.stat()
        state = (str(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if state in _sound_jars:
            return True
        with zipfile.ZipFile(path) as jar:
            if jar.testzip() is not None:
                return False
    except (OSError, zipfile.BadZipFile, EOFError, ValueError):
        return False
    _sound_jars.add(state)
    return True


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
    """The option that records (in :func:`record`'s process) or uses (where one was recorded and is intact) the
    cache."""
    out = recording()
    if out:
        return [f"-XX:AOTCacheOutput={out}"]
    path = cache_file(root, home, class_path, options)
    if not path.is_file() or not intact(path):
        return []
    try:
        os.utime(sum_file(path))  # its last use (the .sum's time: the cache's own stays as checked), for prune
    except OSError:  # a read-only cache is still used
        pass
    return [f"-XX:AOTCache={path}"]


def sum_file(target: Path) -> Path:
    """Where a cache's size and digest are recorded, and the file state they were last checked in."""
    return target.with_name(target.name + ".sum")


def _state(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def intact(path: Path) -> bool:
    """Whether the cache at ``path`` is the one recorded (its size and digest as its ``.sum`` says).  It is hashed
    only when its state (inode, size, times) differs from the one last checked; a damaged cache, or one without a
    ``.sum`` (recorded by an older irglow), is set aside (``.damaged``, removed by the next recording), said once,
    and the JVM starts without it."""
    note = sum_file(path)
    try:
        recorded = json.loads(note.read_text())
        state = _state(path)
        if recorded.get("checked") == state:
            return True
        if state[2] == recorded.get("size") and file_digest(path, 1 << 22, chars=None) == recorded.get("sha256"):
            try:  # hashed once per state: later JVMs trust it without reading 40 MB
                atomic_write_text(note, json.dumps({**recorded, "checked": state}))
            except OSError:  # a read-only cache: checked again by the next process
                pass
            return True
        why = "its content differs from the digest recorded with it"
    except FileNotFoundError as e:
        if not path.is_file():  # set aside meanwhile by another process
            return False
        why = "no digest was recorded with it" if e.filename == str(note) else str(e)
    except (OSError, ValueError) as e:
        why = f"its digest cannot be read ({e})"
    aside = path.with_name(path.name + ".damaged")
    try:
        os.replace(path, aside)
        note.unlink(missing_ok=True)
    except OSError:  # a read-only cache: not used, not moved
        aside = None
    log.warning("the JVM's start-up cache %s is not used: %s%s; it is recorded again when a command next opens an "
                "index (commands start slower until then, results are the same)", path, why,
                f" (set aside as {aside.name})" if aside else "")
    return False


def prune(root: Path, keep: Path, days: float = UNUSED_DAYS) -> list[Path]:
    """Remove the caches under ``root`` (with their ``.sum``, ``.failed`` notes and locks) that no process has started
    from for ``days`` (another Java's, an older irglow's: some 40 MB each), all but ``keep``; and every cache set
    aside as damaged and every file a killed recorder left (``.aot-<key>.aot.<pid>`` and its ``.config``, 44 MB),
    whatever their age.  Returns what was removed."""
    removed = []
    for other in root.glob("aot-*.aot*"):
        if other.name.startswith(keep.name) and not other.name.endswith(".damaged"):
            continue
        if not other.name.endswith((".aot", ".aot.failed", ".aot.lock", ".aot.sum", ".aot.damaged")):
            continue
        try:
            base = other.with_name(other.name.rpartition(".aot")[0] + ".aot")
            used = max((p.stat().st_mtime for p in (other, sum_file(base)) if p.exists()), default=0)
            if other.name.endswith(".damaged") or time.time() - used > days * 86400:
                other.unlink()
                removed.append(other)
        except OSError:
            continue
    removed += sweep_leftovers(root)
    return removed


_LEFTOVER = re.compile(r"^\.aot-[0-9a-f]+\.aot\.(\d+)(\.config)?$")


def sweep_leftovers(root: Path) -> list[Path]:
    """The temporary files of recorders that are no longer running (killed: their pid is gone)."""
    removed = []
    for leftover in root.glob(".aot-*.aot.*"):
        m = _LEFTOVER.match(leftover.name)
        if m is None or _alive(int(m.group(1))):
            continue
        try:
            leftover.unlink()
            removed.append(leftover)
        except OSError:
            continue
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's: alive
        return True
    return True


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


RETRY_SECONDS = 600  # a failed recording is tried again after this long, doubled at every failure (up to a week)


def retry_wait(attempts: int) -> float:
    """Seconds before a key that failed ``attempts`` times in a row is recorded again: :data:`RETRY_SECONDS`, doubled
    with each failure, so a cause that stays costs a few attempts, not one per command (at most a week)."""
    return min(RETRY_SECONDS * 2 ** (attempts - 1), 7 * 86400)


def _failures(failed: Path) -> tuple[int, float] | None:
    """``(failures in a row, time of the last)`` from a ``.failed`` note (``None``: none); a note of an older irglow
    (plain text) is one failure at the file's time."""
    try:
        note = json.loads(failed.read_text(encoding="utf-8"))
        return int(note.get("attempts", 1)), float(note.get("time", failed.stat().st_mtime))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, AttributeError):
        try:
            return 1, failed.stat().st_mtime
        except OSError:
            return None


def retry_due(failed: Path, now: float | None = None) -> bool:
    """Whether a key whose recording failed is tried again now: its cause may have passed (a full disk freed, a
    killed recorder), once :func:`retry_wait` has passed since the last failure."""
    seen = _failures(failed)
    return seen is None or (time.time() if now is None else now) - seen[1] >= retry_wait(seen[0])


def record(index: Path, target: Path) -> Path | None:
    """Run the workload in a process of its own that records the cache into ``target`` at exit, its size and
    digest recorded beside it (``.sum``) before it is put in place (atomically).  A failure is written beside it
    (``.failed``: the reason from both of the process's streams, the JVM's ``[error][aot]`` lines go to standard
    output) and tried again only once :func:`retry_due`."""
    failed = target.with_name(target.name + ".failed")
    if failed.is_file() and not retry_due(failed):
        return None
    sweep_leftovers(target.parent)  # a killed recorder's 44 MB
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
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                              timeout=600)
        if done.returncode == 0 and tmp.is_file():
            atomic_write_text(sum_file(target), json.dumps({"size": tmp.stat().st_size,
                                                             "sha256": file_digest(tmp, 1 << 22, chars=None)}))
            os.replace(tmp, target)
            failed.unlink(missing_ok=True)
            for gone in prune(target.parent, target):
                log.info("removed %s from the JVM's start-up caches (unused for %d days, damaged, or a killed "
                         "recorder's)", gone.name, UNUSED_DAYS)
            return target
        lines = [line for line in done.stdout.strip().splitlines() if line.strip()]
        reason = next((line for line in lines if line.startswith(FAILED)), None) or \
            "\n".join([line for line in lines if "[error]" in line][:5] or lines[-5:]) or \
            f"exit status {done.returncode}"
    except (OSError, subprocess.SubprocessError) as e:
        reason = str(e)
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + ".config")):
            leftover.unlink(missing_ok=True)
    attempts = (_failures(failed) or (0, 0.0))[0] + 1
    log.warning("could not record the JVM's start-up cache (commands start slower, results are the same; tried again "
                "in %d min; the reason is in %s): %s", retry_wait(attempts) // 60, failed,
                reason.splitlines()[0][:300] if reason else "")
    try:
        atomic_write_text(failed, json.dumps({"reason": reason, "attempts": attempts, "time": time.time()}, indent=1))
    except OSError:
        pass
    return None
