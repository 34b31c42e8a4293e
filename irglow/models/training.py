"""The one training loop of every irglow model: TW-BERT, GLOW/BERT, monoBERT and NRM-F.

A model supplies a :class:`Task` — the batches of an epoch, the loss of a batch, its validation ranking — and
:class:`TrainingLoop` does the rest, the same way for all of them:

* mixed precision (autocast and a gradient scaler, on CUDA only), gradient accumulation (an epoch's last,
  incomplete accumulation group is dropped, so no gradient leaks into the next epoch), the gradient norm clipped
  to 1, the learning-rate schedule stepped once per optimizer step;
* the validation schedule: the starting model first (what training has to beat), every ``eval_every`` optimizer
  steps, at every epoch end and always after the last step — never twice at one step;
* early stopping after ``patience`` evaluations without a gain, and the best evaluation's model kept in
  ``<out>/best`` (a task may say that a model is not to be kept yet: GLOW while its weighting ramps up);
* a checkpoint per epoch (model, optimizer, scheduler, the task's sampler, the loss scale and every RNG, CUDA's
  included), which a killed training resumes from to train exactly what the uninterrupted one trains, refused
  when it belongs to other data or settings (:func:`~irglow.models.checkpoints.resume_trainer`);
* ``<out>/training.json``: the settings, the validation curve, the kept step, the held-out query ids;
* with ``average_last`` N: ``<out>/average``, the mean of the weights at the last N evaluations (the best and what
  followed it, or the run's last N), so the model kept does not rest on one noisy validation score (checkpoint
  averaging; the snapshots live on disk, so a resumed training averages what an uninterrupted one does);
* data parallelism under ``torchrun``: every process walks the same batches, draws what each batch needs
  (:meth:`Task.draw`, so every random choice is the one a single process makes), computes the loss of its own share
  of each optimizer step's ``grad_accum`` batches and the gradients are summed over the processes before the step.
  N processes therefore take the optimizer steps one process takes with the same settings (the same batches, the
  same draws, the same steps) — up to dropout, whose masks come from each process's own generator.  A
  configuration's batch is the batch one step sees whatever the world size: ``grad_accum`` a multiple of N keeps
  every process busy (``grad_accum`` 1 on 2 processes: rank 1 waits at each step, and the log says so).  Rank 0 validates, keeps the model and
  writes the checkpoint; its early-stopping count reaches every rank.

Why one loop: three copies (210, 132 and 124 lines) had drifted apart — one validated after the last step and
one did not, one dropped a rule the others kept — and a fix reached one model at a time.
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any, Iterator

import torch
from irglow.utils.progress import tqdm

from irglow.data.records import Document, Qrel, Query
from irglow.models.checkpoints import (clipped_step, keep_sampler, restore_sampler, resume_trainer,
                                      save_trainer_checkpoint, split_validation)
from irglow.utils.atomic import atomic_write_text
from irglow.utils.distributed import all_gather, barrier, broadcast, current, solo

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoopSettings:
    """What the loop reads of a trainer's settings (every trainer config has these fields)."""

    epochs: int
    patience: int  # evaluations without a gain before training stops
    eval_every: int = 0  # also validate every n optimizer steps (0: epoch ends only)
    max_steps: int | None = None
    grad_accum: int = 1
    amp: bool = True
    average_last: int = 0  # >0: also write <out>/average, the mean of the weights at the last N evaluations

    @classmethod
    def of(cls, config: Any) -> "LoopSettings":
        return cls(**{k: getattr(config, k) for k in cls.__dataclass_fields__ if hasattr(config, k)})


class Task:
    """What one model brings to :class:`TrainingLoop`.  ``state`` is the loop's state, which the checkpoint
    carries: a task keeps there whatever must survive a resumption."""

    name = "model"
    warm_up_epochs = 0  # epochs before the first evaluation, not validated (TW-BERT's stage 1)
    sampler: random.Random | None = None  # the task's own draws (negatives, positives): checkpointed
    state: dict

    def __init__(self, model: torch.nn.Module, optimizer, scheduler=None, config: Any = None):
        self.model, self.optimizer, self.scheduler, self.config = model, optimizer, scheduler, config

    def epoch_batches(self, epoch: int, warming: bool = False) -> list:
        """The batches of one epoch, in order (deterministic in ``epoch``, so a resumed epoch is the same)."""
        raise NotImplementedError

    def draw(self, batch, warming: bool = False) -> Any:
        """What the loss of ``batch`` needs besides the model: every random choice (negatives, positives, noise),
        made here in batch order on every process, so that N processes draw what one does.  By default the batch."""
        return batch

    def loss(self, drawn, autocast, warming: bool = False) -> torch.Tensor:
        """The loss of one batch as :meth:`draw` made it; ``autocast()`` is the loop's mixed-precision context,
        for the forward pass."""
        raise NotImplementedError

    def validate(self) -> tuple[float, dict[str, Any]]:
        """(validation nDCG@10 the checkpoint is chosen on, anything else to record beside it)."""
        raise NotImplementedError

    def parts(self) -> dict[str, Any]:
        """What the checkpoint saves and a resumption loads (anything with ``state_dict``)."""
        parts = {"model": self.model, "optimizer": self.optimizer}
        if self.scheduler is not None:
            parts["scheduler"] = self.scheduler
        return parts

    def parameters(self) -> list:
        """The parameters whose gradient norm is clipped."""
        return list(self.model.parameters())

    def train_mode(self) -> None:
        self.model.train()

    def at_step(self, step: int, start: bool = False) -> None:
        """Called before every batch and every evaluation (``start``: the starting model's)."""

    def keepable(self) -> bool:
        """Whether the model as it is now may be kept (and counts for early stopping)."""
        return True

    def save(self, folder: Path) -> None:
        self.model.save(folder)

    def finish(self) -> None:
        """After the last epoch, before ``training.json`` is written (GLOW: mixing with its checkpoint)."""

    def report(self) -> dict[str, Any]:
        """What ``training.json`` records besides the settings and the state (queries used, held-out ids …)."""
        return {}


@dataclass
class Examples:
    """The judged training queries a sampling trainer (GLOW/BERT, monoBERT, NRM-F) draws from: each query's
    judged-relevant documents with their grades, every judged document (never a negative), the split into
    training and held-out queries, and the first stage's candidates as hard negatives."""

    docs: dict[str, Document]
    queries: dict[str, Query]
    positives: dict[str, list[tuple[str, int]]]
    judged: dict[str, set[str]]
    train_ids: list[str]
    val_ids: list[str]
    hard: dict[str, list[str]]

    @classmethod
    def split(cls, docs: dict[str, Document], queries: list[Query], qrels: list[Qrel], val_fraction: float,
              trainer: str, seed: int) -> "Examples":
        """Queries with a judged-relevant document in ``docs``, split by
        :func:`~irglow.models.checkpoints.split_validation` (training order: a shuffle of ``seed``)."""
        qmap = {q.query_id: q for q in queries}
        positives: dict[str, list[tuple[str, int]]] = {}
        judged: dict[str, set[str]] = {}
        for r in qrels:
            judged.setdefault(r.query_id, set()).add(r.doc_id)
            if r.relevance > 0 and r.query_id in qmap and r.doc_id in docs:
                positives.setdefault(r.query_id, []).append((r.doc_id, int(r.relevance)))
        ids = sorted(positives)
        random.Random(seed).shuffle(ids)
        val_ids, train_ids = split_validation(ids, val_fraction, trainer, seed)
        return cls(docs, qmap, positives, judged, train_ids, val_ids, {})

    @property
    def ids(self) -> list[str]:
        return self.val_ids + self.train_ids

    def mine(self, run, depth: int) -> None:
        """Hard negatives: each training query's top ``depth`` in ``run`` less its judged documents."""
        self.hard = {q: [d for d, _ in run.ranking.get(q, [])[:depth] if d not in self.judged.get(q, ())
                         and d in self.docs] for q in self.train_ids}
        self._doc_ids = list(self.docs)

    def negatives(self, query_id: str, n: int, rng: random.Random) -> list[str]:
        return pick_negatives(self.hard.get(query_id, []), self.judged.get(query_id, set()), self._doc_ids, n, rng)

    def held_out_qrels(self, qrels: list[Qrel]) -> list[Qrel]:
        held = set(self.val_ids)
        return [r for r in qrels if r.query_id in held]


def pick_negatives(hard: list[str], judged: set[str], doc_ids: list[str], n: int, rng: random.Random) -> list[str]:
    """``n`` hard negatives (with replacement when the list is short); when a query has none, random documents
    that are not judged for it (never a positive)."""
    if hard:
        return [rng.choice(hard) for _ in range(n)]
    out = []
    for _ in range(100 * n):
        d = rng.choice(doc_ids)
        if d not in judged:
            out.append(d)
            if len(out) == n:
                return out
    raise ValueError("no document left to serve as a negative: every document is judged for this query")


def linear_schedule(step: int, warmup: int, total: int) -> float:
    """Learning-rate factor: linear warm-up over ``warmup`` steps, then linear decay to 0 at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))


def warmup_then_decay(optimizer, warmup_ratio: float, total_steps: int):
    """The schedule of the sampling trainers: :func:`linear_schedule` over ``total_steps``."""
    warmup = max(1, int(warmup_ratio * total_steps))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: linear_schedule(s, warmup, total_steps))


class GeneratorState:
    """A ``torch.Generator`` as a checkpoint part (a task's loss that draws from one resumes its draws)."""

    def __init__(self, generator: torch.Generator):
        self.generator = generator

    def state_dict(self) -> dict:
        return {"state": self.generator.get_state()}

    def load_state_dict(self, saved: dict) -> None:
        self.generator.set_state(saved["state"])


def _upgraded(state: dict) -> dict:
    """A checkpoint written before the loop was shared: TW-BERT's key names, no record of the last evaluation."""
    if "bad_epochs" in state:
        state["bad"] = state.pop("bad_epochs")
    if "best_at" in state:
        at = state.pop("best_at")
        state["best_step"] = at.get("step") if isinstance(at, dict) else at
    if "stage" in state:
        state["warming"] = state.pop("stage") == 1
    if "last_eval_step" not in state:
        state["last_eval_step"] = state["history"][-1]["step"] if state.get("history") else None
    state.setdefault("train_seconds", 0.0)
    return state


class TrainingLoop:
    """Trains a :class:`Task` into ``out`` (``out/best``, ``out/checkpoint/trainer.pt``, ``out/training.json``).
    Under ``torchrun`` every rank runs the loop on its share of each optimizer step's batches (the module's
    docstring); rank 0 validates, keeps the model and writes the checkpoint, and its early-stopping count goes to
    every rank (which must leave the loop at the same step, or the gradient sum hangs)."""

    def __init__(self, task: Task, settings: LoopSettings, out: str | Path, device):
        self.task, self.settings, self.out, self.device = task, settings, Path(out), device
        w = current()
        self.rank, self.world = w.rank, w.size
        if self.world > 1 and settings.grad_accum % self.world and self.rank == 0:
            log.warning("%s: grad_accum = %d batches per optimizer step do not split evenly over %d processes: some "
                        "wait at each step (the model is the one a single process trains); a multiple of %d keeps "
                        "every process busy", task.name, settings.grad_accum, self.world, self.world)
        self.use_amp = settings.amp and device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)

    def autocast(self):
        return torch.autocast(self.device.type, enabled=self.use_amp)

    @property
    def checkpoint(self) -> Path:
        return self.out / "checkpoint" / "trainer.pt"

    def run(self, resume: bool = True, inputs: dict | None = None, state: dict | None = None) -> dict:
        """Train (or go on training) and return the final state.  ``inputs``
        (:func:`~irglow.models.checkpoints.training_inputs`): what the checkpoint records and a resumption must
        match; ``state``: the task's own starting entries."""
        task, s = self.task, self.settings
        self.state = {"epoch": 0, "step": 0, "best": -1.0, "best_step": None, "bad": 0, "history": [],
                      "last_eval_step": None, "train_seconds": 0.0, "warming": task.warm_up_epochs > 0,
                      "inputs": inputs, **(state or {})}
        parts = dict(task.parts())
        if resume and self.checkpoint.is_file():
            self.state = _upgraded(resume_trainer(self.checkpoint, self.device, inputs=inputs, **parts))
            if self._finished():  # models are shared by every output folder: found trained, not resumed
                log.info("%s: found trained in %s (step %d); nothing to train", task.name, self.out, self.state["step"])
            else:
                log.warning("resuming %s training from %s (epoch %d, step %d)", task.name, self.checkpoint,
                            self.state["epoch"], self.state["step"])
        task.state = self.state
        if self.use_amp and self.state.get("scaler"):  # the loss scale the interrupted run had reached
            self.scaler.load_state_dict(self.state["scaler"])
        if task.sampler is not None:
            restore_sampler(self.state, task.sampler)  # resumed: where the uninterrupted run's sampler was
        self._t0 = time.perf_counter()
        while self.state["warming"] and self.state["epoch"] < task.warm_up_epochs:
            self._epoch(warming=True)
        if self.state["warming"]:
            self.state.update(warming=False, epoch=0)
        if self.state["last_eval_step"] is None:
            task.at_step(0, start=True)
            self._evaluate(None)
        while not self._finished():
            self._epoch(warming=False)
        self._clock()
        if self.rank == 0:
            if s.average_last:
                self._write_average()
            with solo():
                task.finish()
            config = asdict(task.config) if is_dataclass(task.config) else task.config
            atomic_write_text(self.out / "training.json", json.dumps(
                {"config": config, "state": self.state, **task.report()}, indent=2, default=_json_default))
        barrier()  # under torchrun the others load what rank 0 kept only once it is written
        return self.state

    def _finished(self) -> bool:
        """Whether the training has ended: every epoch, every step, or its patience spent."""
        s = self.settings
        return not self.state["warming"] and not (
            self.state["epoch"] < s.epochs and not self._done_stepping() and self.state["bad"] < s.patience)

    def _done_stepping(self) -> bool:
        return bool(self.settings.max_steps) and self.state["step"] >= self.settings.max_steps

    def _clock(self) -> None:
        # seconds travel in the checkpoint: a finished training found again reports its own time, not ~0
        now = time.perf_counter()
        self.state["train_seconds"] += now - self._t0
        self._t0 = now
        if self.device.type == "cuda":  # what a larger model or batch has to fit beside (bench/gpu.py reads it)
            self.state["peak_gpu_mb"] = max(self.state.get("peak_gpu_mb", 0.0),
                                            torch.cuda.max_memory_allocated(self.device) / 2 ** 20)

    def _groups(self, batches: list) -> Iterator[tuple[list, bool]]:
        """Whole optimizer steps only (``grad_accum`` batches, over every process), each with whether it ends the
        epoch."""
        k = self.settings.grad_accum
        n = len(batches) - len(batches) % k
        for i in range(0, n, k):
            yield batches[i:i + k], i + k >= n

    def _epoch(self, warming: bool) -> None:
        task, s, state = self.task, self.settings, self.state
        task.train_mode()
        batches = task.epoch_batches(state["epoch"], warming)
        label = f"{task.name} {'warm-up ' if warming else ''}epoch {state['epoch'] + 1}"
        step_size = s.grad_accum  # the loss of each batch is divided by the step's batch count, on every rank
        whole = len(batches) - len(batches) % step_size
        bar = tqdm(total=sum(1 for i in range(whole) if i % step_size % self.world == self.rank), desc=label,
                   unit="batch", disable=self.rank != 0)
        since: list[float] = []  # this rank's losses since the last evaluation
        task.optimizer.zero_grad(set_to_none=True)
        for group, last in self._groups(batches):
            for i, batch in enumerate(group):
                drawn = task.draw(batch, warming)  # every rank draws for every batch: one process's draws
                if i % self.world != self.rank:
                    continue
                if not warming:
                    task.at_step(state["step"])
                loss = task.loss(drawn, self.autocast, warming)
                self.scaler.scale(loss / step_size).backward()
                since.append(float(loss.detach()))
                bar.update(1)
                bar.set_postfix(loss=f"{sum(since) / len(since):.4f}")
            if self.world > 1:
                sum_gradients(task.parameters())
            clipped_step(task.optimizer, self.scaler, task.parameters())
            task.optimizer.zero_grad(set_to_none=True)
            if warming:
                continue
            if task.scheduler is not None:
                task.scheduler.step()
            state["step"] += 1
            if self._done_stepping():
                break
            if s.eval_every and state["step"] % s.eval_every == 0 and not last:
                self._evaluate(since)
                since = []
                if state["bad"] >= s.patience:
                    break
        bar.close()
        state["epoch"] += 1
        if not warming and state["last_eval_step"] != state["step"]:
            task.at_step(state["step"])
            self._evaluate(since)
        self._clock()
        if self.rank == 0:
            if task.sampler is not None:
                keep_sampler(state, task.sampler)
            if self.use_amp:
                state["scaler"] = self.scaler.state_dict()
            save_trainer_checkpoint(self.out / "checkpoint", state, **task.parts())

    @property
    def _snapshots(self) -> Path:
        return self.out / "checkpoint" / "averaged"

    def _snapshot(self) -> None:
        """The model as evaluated now, kept on disk among the last ``average_last`` evaluations."""
        folder = self._snapshots
        folder.mkdir(parents=True, exist_ok=True)
        step = self.state["step"]
        torch.save({k: v.detach().cpu() for k, v in self.task.model.state_dict().items()},
                   folder / f"step-{step:09d}.pt.tmp")
        (folder / f"step-{step:09d}.pt.tmp").replace(folder / f"step-{step:09d}.pt")
        for old in sorted(folder.glob("step-*.pt"))[: -self.settings.average_last]:
            old.unlink()

    def _write_average(self) -> None:
        """``<out>/average``: the task's model with the mean of the kept snapshots' weights (the model itself is
        left as it was); the steps averaged go into the state."""
        files = sorted(self._snapshots.glob("step-*.pt"))[-self.settings.average_last:]
        if not files:
            return
        model = self.task.model
        current = {k: v.detach().clone() for k, v in model.state_dict().items()}
        model.load_state_dict(average_weights([torch.load(f, map_location="cpu") for f in files]))
        self.task.save(self.out / "average")
        model.load_state_dict(current)
        self.state["averaged_steps"] = [int(f.name[5:14]) for f in files]

    def _evaluate(self, since: list[float] | None) -> None:
        """Validate (rank 0) and count towards early stopping; ``since``: this rank's losses since the last
        evaluation (``None``: the starting model's)."""
        task, state = self.task, self.state
        if since is not None:  # the mean over every rank's batches, as one process logs it
            since = [x for part in all_gather(since) for x in part]
        loss = None if since is None else _mean(since)
        if self.rank == 0:
            with solo():  # rank 0 alone: nothing in validation waits for the others
                score, extra = task.validate()
            task.train_mode()
            state["history"].append({"epoch": state["epoch"], "step": state["step"], "loss": loss,
                                     "val_ndcg@10": score, **extra})
            by_source = extra.get("val_by_source", {})
            log.info("%s step %d (epoch %d): loss %s, validation nDCG@10 %.4f%s", task.name, state["step"],
                     state["epoch"], "-" if loss is None else f"{loss:.4f}", score,
                     "".join(f", {k} {v:.4f}" for k, v in by_source.items()))
            if task.keepable() and self.settings.average_last:
                self._snapshot()
            if task.keepable():
                # no validation queries (NaN): the latest model is kept, never the untrained start
                if score > state["best"] + 1e-5 or math.isnan(score):
                    state["best"], state["best_step"], state["bad"] = score, state["step"], 0
                    task.save(self.out / "best")
                else:
                    state["bad"] += 1
        state["last_eval_step"] = state["step"]
        state["bad"] = broadcast(state["bad"])  # rank 0's count on every rank (an object: NCCL takes no CPU tensor)


def average_weights(snapshots: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The element-wise mean of state dicts (floating tensors; any other entry, such as integer position ids, as
    the last snapshot has it)."""
    last = snapshots[-1]
    return {k: (torch.stack([s[k].double() for s in snapshots]).mean(0).to(v.dtype) if v.is_floating_point() else v)
            for k, v in last.items()}


def sum_gradients(parameters: list) -> None:
    """Every rank's gradients summed into each rank's (the losses are already scaled by the step's batch count):
    one all-reduce over one flat buffer, a missing gradient counting as zero — the reduction
    DistributedDataParallel makes, done here once per optimizer step for any task, whatever its forward calls."""
    import torch.distributed as dist

    params = [p for p in parameters if p.requires_grad]
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    if not params:
        return
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    dist.all_reduce(flat)
    offset = 0
    for p in params:
        n = p.grad.numel()
        p.grad.copy_(flat[offset:offset + n].view_as(p.grad))
        offset += n


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _json_default(o):
    if isinstance(o, float) and math.isnan(o):
        return None
    return str(o)
