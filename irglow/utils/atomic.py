"""Atomic outputs: write beside the target, then rename, so a crash never leaves half a file."""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def check_writable(path: str | Path) -> Path:
    """Fail *before* the work if ``path`` cannot be written: its folder is under a regular file or read-only."""
    if is_stdout(path):
        return Path(path)
    path = Path(path)
    if path.is_dir():
        raise SystemExit(f"cannot write {path}: it is a folder; name a file in it, e.g. {path / 'out.txt'}")
    parent = path.parent
    for p in [parent, *parent.parents]:
        if p.exists():
            if not p.is_dir():
                raise SystemExit(f"cannot write {path}: {p} is a file, not a folder")
            if not os.access(p, os.W_OK | os.X_OK):
                raise SystemExit(f"cannot write {path}: {p} is not writable")
            break
    try:  # the folder is made now: one that cannot be (under /proc, a full or read-only mount) is said before work
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SystemExit(f"cannot write {path}: cannot create its folder {parent} ({e.strerror})") from None
    return path


def _same_file(a: Path, b: Path) -> bool:
    """The same file on disk: by resolved path (``..``, symbolic links), or by inode (hard links)."""
    if a.resolve() == b.resolve():
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_not_input(output: str | Path, inputs, option: str = "-o", data: str | Path | None = None) -> Path:
    """Fail before the work if the output file is one of the inputs (``fuse a.run b.run -o a.run``), the same file
    through ``..``, a symbolic or a hard link, or lies inside the collection folder ``data`` (``report … --data C
    -o C/qrels/test.tsv`` would replace the qrels with HTML): the result would replace what it was computed from."""
    output = Path(output)
    if is_stdout(output):
        return output
    for p in inputs:
        if p and _same_file(output, Path(p)):
            same = "" if Path(p) == output else f" (the same file as {p})"
            raise SystemExit(f"{option} {output} is one of the inputs; it would be overwritten: choose another "
                             f"file{same}")
    if data is not None and Path(data).is_dir():
        folder, resolved = Path(data).resolve(), output.resolve()
        if resolved == folder or folder in resolved.parents:
            raise SystemExit(f"{option} {output} lies inside the collection folder {data}; writing there could "
                             f"replace the collection's own files: choose a file outside it")
        if output.exists():
            for f in folder.rglob("*"):
                if f.is_file() and _same_file(output, f):
                    raise SystemExit(f"{option} {output} is the collection's file {f} (a link to it); it would be "
                                     f"overwritten: choose another file")
    return output


def atomic_write_text(path: str | Path, text: str) -> Path:
    path = Path(path)
    with atomic_file(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path


@contextmanager
def naming(path: Path) -> Iterator[None]:
    """An ``OSError`` met while preparing to write ``path`` (its folder made, its temporary file created) names
    ``path``, not the hidden temporary name the user never gave (a read-only place, a folder under /proc)."""
    try:
        yield
    except OSError as e:
        if e.errno is None:
            raise
        raise type(e)(e.errno, e.strerror, str(path)) from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_file(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path in the target's directory; rename it over ``path`` on success.

    The file gets the permissions a plain ``open`` would give (0666 less the umask), not
    ``mkstemp``'s private 0600.  Its name carries the pid, so the half-written file of a writer that
    was killed (a trainer checkpoint can be hundreds of MB) is swept by the next write of ``path``.
    """
    if is_stdout(path):  # ``-o -``: the whole output, once complete, on standard output
        yield from _to_stdout()
        return
    path = Path(path)
    with naming(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        sweep_stale(path.parent, f".{path.name}.")
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as e:
        # a write into the hidden temporary file (a file-size limit, a full disk) names the file the user gave
        if e.errno is not None and e.filename in (None, str(tmp), name):
            raise type(e)(e.errno, e.strerror, str(path)) from None
        raise
    finally:
        if tmp.exists():
            tmp.unlink()


STDOUT = "-"  # an output named "-" is standard output, as everywhere in Unix


def is_stdout(path: str | Path | None) -> bool:
    """Whether an output option names standard output (``-o -``)."""
    return path is not None and str(path) == STDOUT


def say_written(what: str, output: str | Path, after: str = "") -> None:
    """A command's line of what it wrote, ``what → output after``: on standard error where the output itself went to
    standard output (``-o -``), so that stays what the command wrote, and nothing else."""
    import sys

    here = is_stdout(output)
    print(f"{what} → {'standard output' if here else output}{after}", file=sys.stderr if here else sys.stdout)


def _to_stdout() -> Iterator[Path]:
    import sys

    fd, name = tempfile.mkstemp(prefix=".irglow-stdout.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        sys.stdout.flush()
        with open(tmp, "rb") as f:
            shutil.copyfileobj(f, sys.stdout.buffer)
        sys.stdout.flush()
    finally:
        tmp.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(parent: str | Path, prefix: str, target: str | Path | None = None) -> list[Path]:
    """Remove ``{prefix}{pid}.*`` folders and files left by a process that no longer runs (killed
    mid-write: ``finally`` never ran).  A live process's, and names without a pid, are left alone.

    With ``target``: a process killed between moving ``target`` aside (``*.old``) and moving its new
    version in left no ``target`` at all; the version it moved aside is put back instead of removed."""
    removed = []
    for p in sorted(Path(parent).glob(f"{glob.escape(prefix)}*")):  # sorted: which ``.old`` returns is fixed
        pid = p.name[len(prefix):].split(".", 1)[0].split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        if p.is_dir() and p.name.endswith(".old") and target is not None and not os.path.lexists(target):
            os.replace(p, target)
            continue
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
        removed.append(p)
    return removed


@contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a temporary directory beside ``path``; on success it replaces ``path`` whole.

    Safe when several processes finish the same directory at once: each moves the old one aside
    under its own unique name, and a rename that loses the race retries; the last writer wins
    and no reader ever sees a half-written directory.
    """
    path = Path(path)
    with naming(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        sweep_stale(path.parent, f".{path.name}.", target=path)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent))
    aside: list[Path] = []  # earlier versions moved out of the way, removed once the new one is in place
    try:
        yield tmp
        mask = _umask()
        os.chmod(tmp, 0o777 & ~mask)
        for f in tmp.rglob("*"):  # writers such as safetensors create 0600 files: give them what open() would
            os.chmod(f, (0o777 if f.is_dir() else 0o666) & ~mask)
        for _ in range(100):
            try:
                os.replace(tmp, path)  # works when path is absent (or an empty directory)
                break
            except OSError:
                old = Path(tempfile.mkdtemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".old", dir=path.parent))
                try:
                    os.replace(path, old)  # move the current one aside, then try again at once
                    aside.append(old)
                except OSError:
                    shutil.rmtree(old, ignore_errors=True)
        else:
            raise OSError(f"could not replace {path}: other processes keep replacing it")
    finally:
        if tmp.exists():
            if aside and not path.exists():  # interrupted between moving the old one out and the new one in
                os.replace(aside.pop(), path)
            shutil.rmtree(tmp, ignore_errors=True)
        for old in aside:
            shutil.rmtree(old, ignore_errors=True)


LOCK_NAME = ".irglow-writer.lock"  # in an output folder: held by the one irglow run writing it
_held: dict[str, list] = {}  # folder → [open lock file, depth]: a process's nested runs into one folder


def written_now(folder: str | Path) -> bool:
    """Whether a process holds ``folder``'s writer lock (:func:`output_lock`) now: what must not be removed under
    it.  False where ``fcntl`` is missing (nothing is locked there)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return False
    path = Path(folder) / LOCK_NAME
    if not path.is_file():
        return False
    with open(path, "a+", encoding="utf-8") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(lock, fcntl.LOCK_UN)
    return False


@contextmanager
def output_lock(folder: str | Path) -> Iterator[None]:
    """One writer per output folder, for the whole of a run: two ``irglow run`` (or ``Experiment.run``) into one
    folder would otherwise each sweep the other's runs as "an earlier configuration's" after it had printed its table.
    A second run waits for the first, saying for whom (its pid, command line and start), then runs as it would have
    after it.  The lock is the kernel's (``flock``): it goes with its holder, even a killed one.  Re-entrant within a
    process; under ``torchrun`` rank 0's (the job's writer; its other ranks hold nothing); nothing is locked where
    ``fcntl`` is missing (Windows)."""
    from irglow.utils.distributed import is_main

    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    if not is_main():
        yield
        return
    import json
    import sys
    import time

    folder = Path(folder)
    key = str(folder.resolve())
    if key in _held:
        _held[key][1] += 1
        try:
            yield
        finally:
            _held[key][1] -= 1
        return
    with naming(folder):
        folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    lock = open(path, "a+", encoding="utf-8")
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            try:
                holder = json.loads(lock.read() or "{}")
            except ValueError:
                holder = {}
            who = (f"pid {holder.get('pid', '?')}: {' '.join(holder.get('command') or []) or 'irglow'}, since "
                   f"{holder.get('since', '?')}") if holder else "another process"
            print(f"another irglow run is writing {folder}/ ({who}): waiting for it to finish (Ctrl-C to stop; or "
                  f"write into another folder, -o or [output] dir)", file=sys.stderr, flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        lock.seek(0)
        lock.truncate()
        lock.write(json.dumps({"pid": os.getpid(), "command": sys.argv,
                               "since": time.strftime("%Y-%m-%d %H:%M:%S")}))
        lock.flush()
        _held[key] = [lock, 1]
        try:
            yield
        finally:
            del _held[key]
            lock.seek(0)
            lock.truncate()
    finally:
        lock.close()  # releases the flock
