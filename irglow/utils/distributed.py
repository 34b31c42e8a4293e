"""Several processes under ``torchrun``: who this process is, and the few collective steps the pipeline takes.

irglow runs as one program in every process (SPMD, as Hugging Face's and Tevatron's distributed jobs do): the
launcher sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and the rendezvous, :func:`join` joins the process group
(NCCL on GPUs, gloo on CPUs) and every process walks the same stages.  Work that splits splits by queries
(:func:`split`, then :func:`irglow.runs.trec.gather_runs`) or by corpus shards; rank 0 alone writes outputs (run files, notes,
checkpoints, tables, the manifest) and the others read them after a :func:`barrier`.

A part of the job that runs on rank 0 only (a stage that does not split, a trainer's validation) runs inside
:func:`solo`: there every collective here is a local no-op, so code shared by both kinds of parts never waits
for processes that are not coming.

Why not ``torch.distributed`` directly everywhere: one process (no launcher) must run the same code with no
process group at all, and a collective reached by one rank alone hangs until the timeout — both are decided here,
once.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import socket
import sys
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")

# how long a collective waits for a peer that neither answers nor dies (a rank that dies is seen at once: gloo
# and NCCL report the closed connection, and torchrun stops the others); long, because rank 0 may index or train
# for hours while the others wait at a barrier
TIMEOUT_ENV = "IRGLOW_DIST_TIMEOUT"
DEFAULT_TIMEOUT_S = 6 * 3600


@dataclass(frozen=True)
class World:
    """This process's place: ``rank`` of ``size`` processes, ``local_rank`` on its machine (its GPU)."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0


_state = threading.local()


def launched() -> bool:
    """Whether a launcher started several processes (``WORLD_SIZE`` > 1)."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def timeout_s() -> float:
    value = os.environ.get(TIMEOUT_ENV, str(DEFAULT_TIMEOUT_S))
    try:
        return float(value)
    except ValueError:
        raise SystemExit(f"{TIMEOUT_ENV}={value!r}: give the collective timeout in seconds") from None


def join() -> World:
    """Join the process group when a launcher set one up (idempotent); one process: ``World()``.  Ranks other
    than 0 log warnings only and draw no progress bars, so a job's log reads as one process's."""
    if not launched():
        return World()
    import torch
    import torch.distributed as dist

    if not dist.is_initialized():
        cuda = torch.cuda.is_available()
        if cuda:
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("nccl" if cuda else "gloo", timeout=datetime.timedelta(seconds=timeout_s()))
    w = current()
    if not w.main:
        logging.getLogger("irglow").setLevel(logging.WARNING)
        os.environ["TQDM_DISABLE"] = "1"
    log.info("process group: %d processes (%s), this is rank %d on %s", w.size, dist.get_backend(), w.rank,
             socket.gethostname())
    return w


def current() -> World:
    """This process's :class:`World` (``World()`` without a process group, or inside :func:`solo`)."""
    if getattr(_state, "solo", False):
        return World()
    dist = sys.modules.get("torch.distributed")  # no process group without it imported (join imports it): a
    if dist is None:  # lexical command never imports torch only to learn it is alone
        return World()
    if not (dist.is_available() and dist.is_initialized()):
        return World()
    return World(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0")))


def is_main() -> bool:
    return current().main


@contextlib.contextmanager
def solo() -> Iterator[None]:
    """Run a block as if alone: inside it every collective of this module is local (a part of the job that rank 0
    runs while the others wait)."""
    before = getattr(_state, "solo", False)
    _state.solo = True
    try:
        yield
    finally:
        _state.solo = before


def barrier() -> None:
    if current().size > 1:
        import torch.distributed as dist

        dist.barrier()


def broadcast(value: T) -> T:
    """Rank 0's ``value`` on every rank (any picklable object)."""
    if current().size == 1:
        return value
    import torch.distributed as dist

    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def all_gather(value: T) -> list[T]:
    """Every rank's ``value``, in rank order, on every rank."""
    w = current()
    if w.size == 1:
        return [value]
    import torch.distributed as dist

    out: list[Any] = [None] * w.size
    dist.all_gather_object(out, value)
    return out


def agree(what: str, value: Any) -> None:
    """Stop before any work unless every rank holds the same ``value`` (compared by digest): ranks started with
    different settings (a per-rank ``--set``, another configuration file on another node) would otherwise each
    do their share of a different job and write one run mixing both."""
    w = current()
    if w.size == 1:
        return
    import hashlib
    import json

    digest = hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]
    digests = all_gather(digest)
    differ = [r for r, d in enumerate(digests) if d != digests[0]]
    if differ:
        raise SystemExit(f"rank {w.rank}: the ranks hold different {what}: rank(s) {', '.join(map(str, differ))} differ "
                         f"from rank 0 (digests {', '.join(f'{r}: {d}' for r, d in enumerate(digests))}); start every "
                         f"rank with the same command, settings and files")


class FromMain:
    """A block rank 0 runs alone (:func:`solo`) and whose ``value`` every rank gets (``share=False``: only rank 0)::

        with from_main() as shared:
            if shared.here:
                shared.value = work()
        shared.value

    An error on rank 0 stops every rank with its message instead of leaving them waiting.  The work stays in the
    caller's own frame (no callback handed down to this module)."""

    def __init__(self, share: bool = True):
        w = current()
        self.here, self.value, self._share, self._size = w.main or w.size == 1, None, share, w.size
        self._solo = solo()

    def __enter__(self) -> "FromMain":
        if self._size > 1 and self.here:
            self._solo.__enter__()
        return self

    def __exit__(self, kind, error, tb) -> bool:
        if self._size == 1:
            return False
        if self.here:
            self._solo.__exit__(kind, error, tb)
        failed = broadcast(None if error is None else f"{type(error).__name__}: {error}")
        if error is not None:  # raised on rank 0 as it was, once the others know
            return False
        if failed is not None:
            raise SystemExit(f"rank {current().rank}: stopped because rank 0 failed: {failed}")
        if self._share:
            self.value = broadcast(self.value)
        return False


def from_main(share: bool = True) -> FromMain:
    return FromMain(share)


def on_main(make: Callable[[], T], share: bool = True) -> T:
    """``make()`` run by rank 0 alone (inside :func:`solo`), its result sent to every rank (``share=False``: not
    sent, the others get ``None``); an error there stops every rank with rank 0's message instead of leaving
    them waiting."""
    with from_main(share) as shared:
        if shared.here:
            shared.value = make()
    return shared.value


def main_first(make: Callable[[], T]) -> T:
    """``make()`` on rank 0, then on the others once it is done: for work whose result rank 0 leaves on disk (an
    index, a statistics export) and the others find there."""
    value = on_main(make, share=False)
    return value if current().main else make()


def collective(command: Callable[..., T]) -> Callable[..., T]:
    """Mark a CLI command that splits its own work under ``torchrun`` (every rank runs it); any other command runs
    on rank 0 while the others wait (:func:`irglow.cli.main`)."""
    command.collective = True  # type: ignore[attr-defined]
    return command


def split(items: Sequence[T]) -> list[T]:
    """This rank's contiguous share of ``items`` (sizes differ by at most one; all of them alone)."""
    w = current()
    return list(items[len(items) * w.rank // w.size: len(items) * (w.rank + 1) // w.size])


def rank_file(name: str) -> str:
    """A file name of this rank's own (``x.jsonl`` → ``x.rank1-of-2.jsonl``): per-rank scratch such as a re-ranking
    checkpoint; the name itself in one process."""
    w = current()
    if w.size == 1:
        return name
    stem, dot, ext = name.rpartition(".")
    return f"{stem}.rank{w.rank}-of-{w.size}{dot}{ext}" if dot else f"{name}.rank{w.rank}-of-{w.size}"


def check_shared_folder(out: Path) -> None:
    """Stop before any work when a rank cannot see the folder rank 0 writes to (a node without the shared
    file system): rank 0 leaves a token there and every rank must read it back."""
    w = current()
    if w.size == 1:
        return
    out = Path(out)
    token = broadcast(uuid.uuid4().hex if w.main else None)
    probe = out / ".ranks" / f"{token}.probe"
    if w.main:
        probe.parent.mkdir(parents=True, exist_ok=True)
        probe.write_text(token)
    barrier()
    try:
        seen = probe.read_text() == token
    except OSError:
        seen = False
    views = all_gather((seen, socket.gethostname(), str(out.resolve())))
    barrier()
    if w.main:
        probe.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # left when another job probes the same folder
            probe.parent.rmdir()
    blind = [f"rank {r} on {host} ({path})" for r, (ok, host, path) in enumerate(views) if not ok]
    if blind:
        raise SystemExit(f"the output folder {views[0][2]} is not shared: {', '.join(blind)} cannot read what rank 0 writes "
                         f"there; put it on a file system every node mounts at the same path")


def shutdown() -> None:
    """Leave the process group (the end of a command under ``torchrun``)."""
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover
        return
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
