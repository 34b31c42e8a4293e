"""Corpus encoding to disk (``embeddings.npy`` + ``ids.txt``), faiss indexes, and dense search → Run.

Embeddings are L2-normalised float32, so inner product = cosine; ``IndexFlatIP`` is exact and
``IndexHNSWFlat`` (inner product) is the option for large corpora.
"""

from __future__ import annotations

import errno
import json
import os
import queue
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np
import torch

from irglow import settings as declared
from irglow.utils.progress import tqdm

from irglow.data.records import Document, Query
from irglow.runs.trec import Run
from irglow.utils.atomic import atomic_dir
from irglow.utils.batching import length_batches
from irglow.utils.digest import check_table_digests, table_digests
from irglow.utils.digest import model_digest  # noqa: F401 (re-exported: glow's runner keys shards on it)
from irglow.defaults import DEPTH
from irglow.models.checkpoints import load_encoder, pick_device

# a batch encoder: list of items → float tensor [B, H] (not yet normalised)
BatchEncoder = Callable[[Sequence], torch.Tensor]


class TwoStep:
    """A batch encoder in two steps, ``forward(prepare(items))``: :func:`encode` reads and prepares (featurizes:
    Python, JNI) the next batches while the model's ``forward`` runs on the current one — on a thread, or with
    ``workers`` in worker processes, each building its own ``prepare`` from ``recipe`` (a picklable callable), so
    the model does not wait on features where cores are free.  ``ahead=False``: no thread (a model on the CPU: its
    torch threads and a featurizing thread take turns at the GIL, which on two cores costs more than it overlaps;
    BENCHMARKS.md section 7)."""

    def __init__(self, prepare: Callable[[Sequence], Any], forward: Callable[[Any], torch.Tensor],
                 recipe: Callable[[], Callable[[Sequence], Any]] | None = None, ahead: bool = True):
        self.prepare, self.forward, self.recipe, self.ahead = prepare, forward, recipe, ahead

    def __call__(self, items: Sequence) -> torch.Tensor:
        return self.forward(self.prepare(items))


_END = object()


class _PreparedBatches(torch.utils.data.Dataset):
    """Batch ``i`` of ``jobs`` read from a document store's sequence and prepared, in a worker process: its
    ``prepare`` built there from the recipe at its first batch (a JVM does not survive a fork: workers are spawned)."""

    def __init__(self, recipe: Callable[[], Callable[[Sequence], Any]], items, jobs: list[tuple[int, list[int]]]):
        self.recipe, self.items, self.jobs, self._prepare = recipe, items, jobs, None

    def __len__(self) -> int:
        return len(self.jobs)

    def __getitem__(self, i: int):
        if self._prepare is None:
            self._prepare = self.recipe()
        job = self.jobs[i]
        return job, self._prepare(self.items.take(job[1]))

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_prepare": None}


def in_workers(recipe: Callable[[], Callable[[Sequence], Any]], items, jobs: list, workers: int
               ) -> Iterator[tuple[Any, Any]]:
    """``(job, prepared batch)`` in order, prepared by ``workers`` spawned processes (PyTorch's ``DataLoader``:
    batches in shared memory, a few ahead per worker)."""
    loader = torch.utils.data.DataLoader(_PreparedBatches(recipe, items, jobs), batch_size=None, shuffle=False,
                                         num_workers=workers, multiprocessing_context="spawn", prefetch_factor=4)
    batches = iter(loader)
    try:
        for (k, idx), batch in batches:
            yield (int(k), [int(i) for i in idx]), batch
    except RuntimeError as e:  # PyTorch's "DataLoader worker (pid 123) is killed by signal: Killed." and kin
        died = worker_death(e, getattr(batches, "_workers", []), workers)
        if died is None:
            raise
        raise died from None


class EncodingWorkerDied(ChildProcessError):
    """An encoding worker process ended without finishing its batches (killed: the out-of-memory killer, a signal):
    one line saying which, how, and what to do (an ``OSError``: the command line prints it as one line)."""


def worker_death(error: RuntimeError, processes: list, workers: int) -> EncodingWorkerDied | None:
    """The one-line error for a DataLoader worker that died (``None``: ``error`` is about something else)."""
    import re
    import signal as signals

    text = str(error)
    m = re.search(r"DataLoader worker \(pids?(?:\(s\))? ([\d, ]+)\)", text)
    if m is None:
        return None
    pids = [int(p) for p in re.findall(r"\d+", m.group(1))]
    which = [i for i, p in enumerate(processes) if getattr(p, "pid", None) in pids]
    codes = [getattr(processes[i], "exitcode", None) for i in which]
    how = "ended unexpectedly"
    for code in codes:
        if code is not None and code < 0:
            try:
                name = signals.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            how = f"was killed by {name}" + (" (the out-of-memory killer, most often)" if name == "SIGKILL" else "")
            break
    else:
        sig = re.search(r"killed by signal: (\w[\w ]*)", text)
        if sig:
            how = f"was killed by signal {sig.group(1).strip()}"
    who = (f"encoding worker {which[0] + 1} of {workers} (pid {pids[0]})" if which else
           f"an encoding worker (pid {', '.join(map(str, pids))}) of {workers}")
    return EncodingWorkerDied(f"{who} {how}: a rerun resumes from the batches already encoded; lower the number of "
                              f"encoding workers ([glow] encode_workers, --workers; {workers} now) or the batch size")


def prefetched(make: Callable[[Any], Any], jobs: Iterable, depth: int = 2) -> Iterator[tuple[Any, Any]]:
    """``(job, make(job))`` for each job, made up to ``depth`` ahead on a thread; an error there is raised here."""
    results: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def work() -> None:
        try:
            for job in jobs:
                if stop.is_set():
                    return
                results.put((job, make(job)))
            results.put(_END)
        except BaseException as e:  # noqa: BLE001 (handed to the consumer, which raises it)
            results.put(e)
        finally:
            if "jnius" in sys.modules:  # a thread that called Java leaves the JVM (else the JVM waits on it at exit)
                sys.modules["jnius"].detach()

    thread = threading.Thread(target=work, name="irglow-prefetch", daemon=True)
    thread.start()
    try:
        while (item := results.get()) is not _END:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while thread.is_alive():  # unblock a producer waiting on a full queue
            try:
                results.get(timeout=0.1)
            except queue.Empty:
                pass


def text_length(item) -> int:
    """An input's length in characters (a document's fields together): the key length bucketing sorts on."""
    if isinstance(item, Document):
        return sum(len(t) for t in item.fields.values() if t)
    if isinstance(item, Query):
        return len(item.text)
    return len(item) if isinstance(item, str) else 0


@torch.no_grad()
def encode(items: Sequence, encoder: BatchEncoder, batch_size: int = 64, desc: str = "encode",
           out_path: Path | None = None, resume: bool = False, workers: int = 0) -> np.ndarray:
    """L2-normalised vectors of ``items`` in their order; batched by length (:mod:`irglow.utils.batching`) so a
    batch pads to its own longest input.  ``out_path``: written there as a ``.npy`` file memory-mapped while it
    fills (a corpus's vectors never held in memory twice, nor whole), and returned as that map; beside it
    ``<name>.done.npy`` marks the batches on disk (written after their vectors are flushed), so that with
    ``resume`` an encoding killed halfway continues with the batches it had not finished.  A :class:`TwoStep`
    encoder's batches are prepared ahead: by ``workers`` processes where it has a recipe and ``items`` is a document
    store's sequence, else on a thread unless it says ``ahead=False``."""
    out: np.ndarray | None = None
    batches = length_batches([text_length(x) for x in items], batch_size)
    take = getattr(items, "take", None)  # a document store's sequence reads a batch in one call
    done_path = None if out_path is None else Path(out_path).with_suffix(".done.npy")
    done = np.zeros(len(batches), dtype=bool)
    if resume and out_path is not None and Path(out_path).is_file() and done_path.is_file():
        kept = np.load(done_path)
        mapped = np.load(out_path, mmap_mode="r+")
        if len(kept) == len(batches) and mapped.shape[0] == len(items):  # the same batches of the same items
            out, done = mapped, kept
    last_mark = time.perf_counter()
    prepare = getattr(encoder, "prepare", None)
    forward = getattr(encoder, "forward", encoder) if prepare is not None else encoder

    def read(job: tuple[int, list[int]]):
        batch = take(job[1]) if take is not None else [items[i] for i in job[1]]
        return prepare(batch) if prepare is not None else batch

    todo = [(k, b) for k, b in enumerate(batches) if not done[k]]
    bar = tqdm(total=sum(len(b) for _, b in todo), desc=desc, unit="doc" if take is not None else "item",
               disable=len(items) < 2 * batch_size)
    recipe = getattr(encoder, "recipe", None)
    if workers > 0 and recipe is not None and take is not None and len(todo) > 1:
        steps = in_workers(recipe, items, todo, workers)
    elif prepare is not None and getattr(encoder, "ahead", True) and len(todo) > 1:
        steps = prefetched(read, todo)
    else:
        steps = ((j, read(j)) for j in todo)
    try:
        for (k, idx), ready in steps:
            vec = torch.nn.functional.normalize(forward(ready).float(), dim=-1).cpu().numpy()
            bar.update(len(idx))
            if out is None:
                shape = (len(items), vec.shape[1])
                out = np.zeros(shape, dtype=np.float32) if out_path is None else vector_file(out_path, shape)
            out[idx] = vec
            done[k] = True
            if out_path is not None and time.perf_counter() - last_mark > MARK_SECONDS:
                _mark(out, done, done_path)
                last_mark = time.perf_counter()
    finally:
        bar.close()
        steps.close()  # a failed batch: the prefetching thread stops too
    if out is None:
        out = np.zeros((0, 0), dtype=np.float32)
        if out_path is not None:
            np.save(out_path, out)
    elif out_path is not None:
        _mark(out, done, done_path)
    return out


MARK_SECONDS = 30.0  # how often the finished batches are marked (a kill loses at most this much encoding)


def _mark(vectors: np.ndarray, done: np.ndarray, path: Path) -> None:
    """The vectors flushed to disk first, then the batches they complete marked (atomically)."""
    vectors.flush()
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, done)
    os.replace(tmp, path)


def vector_file(path: Path, shape: tuple[int, int]) -> np.ndarray:
    """A ``.npy`` file of float32 vectors, memory-mapped for writing, its blocks reserved on disk at once: a map over
    a sparse file would kill the process (SIGBUS) when a full disk refuses a page, halfway through an encoding;
    reserved, a full disk is an ``OSError`` (ENOSPC) before the first vector, which the command line names."""
    size = f"{shape[0]:,} vectors of {shape[1]} dimensions ({shape[0] * shape[1] * 4 / 2**20:,.0f} MB)"
    out = None
    try:
        out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=shape)
        fd = os.open(path, os.O_RDWR)
        try:
            os.posix_fallocate(fd, 0, os.path.getsize(path))
        finally:
            os.close(fd)
    except OSError as e:
        del out
        if e.errno == errno.EFBIG:  # a file-size limit (ulimit -f), not a full disk
            raise OSError(e.errno, f"a file-size limit stops {path} short of {size} (ulimit -f); nothing was kept",
                          str(path)) from None
        raise OSError(e.errno or errno.ENOSPC, f"no space left on the device holding {Path(path).parent.parent} "
                      f"for {size}; nothing was kept", str(path)) from None
    return out


def shard_bounds(n: int, rank: int, world: int) -> tuple[int, int]:
    """Contiguous shard ``rank`` of ``world`` over ``n`` items (sizes differ by at most one)."""
    if not 0 <= rank < world:
        raise ValueError(f"shard {rank} of {world} does not exist")
    return n * rank // world, n * (rank + 1) // world


def shard_dir(out_dir: str | Path, rank: int, world: int) -> Path:
    return Path(f"{out_dir}.shards") / f"{rank:03d}-of-{world:03d}"


def encode_corpus(docs: Sequence[Document], encoder: BatchEncoder, out_dir: str | Path,
                  batch_size: int = 64, rank: int = 0, world: int = 1, key: str = "", workers: int = 0
                  ) -> tuple[Path, float]:
    """Write ``embeddings.npy`` and ``ids.txt`` atomically; returns the folder and docs/second.

    With ``world`` > 1 this process encodes only its contiguous shard into ``shard_dir(out_dir, rank,
    world)`` (processes on several GPUs or nodes, one shard each); ``merge_shards`` then writes
    ``out_dir`` once, in corpus order.  A shard left by an interrupted run is reused only for the same
    documents *and* the same ``key`` (:func:`model_digest`: the model and its settings), and so is a finished
    encoding (rate NaN: nothing was encoded)."""
    lo, hi = shard_bounds(len(docs), rank, world)
    target = Path(out_dir) if world == 1 else shard_dir(out_dir, rank, world)
    part = docs[lo:hi]

    def part_ids() -> Iterable[str]:  # streamed: a store's sequence reads its ids, nothing kept
        return part.ids() if hasattr(part, "ids") else (d.doc_id for d in part)

    if (target / "ids.txt").is_file() and (target / "key.txt").is_file() and \
            (target / "key.txt").read_text(encoding="utf-8") == key and _same_lines(target / "ids.txt", part_ids()) \
            and _vectors_intact(target):
        return target, float("nan")
    t = time.perf_counter()
    # the vectors go straight to disk, into <target>.partial: a killed encoding resumes there with the batches it
    # had not finished, for the same key (the model and the corpus) and the same documents; the finished folder
    # replaces <target> in one rename, so a reader never sees half of it
    partial = Path(f"{target}.partial")
    resume = bool(key) and (partial / "key.txt").is_file() and \
        (partial / "key.txt").read_text(encoding="utf-8") == f"{key}\n{len(part)}"
    if not resume:
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        (partial / "key.txt").write_text(f"{key}\n{len(part)}", encoding="utf-8")
    try:
        vectors = encode(part, encoder, batch_size, desc="encode corpus" if world == 1 else
                         f"encode shard {rank}/{world}", out_path=partial / "embeddings.npy", resume=resume,
                         workers=workers)
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EFBIG):  # nothing of a full disk's (or a size limit's) attempt is kept
            shutil.rmtree(partial, ignore_errors=True)
        raise
    del vectors
    with open(partial / "ids.txt", "w", encoding="utf-8") as f:
        for i in part_ids():
            f.write(i + "\n")
    (partial / "key.txt").write_text(key, encoding="utf-8")
    (partial / "embeddings.done.npy").unlink(missing_ok=True)
    (partial / VECTOR_DIGESTS).write_text(json.dumps(table_digests(partial, ["embeddings.npy"])), encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    os.replace(partial, target)
    rate = len(part) / max(1e-9, time.perf_counter() - t)
    return target, rate


VECTOR_DIGESTS = "digests.json"  # a finished encoding's vectors as written: a shard is reused only while they are


def _vectors_intact(folder: Path) -> bool:
    """Whether a finished encoding's vectors are the ones written (a shard damaged at its own size is encoded again,
    not merged)."""
    try:
        recorded = json.loads((folder / VECTOR_DIGESTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return check_table_digests(folder, recorded) is None


def _same_lines(path: Path, items: Iterable[str]) -> bool:
    """Whether the file's lines are ``items``, compared as both are read."""
    import itertools

    with open(path, encoding="utf-8") as f:
        return all(a is not None and b is not None and a.rstrip("\n") == b
                   for a, b in itertools.zip_longest(f, items))


def merge_shards(out_dir: str | Path, world: int) -> Path:
    """Concatenate the ``world`` shards of ``out_dir`` (in rank order) into ``out_dir``; remove the shards."""
    parts = [shard_dir(out_dir, r, world) for r in range(world)]
    missing = [str(p) for p in parts if not (p / "embeddings.npy").is_file()]
    if missing:
        raise FileNotFoundError(f"cannot merge {out_dir}: shards not written yet: {missing}")
    loaded = [load_embeddings(p) for p in parts]
    filled = [v for v, _ in loaded if len(v)]  # an empty shard is (0, 0): its width is unknown
    with atomic_dir(Path(out_dir)) as tmp:  # shard by shard into one memory-mapped file: never all in memory
        if filled:
            merged = vector_file(tmp / "embeddings.npy", (sum(len(v) for v in filled), filled[0].shape[1]))
            at = 0
            for v in filled:
                merged[at:at + len(v)] = v
                at += len(v)
            merged.flush()
            del merged
        else:
            np.save(tmp / "embeddings.npy", np.zeros((0, 0), dtype=np.float32))
        (tmp / "ids.txt").write_text("".join(i + "\n" for _, ids in loaded for i in ids), encoding="utf-8")
        (tmp / "key.txt").write_text("", encoding="utf-8")
    shutil.rmtree(Path(f"{out_dir}.shards"), ignore_errors=True)
    return Path(out_dir)


def load_embeddings(folder: str | Path) -> tuple[np.ndarray, list[str]]:
    """The vectors memory-mapped (read-only: pages come from the file as faiss copies them in), and the ids."""
    folder = Path(folder)
    return (np.load(folder / "embeddings.npy", mmap_mode="r"),
            (folder / "ids.txt").read_text(encoding="utf-8").splitlines())


ADD_ROWS = 65_536  # vectors handed to faiss at once: its index holds the only full copy


FAISS_KINDS = declared.FAISS_KINDS  # declared with [glow] faiss


IVFPQ_MIN = 39 * 256  # faiss trains 256 codes per sub-vector on at least 39 points each


def check_faiss_size(kind: str, documents: int | None) -> None:
    """Refuse an index kind the corpus is too small for, before any training or encoding (``documents``: the corpus's
    count, ``None``: unknown yet)."""
    if kind == "ivfpq" and documents is not None and documents < IVFPQ_MIN:
        raise ValueError(f"ivfpq trains 256 codes per sub-vector on at least {IVFPQ_MIN:,} vectors; this corpus has "
                         f"{documents:,}: use flat or ivf (ivfpq is for corpora whose flat index would not fit)")


def faiss_index(vectors: np.ndarray, kind: str = "flat", hnsw_m: int = 32, ef_search: int = 256,
                nlist: int | None = None, nprobe: int = 128, pq_m: int | None = None):
    """An inner-product faiss index of ``vectors`` (a memory map is read ``ADD_ROWS`` rows at a time: the index holds
    the only full copy).  ``flat``: exact; ``hnsw``: a graph, ~1.3× flat's memory; ``ivf``: ``nlist`` clusters
    (default 4·√n), ``nprobe`` searched, flat's memory; ``ivfpq``: the same clusters with each vector
    product-quantised to ``pq_m`` bytes (default dimension / 4): 1/16 of flat's memory, for corpora whose flat
    index would not fit.  Recall against flat: ``bench/faiss_recall.py`` (BENCHMARKS.md)."""
    import faiss

    n, d = vectors.shape
    if kind == "flat":
        index = faiss.IndexFlatIP(d)
    elif kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efSearch = ef_search
    elif kind in ("ivf", "ivfpq"):
        lists = max(1, min(nlist or int(4 * np.sqrt(max(n, 1))), n // 39 or 1))  # faiss wants ≥ 39 points a list
        m = pq_m or max(1, d // 4)
        if kind == "ivfpq" and d % m:
            raise ValueError(f"ivfpq: {m} sub-quantizers must divide the dimension {d}")
        check_faiss_size(kind, n)
        # the factory's index owns its coarse quantizer (no Python object to outlive it)
        index = faiss.index_factory(d, f"IVF{lists},Flat" if kind == "ivf" else f"IVF{lists},PQ{m}",
                                    faiss.METRIC_INNER_PRODUCT)
        step = max(1, n // (256 * lists))  # trained on an even sample (a copy of the sample only)
        index.train(np.ascontiguousarray(vectors[::step], dtype=np.float32))
        index.nprobe = min(nprobe, lists)
    else:
        raise ValueError(f"faiss index kind must be one of {', '.join(FAISS_KINDS)}, not {kind!r}")
    for lo in range(0, n, ADD_ROWS):
        index.add(np.ascontiguousarray(vectors[lo:lo + ADD_ROWS], dtype=np.float32))
    return index


def sharded_search(vectors: np.ndarray, doc_ids: Sequence[str], queries: Sequence[Query], query_vectors: np.ndarray,
                   depth: int = DEPTH, tag: str = "dense", shard_rows: int = 1_000_000, kind: str = "flat") -> Run:
    """:func:`dense_search` where one index does not fit: an index of ``shard_rows`` vectors at a time (each built,
    searched with every query and freed before the next), the shards' top ``depth`` merged per query.  With flat
    shards the ranking is a flat index's (tested)."""
    k_all = min(depth, len(doc_ids))
    best_s = np.full((len(queries), k_all), -np.inf, dtype=np.float32)
    best_r = np.full((len(queries), k_all), -1, dtype=np.int64)
    for lo in range(0, len(doc_ids), shard_rows):
        shard = faiss_index(vectors[lo:lo + shard_rows], kind)
        scores, rows = _top(shard, query_vectors, min(k_all, len(doc_ids) - lo))
        del shard
        rows = np.where(rows >= 0, rows + lo, -1)
        scores = np.where(rows >= 0, scores, -np.inf)
        all_s, all_r = np.concatenate([best_s, scores], axis=1), np.concatenate([best_r, rows], axis=1)
        keep = np.argsort(-all_s, axis=1, kind="stable")[:, :k_all]
        best_s, best_r = np.take_along_axis(all_s, keep, 1), np.take_along_axis(all_r, keep, 1)
    return _run(doc_ids, queries, best_s, best_r, tag)


def dense_search(index, doc_ids: Sequence[str], queries: Sequence[Query], query_vectors: np.ndarray,
                 depth: int = DEPTH, tag: str = "dense") -> Run:
    scores, rows = _top(index, query_vectors, min(depth, len(doc_ids)))
    return _run(doc_ids, queries, scores, rows, tag)


def _top(index, query_vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each query's top ``k`` (scores, rows) from a faiss index."""
    if hasattr(index, "hnsw"):  # a graph search explores efSearch candidates: fewer than k cannot return k good ones
        index.hnsw.efSearch = max(index.hnsw.efSearch, k)
    return index.search(np.ascontiguousarray(query_vectors, dtype=np.float32), k)


def _run(doc_ids: Sequence[str], queries: Sequence[Query], scores: np.ndarray, rows: np.ndarray, tag: str) -> Run:
    """faiss's (scores, rows) as a run (a row of -1: fewer documents than asked for)."""
    return Run({q.query_id: [(doc_ids[j], float(v)) for j, v in zip(r, s) if j >= 0]
                for q, s, r in zip(queries, scores, rows)}, tag)


class MeanPoolEncoder:
    """A sentence-transformers style encoder (mean of last hidden states): all-MiniLM-L6-v2 zero-shot."""

    def __init__(self, model_path: str = "default", max_tokens: int = 256, device=None,
                 fields: Sequence[str] | None = None, precision: str = "fp32"):
        """``precision``: ``int8`` runs the encoder through ONNX Runtime with int8 weights on the CPU
        (:mod:`irglow.models.int8`; a GPU keeps fp32/autocast)."""
        self.model, self.tokenizer = load_encoder(model_path)
        self.device = device or pick_device()
        self.model.to(self.device).eval()
        self.max_tokens, self.fields = max_tokens, fields
        self.precision, self._int8 = "fp32", None
        self._set_precision(precision)

    def in_precision(self, precision: str) -> "MeanPoolEncoder":
        """The same encoder (its model, and an int8 graph already built, shared) in another precision."""
        import copy

        other = copy.copy(self)
        other._set_precision(precision)
        return other

    def _set_precision(self, precision: str) -> None:
        """The int8 graph is exported from a batch of this tokenizer's own inputs (a model without segment ids
        exports without them)."""
        from irglow.models.int8 import Int8Forward, MeanPooled, check_precision

        self.precision = check_precision(precision, self.device)
        if self.precision != "int8":
            self._int8 = None
        elif self._int8 is None:
            example = dict(self.tokenizer(["an example to export", "another"], padding=True, return_tensors="pt"))
            self._int8 = Int8Forward(MeanPooled(self.model), example)

    def _text(self, item) -> str:
        if isinstance(item, Document):
            return item.contents(self.fields)
        return item.text if isinstance(item, Query) else str(item)

    @torch.no_grad()
    def __call__(self, batch: Sequence) -> torch.Tensor:
        enc = self.tokenizer([self._text(x) for x in batch], padding=True, truncation=True,
                             max_length=self.max_tokens, return_tensors="pt").to(self.device)
        if self._int8 is not None:
            return self._int8(**enc)
        hidden = self.model(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
