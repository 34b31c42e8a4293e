"""Re-rank the top ``depth`` documents of any run with a trained torch re-ranker (monoBERT or NRM-F).

Documents below ``depth`` — and any the collection does not hold — keep their original order below
the re-ranked block, so a re-ranked run is still a complete run of the same length.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Mapping, Sequence

import torch
from irglow.utils.progress import tqdm

from irglow.data.records import Document, Query
from irglow.dense.encode import text_length
from irglow.runs.trec import Run, trec_order
from irglow.utils.batching import length_batches
from irglow.models.checkpoints import pick_device
from irglow.utils.digest import model_digest, records_digest

log = logging.getLogger(__name__)


def rerank_ranking(ranking: list[tuple[str, float]], scored: Mapping[str, float], depth: int) -> list[tuple[str, float]]:
    """A query's new list: the top ``depth`` ids that have a model score, by that score; then every other
    document in its original order, with scores strictly below the re-ranked block."""
    head = trec_order([(d, scored[d]) for d, _ in ranking[:depth] if d in scored])
    tail = [d for d, _ in ranking[:depth] if d not in scored] + [d for d, _ in ranking[depth:]]
    floor = min((s for _, s in head), default=0.0)
    return head + [(d, floor - 1.0 - i) for i, d in enumerate(tail)]


@torch.no_grad()
def rerank(model, run: Run, queries: Sequence[Query], docs: Mapping[str, Document], depth: int = 100,
           batch_size: int = 64, tag: str | None = None, device=None, desc: str = "re-rank",
           precision: str = "fp32", checkpoint: Path | None = None) -> Run:
    """Score each query's top ``depth`` (query, document) pairs in batches, with progress; AMP on CUDA.
    ``precision="int8"``: monoBERT through ONNX Runtime with int8 weights on the CPU (:mod:`irglow.models.int8`).
    ``checkpoint``: a file the finished batches' scores are appended to (every :data:`MARK_SECONDS`), so that a
    re-ranking killed halfway resumes with the batches it had not scored — the same batches, so the same scores
    and run file as an uninterrupted re-ranking (tested); it is removed when the run is complete."""
    from irglow.models.int8 import check_precision, int8_scorer

    device = device or pick_device()
    model.to(device).eval()
    score = int8_scorer(model) if check_precision(precision, device) == "int8" else model.score
    text = {q.query_id: q.text for q in queries}
    missing_q = [q for q in run.ranking if q not in text]
    if missing_q:
        log.warning("%d run queries have no query text and are left as they are (first: %s)", len(missing_q),
                    missing_q[0])
    pairs, absent = [], 0
    for qid, ranking in run.ranking.items():
        if qid not in text:
            continue
        for d, _ in ranking[:depth]:
            if d in docs:
                pairs.append((qid, d))
            else:
                absent += 1
    if absent:
        log.warning("%d run documents are not in the collection; they keep their order below the re-ranked ones",
                    absent)
    scores: dict[str, dict[str, float]] = {}
    # pairs of similar length batched together (a batch pads to its own longest pair); scores go back by key
    lengths = [len(text[q]) + text_length(docs[d]) for q, d in pairs]
    batches = length_batches(lengths, batch_size)
    done = _resumed(checkpoint, _checkpoint_key(model, precision, batch_size, pairs, text), scores) \
        if checkpoint is not None else set()
    last_mark, pending = time.perf_counter(), []
    with tqdm(total=len(pairs), desc=desc, unit="pair") as bar:
        for k, idx in enumerate(batches):
            chunk = [pairs[i] for i in idx]
            if k in done:
                bar.update(len(chunk))
                continue
            with torch.autocast(device.type, enabled=device.type == "cuda"):
                s = score([text[q] for q, _ in chunk], [docs[d] for _, d in chunk]).float().cpu().tolist()
            for (q, d), v in zip(chunk, s):
                scores.setdefault(q, {})[d] = v
            pending.append({"b": k, "s": [[q, d, v] for (q, d), v in zip(chunk, s)]})
            if checkpoint is not None and time.perf_counter() - last_mark > MARK_SECONDS:
                _append(checkpoint, pending)
                pending, last_mark = [], time.perf_counter()
            bar.update(len(chunk))
    out = {qid: rerank_ranking(r, scores.get(qid, {}), depth) if qid in text else list(r)
           for qid, r in run.ranking.items()}
    if checkpoint is not None:
        Path(checkpoint).unlink(missing_ok=True)
    return Run(out, tag or run.tag)


MARK_SECONDS = 30.0  # how often finished batches are written to the checkpoint (a kill loses at most this much)


def _checkpoint_key(model, precision: str, batch_size: int, pairs: list, text: dict) -> str:
    """What the scores depend on: the model's weights, the precision, the batches (their pairs and size)."""
    return model_digest(model, precision=precision, batch_size=batch_size,
                        pairs=records_digest((q, text[q], d) for q, d in pairs))


def _resumed(path: Path, key: str, scores: dict) -> set[int]:
    """The batches a checkpoint holds for this key (their scores put into ``scores``); another key starts anew."""
    path = Path(path)
    done: set[int] = set()
    if path.is_file():
        lines = path.read_text(encoding="utf-8").splitlines()
        if lines and json.loads(lines[0]).get("key") == key:
            for line in lines[1:]:
                try:
                    record = json.loads(line)
                except ValueError:  # the last line of a kill mid-write
                    break
                done.add(record["b"])
                for q, d, v in record["s"]:
                    scores.setdefault(q, {})[d] = v
            if done:
                log.info("re-ranking resumes: %d batches scored before were read from %s", len(done), path)
            return done
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"key": key}) + "\n", encoding="utf-8")
    return done


def _append(path: Path, records: list[dict]) -> None:
    with open(path, "a", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
        f.flush()
        os.fsync(f.fileno())
