"""Where pipeline stages train: the source collection and split (with content digests), and training
folders keyed on those digests.  Model stages import this module; nothing here imports a model stage,
so the stage registry (:mod:`irglow.stages`) and the stages form no import circle."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class TrainSource:
    """The collection, index, statistics and split that models are trained on."""

    collection: Any
    index: Any
    stats: Any
    split: str

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
        from irglow.utils.digest import qrels_digest, queries_digest

        return {"index": Path(self.index.path).name, "split": self.split,
                "queries": queries_digest(self.queries()), "qrels": qrels_digest(self.qrels())}


def keyed_train_dir(folder: Path, inputs: dict[str, Any]) -> Path:
    """``folder`` for a trainer whose checkpoints belong to ``inputs`` (settings and training data digests).

    Trainers resume from the checkpoint they find; one left by training on other data or settings would
    bring back the old model.  Such a folder is cleared first (and said so); the same inputs resume."""
    import json
    import logging
    import shutil

    from irglow.utils.atomic import atomic_write_text
    from irglow.utils.digest import value_digest

    key = value_digest(inputs)
    record = folder / "inputs.json"
    if folder.exists():
        previous = json.loads(record.read_text()).get("key") if record.is_file() else None
        if previous != key:
            logging.getLogger(__name__).warning(
                "%s was trained on other data or settings%s; training starts afresh", folder,
                "" if previous else " (no record of its inputs)")
            shutil.rmtree(folder)
    atomic_write_text(record, json.dumps({"key": key, "inputs": inputs}, indent=1, default=str))
    return folder


def train_root(config: dict[str, Any], out: Path) -> Path:
    """Where a stage trains its models: shared by every test split of one pipeline run."""
    return Path(config.get("output", {}).get("train_dir") or out)
