"""The pipeline's stage cache: a stage whose settings, collection, index and input runs are unchanged is not
run again; its runs are read back (what ``make run`` relies on to resume a killed job)."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any
from irglow.runs.keys import RunKey
from irglow.runs.trec import Run
from irglow.stage import Result, result_of
from irglow.utils.atomic import atomic_write_text
from irglow.utils.digest import file_digest, local_paths_digest, tree_digest, value_digest
from irglow.utils.plugins import module_code
from irglow.utils import distributed

log = logging.getLogger(__name__)


# raise when what a stage writes changes for the same inputs (2: lossless run scores; 3: stage notes, runs of the
# held-out training queries for [fusion]; 4: stages as objects, one fusion stage, per-system field weights; 5: runs
# keyed by tag and query set, each unit's typed result kept in its record; 6: a unit per node, keyed on content, not
# on its name)
STAGE_FORMAT = 6


# settings a unit's key leaves out, each with why (tests/integration/test_cache_keys.py changes every other setting of
# every stage and checks that some unit's key moves)
NOT_IN_KEY: dict[str, str] = {
    "rerank.variants": "a variant defines a model; listed in [rerank] models it is a unit whose key holds its settings",
    "fusion.optional": "which hybrids are made, not what a made hybrid's run holds",
    "twbert.runs": "which of TW-BERT's runs are made, not what a made run holds",
    "fusion.zero_shot": "read where the models trained on another collection: there it is in each fusion's key",
}


class StageCache:
    """Skip a stage whose inputs are unchanged: its settings, the collection and index, and the exact
    run files it was given.  A record ``<out>/.stages/<name>.json`` is written only after the stage's
    run files are; a killed run therefore continues at the first stage without a valid record, and
    a changed setting re-runs that stage and everything that consumed its runs.  The record keeps the unit's
    :class:`~irglow.stage.Result` too, so a reused unit reports what it did when it ran."""

    def __init__(self, out: Path, context: dict[str, Any]):
        self.out, self.context, self.report = out, context, {}
        self.digests: dict[RunKey, str] = {}  # run → digest of its file, as recorded or checked here
        self.results: dict[str, Result] = {}  # unit name → its result, this run's units only

    def entry(self, stage, unit, ctx) -> "Entry":
        """A unit's cache entry: its key (its settings, the context and the digests of the runs it reads) and, when
        a record under that key finds its files as it recorded them, those runs read back.  Under ``torchrun`` rank
        0 decides and every rank reads the files."""
        inputs = unit.inputs() if callable(unit.inputs) else unit.inputs
        if callable(unit.settings):  # known once the runs it reads exist
            unit = dataclasses.replace(unit, settings=unit.settings())
        read = sorted((RunKey.of(k) for k in inputs), key=RunKey.record)
        code = module_code(type(stage).__module__)  # another package's stage: its code (None: irglow's own)
        # content only: the unit's name is its record's path
        key = value_digest({"settings": unit_key(stage, unit, ctx), "context": self.context,
                            "inputs": [[*k.record(), self.digests.get(k) or file_digest(k.path(self.out))]
                                       for k in read], **({"code": code} if code else {})})
        entry = Entry(unit.name, key, self.out / ".stages" / f"{unit.name.replace(':', '-')}.json")
        with distributed.from_main() as shared:  # under torchrun rank 0 reads the record, and says its key
            if shared.here:
                shared.value = (key, self._recorded(entry.record, key))
        main_key, recorded = shared.value
        if main_key != key:  # another rank's settings, inputs or graph: it would do its share of another job
            raise SystemExit(f"rank {distributed.current().rank}: {unit.name} differs from rank 0's (its settings, the "
                             f"runs it reads or the experiment's rankers: key {key}, rank 0's {main_key}); start every "
                             f"rank with the same command, settings and files")
        if recorded is None:
            return entry
        log.info("%s: settings and inputs unchanged, its runs are reused (%s)", unit.name, entry.record)
        self.report[unit.name] = "reused"
        digests, result = recorded
        self.digests.update(digests)
        self._keep(unit.name, result)
        return dataclasses.replace(entry, reused={k: Run.read(k.path(self.out)) for k in digests})

    def record(self, entry: "Entry", produced: list[RunKey], result: dict | None) -> dict[RunKey, Run]:
        """Record what a unit made (rank 0 writes the record, once its run files are on disk); its runs read back."""
        with distributed.from_main() as shared:
            if shared.here:
                entry.record.parent.mkdir(parents=True, exist_ok=True)
                shared.value = {k: file_digest(k.path(self.out)) for k in produced}
                atomic_write_text(entry.record, json.dumps({"stage": entry.name, "key": entry.key, "result": result,
                                                            "runs": [[*k.record(), d] for k, d in shared.value.items()]},
                                                           indent=1))
        self.digests.update(shared.value)
        self.report[entry.name] = "ran"
        self._keep(entry.name, result)
        return {k: Run.read(k.path(self.out)) for k in produced}

    def sweep(self) -> list[Path]:
        """Remove the runs (and records) of units this run did not make: an earlier experiment's in the same folder
        would otherwise lie beside this run's manifest as if it had made them.  Only files a record lists, and
        only as it recorded them (a file changed since is left, and said); trained models are kept elsewhere and
        stay.  Rank 0's (it alone writes)."""
        removed: list[Path] = []
        for record in sorted((self.out / ".stages").glob("*.json")):
            try:
                saved = json.loads(record.read_text())
            except (OSError, ValueError):
                continue
            if saved.get("stage") in self.report:
                continue
            for r in saved.get("runs") or []:
                path = RunKey.from_record(r[:2]).path(self.out)
                if path.is_file() and file_digest(path) == r[2]:
                    path.unlink()
                    removed.append(path)
                elif path.is_file():
                    log.warning("%s: left in place; it changed since the unit %s wrote it", path, saved.get("stage"))
            record.unlink()
        if removed:
            log.warning("removed %d run(s) an earlier configuration made in %s that this one does not: %s", len(removed),
                        self.out, ", ".join(p.name for p in removed[:8]) + (" …" if len(removed) > 8 else ""))
        return removed

    def _keep(self, name: str, result: dict | None) -> None:
        typed = result_of(result) if result else None
        if typed is not None:
            self.results[name] = typed

    def _recorded(self, record: Path, key: str) -> tuple[dict[RunKey, str], dict | None] | None:
        """The record's ``({run: digest}, result)`` when its key matches and its files are as it recorded them."""
        if not record.is_file():
            return None
        saved = json.loads(record.read_text())
        if saved.get("key") != key or not isinstance(saved.get("runs"), list):
            return None
        digests = {RunKey.from_record(r[:2]): r[2] for r in saved["runs"]}
        if all(k.path(self.out).is_file() and file_digest(k.path(self.out)) == d for k, d in digests.items()):
            return digests, saved.get("result")
        return None


@dataclasses.dataclass(frozen=True)
class Entry:
    """A unit's place in the cache: its name, its key, its record file and, where the record is valid, its runs."""

    name: str
    key: str
    record: Path
    reused: dict[RunKey, Run] | None = None


def unit_key(stage, unit, ctx) -> dict[str, Any]:
    """What a unit's outputs depend on besides the runs it reads (:class:`StageCache` adds their digests, the
    index's and the test queries'): its settings; unless they say everything (a lexical run), also the lexical
    settings and field weights, the seed, the training data, the content of every model and file it loads from a
    path, which extra runs later stages want of it, and what else chose its checkpoints."""
    if unit.self_contained:
        return {"settings": unit.settings}
    models = unit.loads if unit.loads is not None else stage.reused_models(ctx.settings)
    loads = {f"model:{n}": tree_digest(p) for n, p in models.items()}
    loads.update(local_paths_digest(unit.settings, skip=("model_dir",)))
    return {"settings": unit.settings, "lexical": ctx.lexical.key(), "field_weights": ctx.field_weights,
            "seed": ctx.seed, "trained_on": ctx.source.digest, "loads": loads,
            "held_out_runs": [t for t in unit.writes if ctx.reads_held_out(t)], **stage.chosen_on_key(ctx)}
