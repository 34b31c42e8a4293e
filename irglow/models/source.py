"""Where pipeline stages train: the source collection and split (with content digests), and training
folders keyed on those digests.  Model stages import this module; nothing here imports a model stage,
so the stage registry (:mod:`irglow.stages`) and the stages form no import circle."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any
from irglow.utils.plugins import irglow_version
from irglow.runs.trec import Run
from irglow.utils.atomic import atomic_write_text
from irglow.utils.digest import local_paths_digest, qrels_digest, queries_digest, value_digest
from irglow.utils.distributed import is_main
from irglow.models.kept import mark_used


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
    settings (``irglow run --grid``) keeps every point's model side by side.  ``folder`` lies under
    :func:`~irglow.utils.paths.models_dir`, shared by every output folder: an experiment run into a second folder
    finds the first one's model.  Which folder a run used is its manifest's (each unit's result), not a marker here,
    which another output folder's run would move."""
    import json

    # a starting checkpoint named by its path is keyed on its content: replaced in place, it trains anew; the folder is
    # shared by every output folder and kept across upgrades, so the code that trains (irglow's version) is keyed too
    files = local_paths_digest(inputs)
    inputs = {**inputs, "files": files} if files else inputs
    inputs = {**inputs, "irglow": irglow_version()}
    key = value_digest(inputs)[:16]
    keyed = folder / key
    keyed.mkdir(parents=True, exist_ok=True)
    if is_main():  # under torchrun rank 0 writes
        if (keyed / "inputs.json").is_file():
            mark_used(keyed / "inputs.json")  # its last use (irglow cache prune --older-than)
        else:
            atomic_write_text(keyed / "inputs.json", json.dumps({"key": key, "inputs": inputs}, indent=1, default=str))
    return keyed


def used_models(results) -> dict[str, Path]:
    """``{model: its training folder}`` for the models a run folder's units used: their results (typed, or as the
    manifest's ``results`` records them), whichever output folder trained them."""
    found: dict[str, Path] = {}
    for result in results.values():
        record = result.to_json() if hasattr(result, "to_json") else result
        if record.get("kind") == "models":
            found.update({name: Path(folder) for name, folder in record.get("models", {}).items()})
        elif record.get("kind") == "rerank":
            found[record["run"]] = Path(record["model"])
    return {name: folder.parent if folder.name == "best" else folder for name, folder in found.items()}


def reused_model(root: str | Path, name: str) -> Path:
    """A trained model to reuse instead of training (``MODEL=``, ``model_dir``): ``root`` is a previous run's output
    folder (its manifest names the model it used) or a folder of model folders (``<name>/best``)."""
    import json

    root = Path(root)
    manifest = root / "manifest.json"
    used = used_models(json.loads(manifest.read_text()).get("results", {})).get(name) if manifest.is_file() else None
    for candidate in ([used / "best"] if used else []) + [root / name / "best"]:
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"no trained {name!r} model in {root}: looked for the model its manifest.json names and "
                            f"{root}/{name}/best (model_dir must be a previous run's output folder or hold <name>/best)")


def held_out_run_on_training_corpus(train_root: str | Path, name: str, key: str, make) -> Any:
    """Zero-shot: ``name``'s run of the training collection's held-out queries, which the fusion tunes its
    weights on and carries over.  Making it costs a pass over the training corpus (an encoding, a re-ranking),
    the same for every collection of a zero-shot suite, so it is kept under the training folder by ``key`` (the
    model's weights and whatever else the run depends on): ``make(work)`` builds it in the scratch folder
    ``work``, removed once the run is written.  ``fusion.zero_shot = "rrf"`` never asks for it."""
    import shutil

    from irglow.utils.atomic import output_lock

    folder = Path(train_root) / "held-out-runs" / f"{name}-{key}"
    path = folder / "held-out.run"
    with output_lock(folder):  # shared by every output folder: one process makes it, another then reads it
        if path.is_file():
            mark_used(folder)
            return Run.read(path)
        work = folder / "work"
        run = make(work)
        run.write(path)
        shutil.rmtree(work, ignore_errors=True)  # the run is what is kept, not the vectors it was made from
        return run
