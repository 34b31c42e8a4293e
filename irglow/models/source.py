"""Where pipeline stages train: the source collection and split (with content digests), and training
folders keyed on those digests.  Model stages import this module; nothing here imports a model stage,
so the stage registry (:mod:`irglow.stages`) and the stages form no import circle."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any
from irglow.runs.trec import Run
from irglow.utils.atomic import atomic_write_text
from irglow.utils.digest import local_paths_digest, qrels_digest, queries_digest, value_digest
from irglow.utils.distributed import is_main


@dataclass(frozen=True)
class TrainSource:
    """The collection, index, statistics and split that models are trained on."""

    collection: Any
    index: Any
    stats: Any
    split: str
    # other sources' held-out queries the neural trainers also choose their checkpoint on (irglow.models.validation)
    validation: tuple = ()

    def queries(self):
        return self.collection.queries(self.split)

    def qrels(self):
        return self.collection.qrels(self.split)

    def is_other_than(self, collection) -> bool:
        """Zero-shot: the models are evaluated on a collection they never saw."""
        return self.collection.name != collection.name

    @cached_property
    def digest(self) -> dict[str, str]:
        """What a model trained here depends on, by content: the corpus (its index, whose name carries the
        corpus digest and the analysis settings), and the split's queries (ids and text) and judgments.
        Computed once per source object (one pipeline run), never kept across runs."""
        return {"index": Path(self.index.path).name, "split": self.split,
                "queries": queries_digest(self.queries()), "qrels": qrels_digest(self.qrels())}


def keyed_train_dir(folder: Path, inputs: dict[str, Any]) -> Path:
    """``folder/<key>`` for a trainer whose checkpoints belong to ``inputs`` (settings and training data digests).

    Trainers resume from the checkpoint they find, so each set of inputs trains in its own folder: the same
    inputs resume (or find the training finished), other inputs never see its checkpoints, and a grid of
    settings (``irglow run --grid``) keeps every point's model side by side.  ``folder/current`` names the
    folder the latest run used (reports and plots read it)."""
    import json

    # a starting checkpoint named by its path is keyed on its content: replaced in place, it trains anew
    files = local_paths_digest(inputs)
    inputs = {**inputs, "files": files} if files else inputs
    key = value_digest(inputs)[:16]
    keyed = folder / key
    keyed.mkdir(parents=True, exist_ok=True)
    if is_main():  # under torchrun rank 0 writes
        atomic_write_text(keyed / "inputs.json", json.dumps({"key": key, "inputs": inputs}, indent=1, default=str))
        atomic_write_text(folder / "current", key + "\n")
    return keyed


def current_train_dir(folder: Path) -> Path | None:
    """The keyed training folder under ``folder`` that the latest run used (see :func:`keyed_train_dir`)."""
    marker = Path(folder) / "current"
    if not marker.is_file():
        return None
    keyed = Path(folder) / marker.read_text().strip()
    return keyed if keyed.is_dir() else None


def trained_models(root: Path) -> dict[str, Path]:
    """``{name: training folder}`` for every ``<name>-train`` under ``root`` that a run used last."""
    found = {}
    for folder in sorted(Path(root).glob("*-train")):
        keyed = current_train_dir(folder)
        if keyed is not None:
            found[folder.name.removesuffix("-train")] = keyed
    return found


def reused_model(root: str | Path, name: str) -> Path:
    """A trained model to reuse instead of training (``MODEL=``): ``root`` is a previous run's training
    root (``<name>-train/<current>/best``) or a folder of model folders (``<name>/best``)."""
    root = Path(root)
    keyed = current_train_dir(root / f"{name}-train")
    for candidate in ([keyed / "best"] if keyed else []) + [root / name / "best"]:
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"no trained {name!r} model in {root}: looked for {root}/{name}-train/<current>/best "
                            f"and {root}/{name}/best (model_dir must be a previous run's output or training folder)")


def held_out_run_on_training_corpus(train_root: str | Path, name: str, key: str, make) -> Any:
    """Zero-shot: ``name``'s run of the training collection's held-out queries, which the fusion tunes its
    weights on and carries over.  Making it costs a pass over the training corpus (an encoding, a re-ranking),
    the same for every collection of a zero-shot suite, so it is kept under the training folder by ``key`` (the
    model's weights and whatever else the run depends on): ``make(work)`` builds it in the scratch folder
    ``work``, removed once the run is written.  ``fusion.zero_shot = "rrf"`` never asks for it."""
    import shutil

    folder = Path(train_root) / "held-out-runs" / f"{name}-{key}"
    path = folder / "held-out.run"
    if path.is_file():
        return Run.read(path)
    work = folder / "work"
    run = make(work)
    run.write(path)
    shutil.rmtree(work, ignore_errors=True)  # the run is what is kept, not the vectors it was made from
    return run
